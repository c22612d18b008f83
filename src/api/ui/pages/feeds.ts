import { allCoverage } from '../../../coverage.js';
import { SOURCE_CATALOG } from '../../../ecosystems/catalog.js';
import { namespaceData } from '../../../model/coverage.js';
import { updaterStates } from '../../../store/updater-state.js';
import type { PageContext } from '../index.js';
import { ago, count, html, namespaceDataCells, when } from '../html.js';
import type { Page } from '../layout.js';

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
  }));
  const vulnerabilitySources = rows.filter((r) => r.source.kind === 'vulnerabilities' && enabled.has(r.source.name));
  const dataTimes = vulnerabilitySources.flatMap((r) => (r.state?.dataUpdatedAt ? [r.state.dataUpdatedAt] : []));
  const newest = dataTimes.reduce<Date | null>((a, b) => (a === null || b > a ? b : a), null);
  const oldest = dataTimes.reduce<Date | null>((a, b) => (a === null || b < a ? b : a), null);
  const failing = rows.filter((r) => enabled.has(r.source.name) && (r.state?.consecutiveFailures ?? 0) > 0);
  const neverRun = vulnerabilitySources.filter((r) => !r.state?.lastSuccessAt);
  const namespaces = coverage.map((c) => namespaceData(c, context.now, context.maxDataAgeMs));
  return {
    title: 'Feeds',
    section: 'feeds',
    body: html`<h1>Feeds</h1>
      <p class="lead">Where the vulnerability data comes from, and how fresh it is.</p>
      <ul class="cards" aria-label="Data age">
        <li><span class="value" data-testid="data-age">${ago(newest, context.now)}</span> last update of vulnerability data</li>
        <li><span class="value">${ago(oldest, context.now)}</span> oldest source's data</li>
        <li><span class="value" data-testid="failing-count">${count(failing.length)}</span> sources failing</li>
        <li><span class="value" data-testid="never-updated-count">${count(neverRun.length)}</span> vulnerability sources never updated</li>
      </ul>
      <p class="muted">
        NVD's scores, EPSS and CISA's KEV catalog describe vulnerabilities other sources list: they are not counted as vulnerability data.
      </p>
      <table>
        <caption>
          Sources (${count(rows.length)})
        </caption>
        <thead>
          <tr>
            <th scope="col">Source</th>
            <th scope="col">Brings</th>
            <th scope="col">Enabled</th>
            <th scope="col">Last success</th>
            <th scope="col">Data as of</th>
            <th scope="col">Last attempt</th>
            <th scope="col">Next run</th>
            <th scope="col" class="num">Records</th>
            <th scope="col" class="num">Changed last run</th>
            <th scope="col">Last error</th>
          </tr>
        </thead>
        <tbody>
          ${rows.map(
            ({ source, state }) =>
              html`<tr data-source="${source.name}">
                <th scope="row"><code>${source.name}</code></th>
                <td>${BRINGS[source.kind]}</td>
                <td>${enabled.has(source.name) ? 'yes' : 'no'}</td>
                <td>
                  ${when(state?.lastSuccessAt)}
                  <span class="muted">${state?.lastSuccessAt ? `(${ago(state.lastSuccessAt, context.now)})` : ''}</span>
                </td>
                <td>${when(state?.dataUpdatedAt)}</td>
                <td>${when(state?.lastAttemptAt)}</td>
                <td>
                  ${state?.nextRunAt ? html`${when(state.nextRunAt)} <span class="muted">(${ago(state.nextRunAt, context.now)})</span>` : html`<span class="muted">—</span>`}
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
          )}
        </tbody>
      </table>
      <table>
        <caption>
          Vulnerability data per namespace (${count(namespaces.length)})
        </caption>
        <thead>
          <tr>
            <th scope="col">Namespace</th>
            <th scope="col">Data</th>
            <th scope="col">From</th>
            <th scope="col" class="num">Records</th>
            <th scope="col">Last updated</th>
          </tr>
        </thead>
        <tbody>
          ${namespaces.map((n) => {
            const cells = namespaceDataCells(n, context.now);
            return html`<tr data-testid="namespace-row" data-namespace="${n.namespace}" data-state="${n.state}">
              <th scope="row">${n.namespace}</th>
              <td>${cells.state}</td>
              <td>${cells.sources}</td>
              <td class="num">${count(n.sources.reduce((sum, s) => sum + (s.records ?? 0), 0))}</td>
              <td>${cells.updated}</td>
            </tr>`;
          })}
        </tbody>
      </table>`,
  };
}

const BRINGS: Readonly<Record<(typeof SOURCE_CATALOG)[number]['kind'], string>> = {
  vulnerabilities: 'vulnerabilities',
  enrichment: 'scores (enrichment)',
  risk: 'risk context',
};
