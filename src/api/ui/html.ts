import type { DataState, NamespaceData } from '../../model/coverage.js';
import { SEVERITIES, type Severity } from '../../model/vulnerability.js';

/**
 * HTML built from templates: every interpolated value is escaped unless it is Html already, so a
 * package name or an advisory's description can never become markup. (A template engine would
 * add a language and a dependency for what a tagged template does in a few lines.)
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function piece(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(piece).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** html`<td>${name}</td>`: values escaped, Html and arrays of them inserted as they are; null, undefined and false are nothing. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let text = strings[0]!;
  values.forEach((value, i) => {
    text += piece(value) + strings[i + 1]!;
  });
  return new Html(text);
}

/** A URL under /ui with a query; parameters without a value are left out. */
export function uiHref(path: string, query: Record<string, string | number | boolean | undefined | null> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '' && value !== false) params.set(key, String(value));
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

/** Pieces one after another with a separator between them: a, b, c. */
export const joined = (parts: readonly Html[], separator = ', '): Html =>
  html`${parts.map((p, i) => (i === 0 ? p : html`${separator}${p}`))}`;

/** An image's tags, each as code, or "untagged". */
export const tagList = (tags: readonly string[]): Html =>
  tags.length > 0 ? joined(tags.map((t) => html`<code>${t}</code>`)) : html`<span class="muted">untagged</span>`;

/** A version that fixes, or in words why there is none (no fix yet, will not be fixed, …). */
export const fixedVersion = (version: string | null, unfixedWords: string): Html =>
  version !== null ? html`<code>${version}</code>` : html`<span class="muted">${unfixedWords}</span>`;

/** Where an image's page is. */
export const imageHref = (digest: string): string => `/ui/images/${digest}`;
/** Where a vulnerability's page is. */
export const vulnerabilityHref = (name: string): string => `/ui/vulnerabilities/${encodeURIComponent(name)}`;

/** sha256:abcdef012345… → abcdef012345 (what people compare at a glance); the whole digest stays in a title. */
export function shortDigest(digest: string): Html {
  const hex = digest.replace(/^sha256:/, '');
  return html`<code class="digest" title="${digest}">${hex.slice(0, 12)}</code>`;
}

/** A date and time in UTC as people read it (2026-11-24 06:25 UTC), machine-readable in <time>. */
export function when(date: Date | string | null | undefined): Html {
  if (date === null || date === undefined) return html`<span class="muted">never</span>`;
  const d = typeof date === 'string' ? new Date(date) : date;
  const iso = d.toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** How long ago, in words (3 days ago). */
export function ago(date: Date | null | undefined, now: Date): string {
  if (!date) return 'never';
  const seconds = Math.round((now.getTime() - date.getTime()) / 1000);
  const future = seconds < 0;
  const s = Math.abs(seconds);
  const [value, unit] =
    s < 90
      ? [s, 'second']
      : s < 5400
        ? [Math.round(s / 60), 'minute']
        : s < 129_600
          ? [Math.round(s / 3600), 'hour']
          : [Math.round(s / 86_400), 'day'];
  const text = `${value} ${unit}${value === 1 ? '' : 's'}`;
  return future ? `in ${text}` : `${text} ago`;
}

/** Severities most severe first: the order of columns and badges. */
export const SEVERITIES_DOWN: readonly Severity[] = [...SEVERITIES].reverse();

/** A severity as a badge whose colour is backed by its word (never colour alone). */
export function severityBadge(severity: string): Html {
  return html`<span class="sev sev-${severity.toLowerCase()}">${severity}</span>`;
}

/** An EPSS score as a percentage with its percentile (94.3 %, p99). */
export function epssText(epss: { Score: number; Percentile: number } | undefined): Html {
  if (!epss) return html`<span class="muted">—</span>`;
  const pct = epss.Score * 100;
  return html`<span title="EPSS ${epss.Score} (percentile ${epss.Percentile})"
    >${pct < 0.1 ? '<0.1' : pct.toFixed(1)} % <span class="muted">p${Math.floor(epss.Percentile * 100)}</span></span
  >`;
}

/** Known exploited (CISA KEV) as a badge with the date it was added. */
export function kevBadge(kev: { DateAdded: string; KnownRansomwareCampaignUse?: string } | undefined): Html {
  if (!kev) return html`<span class="muted">—</span>`;
  return html`<span
    class="kev"
    title="In CISA's Known Exploited Vulnerabilities catalog since ${kev.DateAdded}${
      kev.KnownRansomwareCampaignUse === 'Known' ? '; used in ransomware campaigns' : ''
    }"
    >KEV</span
  >`;
}

/** A number with thousands separators. */
export const count = (n: number): string => n.toLocaleString('en');

const DATA_STATE_BADGES: Readonly<Record<DataState, Html>> = {
  current: html`current`,
  stale: html`<span class="sev sev-medium">stale</span>`,
  missing: html`<span class="sev sev-unknown">none</span>`,
};

/** What the pages that list namespaces' data (image, feeds) show of each: its state, who brought it, and when. */
export function namespaceDataCells(n: NamespaceData, now: Date): { state: Html; sources: Html; updated: Html } {
  return {
    state: DATA_STATE_BADGES[n.state],
    sources:
      n.sources.length > 0
        ? html`${n.sources.map((s) => s.name).join(', ')}`
        : html`<span class="muted"
            >${n.expectedSources.length > 0 ? `none yet (source: ${n.expectedSources.join(' or ')})` : 'no source covers it'}</span
          >`,
    updated: n.updatedAt ? html`${when(n.updatedAt)} <span class="muted">(${ago(n.updatedAt, now)})</span>` : html`—`,
  };
}

/** Each namespace's data in words, for a tooltip: "debian:12: from debian, updated …; fedora:40: no vulnerability data". */
export function dataTitle(namespaces: readonly NamespaceData[]): string {
  return namespaces
    .map((n) =>
      n.state === 'missing'
        ? `${n.namespace}: no vulnerability data`
        : `${n.namespace}: from ${n.sources.map((s) => s.name).join(', ')}, updated ${n.updatedAt?.toISOString() ?? 'at an unrecorded time'}${n.state === 'stale' ? ' (stale)' : ''}`,
    )
    .join('; ');
}
