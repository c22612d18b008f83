import { allCoverage } from '../../../coverage.js';
import { SOURCE_CATALOG, type SourceEntry } from '../../../ecosystems/catalog.js';
import { namespaceData } from '../../../model/coverage.js';
import { updaterStates, type UpdaterState } from '../../../store/updater-state.js';
import type { PageContext } from '../index.js';
import { ago, count, html, type Html, when } from '../html.js';
import type { Page } from '../layout.js';
import { namespaceDataTable, table } from '../sections.js';

/**
 * Each source: enabled or not, last success, next run, records, the last error; how old the
 * vulnerability data is (enrichment and risk context, NVD, EPSS and KEV, never count as
 * vulnerability data); and per namespace, who brought its data, how much and when.
 *
 * data-testid: `data-age` (the newest vulnerability data), `failing-count`, `never-updated-count`,
 * `namespace-row` per namespace (data-namespace, data-state).
 */
export async function feedsPage(context: PageContext): Promise<Page> {
  const [states, coverage] = await Promise.all([
    updaterStates(context.pool).then((list) => new Map(list.map((s) => [s.name, s]))),
    allCoverage(context.pool),
  ]);
  const enabled = new Set(context.enabledSources);
  const rows = SOURCE_CATALOG.filter((s) => enabled.has(s.name) || states.has(s.name)).map((s) => ({
    source: s,
    state: states.get(s.name),
    enabled: enabled.has(s.name),
  }));
  return {
    title: 'Feeds',
    section: 'feeds',
    body: html`<h1>Feeds</h1>
      <p class="lead">Where the vulnerability data comes from, and how fresh it is.</p>
      ${ageCards(rows, context.now)} ${sourcesTable(rows, context.now)}
      ${namespaceDataTable({
        caption: html`Vulnerability data per namespace (${count(coverage.length)})`,
        namespaces: coverage.map((c) => namespaceData(c, context.now, context.maxDataAgeMs)),
        now: context.now,
        rowTestId: 'namespace-row',
        records: true,
      })}`,
  };
}

/** A source of the catalog with its state (none before its first run) and whether it is enabled. */
interface SourceRow {
  source: SourceEntry;
  state: UpdaterState | undefined;
  enabled: boolean;
}

/** How old the vulnerability data is, and how many sources fail or never ran. */
function ageCards(rows: readonly SourceRow[], now: Date): Html {
  const vulnerabilitySources = rows.filter((r) => r.source.kind === 'vulnerabilities' && r.enabled);
  const dataTimes = vulnerabilitySources.flatMap((r) => (r.state?.dataUpdatedAt ? [r.state.dataUpdatedAt] : []));
  const newest = dataTimes.reduce<Date | null>((a, b) => (a === null || b > a ? b : a), null);
  const oldest = dataTimes.reduce<Date | null>((a, b) => (a === null || b < a ? b : a), null);
  const failing = rows.filter((r) => r.enabled && (r.state?.consecutiveFailures ?? 0) > 0);
  const neverRun = vulnerabilitySources.filter((r) => !r.state?.lastSuccessAt);
  return html`<ul class="cards" aria-label="Data age">
      <li><span class="value" data-testid="data-age">${ago(newest, now)}</span> last update of vulnerability data</li>
      <li><span class="value">${ago(oldest, now)}</span> oldest source's data</li>
      <li><span class="value" data-testid="failing-count">${count(failing.length)}</span> sources failing</li>
      <li><span class="value" data-testid="never-updated-count">${count(neverRun.length)}</span> vulnerability sources never updated</li>
    </ul>
    <p class="muted">
      NVD's scores, EPSS and CISA's KEV catalog describe vulnerabilities other sources list: they are not counted as vulnerability data.
    </p>`;
}

/** Each source: what it brings, when it last ran and will run, how many records, its last error. */
function sourcesTable(rows: readonly SourceRow[], now: Date): Html {
  return table(
    html`Sources (${count(rows.length)})`,
    [
      'Source',
      'Brings',
      'Enabled',
      'Last success',
      'Data as of',
      'Last attempt',
      'Next run',
      { label: 'Records', num: true },
      { label: 'Changed last run', num: true },
      'Last error',
    ],
    rows.map(
      ({ source, state, enabled }) =>
        html`<tr data-source="${source.name}">
          <th scope="row"><code>${source.name}</code></th>
          <td>${BRINGS[source.kind]}</td>
          <td>${enabled ? 'yes' : 'no'}</td>
          <td>
            ${when(state?.lastSuccessAt)}
            <span class="muted">${state?.lastSuccessAt ? `(${ago(state.lastSuccessAt, now)})` : ''}</span>
          </td>
          <td>${when(state?.dataUpdatedAt)}</td>
          <td>${when(state?.lastAttemptAt)}</td>
          <td>
            ${state?.nextRunAt ? html`${when(state.nextRunAt)} <span class="muted">(${ago(state.nextRunAt, now)})</span>` : html`<span class="muted">—</span>`}
          </td>
          <td class="num" data-testid="records">${count(state?.recordCount ?? 0)}</td>
          <td class="num">${count(state?.lastChanged ?? 0)}</td>
          <td>
            ${
              state?.lastError && (state.consecutiveFailures ?? 0) > 0
                ? html`<span class="sev sev-high">failing ×${state.consecutiveFailures}</span> ${state.lastError}`
                : html`<span class="muted">—</span>`
            }
          </td>
        </tr>`,
    ),
  );
}

const BRINGS: Readonly<Record<SourceEntry['kind'], string>> = {
  vulnerabilities: 'vulnerabilities',
  enrichment: 'scores (enrichment)',
  risk: 'risk context',
};
