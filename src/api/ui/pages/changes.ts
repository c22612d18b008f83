/**
 * /ui/changes: what the vulnerability data changed, newest first, each notification told as a
 * sentence (CVE-X now affects 3 images; CVE-X changed: High → Critical, bash fixed in 1.2-3; CVE-X
 * is now known exploited), with what it was and what it is, the images it affects and, above, how
 * exposure moved over the last 30 days. The image counts are what GET
 * /tarsier/v1/notifications/{name} lists for each side.
 *
 * data-testid (read by the tests):
 * - `change`: one per notification (an <li>), with data-notification (its name) and data-kind
 *   (`new`, `withdrawn`, `changed`, `kev`);
 * - `change-sentence`: the sentence of a change;
 * - `affected-count`: a number of images, with data-side (`old` or `new`; a KEV change's sides are
 *   one version: it has the `new` one only);
 * - `change-diff`: the table of what it was and what it is (severity, each package's fix, KEV);
 * - `affected-images`: the first images affected, each linked; `more-images`: the link to the
 *   vulnerability's page for the rest;
 * - `older-page`, `newest-page`: the pager's links;
 * - `exposure-table`: the exposure chart's numbers (a row per day with data-day, a cell per
 *   severity with data-severity).
 */
import { badRequest } from '../../../errors.js';
import { fixWords, type FixedIn } from '../../../model/vulnerability.js';
import type { RiskContext } from '../../../model/risk.js';
import { EXPOSURE_SEVERITIES, exposureOverTime, type ExposureDay } from '../../../store/exposure.js';
import { recentNotifications, type ChangeImage, type ChangeSide, type RecentNotification } from '../../../store/notifications.js';
import type { PageContext } from '../index.js';
import { ago, count, html, type Html, imageHref, joined, severityBadge, shortDigest, uiHref, vulnerabilityHref, when } from '../html.js';
import type { Page } from '../layout.js';
import { chart, pager, table } from '../sections.js';

/** Notifications per page. */
export const CHANGES_PAGE = 50;
/** Images linked per change; the rest are on the vulnerability's page. */
export const FIRST_IMAGES = 3;
/** Days of the exposure chart (today the last). */
export const EXPOSURE_DAYS = 30;

const LIST = 'ui changes';

interface Token {
  List: string;
  Before: number;
}

type Kind = 'new' | 'withdrawn' | 'changed' | 'kev';
type Kev = RiskContext['kev'] | null;

export async function changesPage(context: PageContext, page: string | undefined): Promise<Page> {
  const token = pageToken(context, page);
  // The chart heads the newest page only: older pages are for reading on, and it is most of a page's cost.
  const [rows, exposure] = await Promise.all([
    recentNotifications(context.pool, token?.Before ?? null, CHANGES_PAGE, FIRST_IMAGES),
    token ? undefined : exposureOverTime(context.pool, EXPOSURE_DAYS),
  ]);
  const last = rows[rows.length - 1];
  const next =
    rows.length === CHANGES_PAGE && last ? context.pageTokens.encode({ List: LIST, Before: last.id } satisfies Token) : undefined;

  return {
    title: 'Changes',
    section: 'changes',
    charts: exposure ? { exposure: exposureChart(exposure) } : {},
    body: html`<h1>Changes</h1>
      <p class="lead">What changes of the vulnerability data meant for the images scanned, newest first.</p>
      ${exposure ? exposureSection(exposure) : ''} ${notificationsSection(rows, token !== undefined, context.now)}
      ${pager(
        'Pages',
        token ? { href: '/ui/changes', text: 'Newest', testId: 'newest-page' } : undefined,
        next ? { href: uiHref('/ui/changes', { page: next }), text: 'Older', testId: 'older-page' } : undefined,
      )}`,
  };
}

/** A page of notifications, each told as a sentence, or why there is none. */
function notificationsSection(rows: readonly RecentNotification[], older: boolean, now: Date): Html {
  return html`<h2 id="changes-heading">Notifications${older ? ' (older)' : ''}</h2>
    ${
      rows.length === 0
        ? html`<p class="notice" role="status">
            ${older ? 'No older notification.' : 'No notification yet: they are written when an updater or the API changes a vulnerability.'}
          </p>`
        : html`<ol class="changes" aria-labelledby="changes-heading">
            ${rows.map((n) => changeItem(n, now))}
          </ol>`
    }`;
}

function pageToken(context: PageContext, page: string | undefined): Token | undefined {
  if (page === undefined || page === '') return undefined;
  const token = context.pageTokens.decode(page) as Partial<Token> | null;
  if (!token || token.List !== LIST || typeof token.Before !== 'number' || !Number.isSafeInteger(token.Before)) {
    throw badRequest('page is a token of another list; start again from the first page');
  }
  return token as Token;
}

/** The exposure chart's data (drawn by /ui/assets/app.js): a line per severity, a point per day. */
function exposureChart(days: readonly ExposureDay[]): Record<string, unknown> {
  return {
    kind: 'lines',
    target: 'exposure-chart',
    x: days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000),
    series: EXPOSURE_SEVERITIES.map((s) => ({
      label: s,
      values: days.map((d) => d.counts[s]),
      colour: `--${s.toLowerCase()}-bg`,
    })),
  };
}

function exposureSection(days: readonly ExposureDay[]): Html {
  const today = days[days.length - 1];
  const summary = today ? EXPOSURE_SEVERITIES.map((s) => `${today.counts[s]} ${s}`).join(', ') : 'no data';
  return html`<section class="chart" aria-label="Exposure over time">
    <h2>Exposure over time</h2>
    <p class="muted">
      Vulnerabilities affecting an image scanned now, per day (UTC) over the last ${days.length} days: each counted once, at its highest
      severity, on the days it was published and not yet withdrawn.
    </p>
    ${chart(
      'exposure-chart',
      `Line chart of vulnerabilities per severity by day; today: ${summary}`,
      table(
        'Vulnerabilities affecting an image scanned now, by day and severity',
        ['Day (UTC)', ...EXPOSURE_SEVERITIES.map((s) => ({ label: s, num: true }) as const)],
        days.map(
          (d) =>
            html`<tr data-day="${d.day}">
              <th scope="row"><time datetime="${d.day}">${d.day}</time></th>
              ${EXPOSURE_SEVERITIES.map((s) => html`<td class="num" data-severity="${s}">${count(d.counts[s])}</td>`)}
            </tr>`,
        ),
        'exposure-table',
      ),
    )}
  </section>`;
}

const kindOf = (n: RecentNotification): Kind => (n.riskChange ? 'kev' : !n.old ? 'new' : !n.new ? 'withdrawn' : 'changed');

const plural = (n: number, word: string): string => (n === 1 ? word : `${word}s`);

/** A number of images a side affects, for the tests to read. */
const affected = (n: number, side: 'old' | 'new'): Html =>
  html`<span data-testid="affected-count" data-side="${side}">${count(n)}</span> ${plural(n, 'image')}`;

function changeItem(n: RecentNotification, now: Date): Html {
  const kind = kindOf(n);
  const side = (n.new ?? n.old)!;
  const name = html`<a href="${vulnerabilityHref(side.name)}"><strong>${side.name}</strong></a>`;
  let sentence: Html;
  switch (kind) {
    case 'new':
      sentence =
        side.images > 0
          ? html`${name} now affects ${affected(side.images, 'new')}.`
          : html`${name} was published; it affects ${affected(0, 'new')}.`;
      break;
    case 'withdrawn':
      sentence =
        side.images > 0
          ? html`${name} no longer affects ${affected(side.images, 'old')} (withdrawn).`
          : html`${name} was withdrawn; it affected ${affected(0, 'old')}.`;
      break;
    case 'kev':
      sentence = html`${kevSentence(name, n.riskChange!.kev.old, n.riskChange!.kev.new)} It affects ${affected(side.images, 'new')}.`;
      break;
    case 'changed': {
      const changes = whatChanged(n.old!, n.new!);
      sentence = html`${name} changed: ${joined(changes)}. It affects ${affected(n.new!.images, 'new')}
        <span class="muted">(before: ${affected(n.old!.images, 'old')})</span>.`;
      break;
    }
  }
  const before = kind === 'kev' ? { ...side, kev: n.riskChange!.kev.old } : n.old;
  const after = kind === 'kev' ? { ...side, kev: n.riskChange!.kev.new } : n.new;
  return html`<li data-testid="change" data-notification="${n.name}" data-kind="${kind}">
    <p data-testid="change-sentence">${sentence}</p>
    <p class="muted">
      ${when(n.createdAt)} (${ago(n.createdAt, now)}) · ${side.namespace} · ${severityBadge(side.severity)} · notification
      <code>${n.name}</code>
    </p>
    ${diffTable(before, after)} ${imagesLine(kind === 'withdrawn' ? 'Affected before' : 'Affected', side)}
  </li>`;
}

function kevSentence(name: Html, old: Kev, fresh: Kev): Html {
  if (fresh && !old) {
    return html`${name} is now known exploited (CISA KEV, added
    ${fresh.dateAdded}${fresh.dueDate ? `, due ${fresh.dueDate}` : ''}${
      fresh.knownRansomwareCampaignUse === 'Known' ? '; used in ransomware campaigns' : ''
    }).`;
  }
  if (old && !fresh) return html`${name} is no longer listed as known exploited (removed from CISA KEV).`;
  return html`${name}'s CISA KEV entry changed: ${kevText(old)} → ${kevText(fresh)}.`;
}

function kevText(kev: Kev): string {
  if (!kev) return 'not listed';
  const parts = [`added ${kev.dateAdded}`];
  if (kev.dueDate) parts.push(`due ${kev.dueDate}`);
  if (kev.knownRansomwareCampaignUse === 'Known') parts.push('used in ransomware campaigns');
  return parts.join(', ');
}

/** What a package's fixed-in entries say, in words (one per architecture or range it has). */
const fixText = (entries: readonly FixedIn[]): string => (entries.length > 0 ? entries.map(fixWords).join('; ') : 'not listed');

const sameFix = (a: readonly FixedIn[], b: readonly FixedIn[]): boolean => fixText(a) === fixText(b);

/** Packages of both sides, in name order. */
const packagesOf = (...sides: Array<ChangeSide | null>): string[] =>
  [...new Set(sides.flatMap((s) => (s ? s.fixedIn.map((f) => f.feature) : [])))].sort();

const fixOf = (side: ChangeSide | null, feature: string): FixedIn[] => side?.fixedIn.filter((f) => f.feature === feature) ?? [];

/** The parts of a change, most telling first: severity, then each package's fix. */
function whatChanged(old: ChangeSide, fresh: ChangeSide): Html[] {
  const parts: Html[] = [];
  if (old.severity !== fresh.severity) parts.push(html`${old.severity} → ${fresh.severity}`);
  for (const feature of packagesOf(old, fresh)) {
    const before = fixOf(old, feature);
    const after = fixOf(fresh, feature);
    if (sameFix(before, after)) continue;
    parts.push(after.length > 0 ? html`<code>${feature}</code> ${fixText(after)}` : html`<code>${feature}</code> no longer listed`);
  }
  if (parts.length === 0) parts.push(html`${old.details !== fresh.details ? 'description, links or scores' : 'republished unchanged'}`);
  return parts;
}

/** Before and after, row by row (the rows that differ marked); a new or withdrawn vulnerability has one side. */
function diffTable(before: ChangeSide | null, after: ChangeSide | null): Html {
  const sides = [
    ...(before ? [{ heading: 'Before', side: before }] : []),
    ...(after ? [{ heading: after === before ? 'Now' : 'After', side: after }] : []),
  ];
  const rows: Array<{ label: Html; cells: Array<Html | string> }> = [
    { label: html`Severity`, cells: sides.map(({ side }) => severityBadge(side.severity)) },
    ...packagesOf(before, after).map((feature) => ({
      label: html`<code>${feature}</code>`,
      cells: sides.map(({ side }) => fixText(fixOf(side, feature))),
    })),
    { label: html`Known exploited`, cells: sides.map(({ side }) => kevText(side.kev)) },
  ];
  const text = (v: Html | string) => (typeof v === 'string' ? v : v.text);
  return html`<table class="diff" data-testid="change-diff">
    <thead>
      <tr>
        <td></td>
        ${sides.map((s) => html`<th scope="col">${s.heading}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r) =>
          html`<tr${sides.length === 2 && text(r.cells[0]!) !== text(r.cells[1]!) ? html` class="changed"` : ''}>
            <th scope="row">${r.label}</th>
            ${r.cells.map((c) => html`<td>${c}</td>`)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** repository:tag, or repository@digest when untagged. */
function imageLink(image: ChangeImage): Html {
  const label = image.tags[0] ? html`${image.repository}:${image.tags[0]}` : html`${image.repository}@${shortDigest(image.digest)}`;
  return html`<a href="${imageHref(image.digest)}" title="${image.registry}/${image.repository}@${image.digest}">${label}</a>`;
}

function imagesLine(label: string, side: ChangeSide): Html {
  if (side.images === 0) return html``;
  const more = side.images - side.firstImages.length;
  return html`<p data-testid="affected-images">
    ${label}:
    ${joined(side.firstImages.map(imageLink))}${
      more > 0 ? html` and <a data-testid="more-images" href="${vulnerabilityHref(side.name)}">${count(more)} more</a>` : ''
    }
  </p>`;
}
