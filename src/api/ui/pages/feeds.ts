import { SOURCE_CATALOG } from '../../../ecosystems/catalog.js';
import { updaterStates } from '../../../store/updater-state.js';
import type { PageContext } from '../index.js';
import { ago, count, html, when } from '../html.js';
import type { Page } from '../layout.js';

/** Each source: enabled or not, last success, next run, records, the last error; and how old the data is. */
export async function feedsPage(context: PageContext): Promise<Page> {
  const states = new Map((await updaterStates(context.pool)).map((s) => [s.name, s]));
  const enabled = new Set(context.enabledSources);
  const rows = SOURCE_CATALOG.filter((s) => enabled.has(s.name) || states.has(s.name)).map((s) => ({
    source: s,
    state: states.get(s.name),
  }));
  const successes = rows.flatMap((r) => (r.state?.lastSuccessAt && enabled.has(r.source.name) ? [r.state.lastSuccessAt] : []));
  const newest = successes.reduce<Date | null>((a, b) => (a === null || b > a ? b : a), null);
  const oldest = successes.reduce<Date | null>((a, b) => (a === null || b < a ? b : a), null);
  const failing = rows.filter((r) => enabled.has(r.source.name) && (r.state?.consecutiveFailures ?? 0) > 0);
  const neverRun = rows.filter((r) => enabled.has(r.source.name) && !r.state?.lastSuccessAt);
  return {
    title: 'Feeds',
    section: 'feeds',
    body: html`<h1>Feeds</h1>
      <p class="lead">Where the vulnerability data comes from, and how fresh it is.</p>
      <ul class="cards" aria-label="Data age">
        <li><span class="value" data-testid="data-age">${ago(newest, context.now)}</span> last update of any source</li>
        <li><span class="value">${ago(oldest, context.now)}</span> oldest source's last update</li>
        <li><span class="value" data-testid="failing-count">${count(failing.length)}</span> sources failing</li>
        <li><span class="value">${count(neverRun.length)}</span> sources never updated</li>
      </ul>
      <table>
        <caption>
          Sources (${count(rows.length)})
        </caption>
        <thead>
          <tr>
            <th scope="col">Source</th>
            <th scope="col">Enabled</th>
            <th scope="col">Last success</th>
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
                <td>${enabled.has(source.name) ? 'yes' : 'no'}</td>
                <td>
                  ${when(state?.lastSuccessAt)}
                  <span class="muted">${state?.lastSuccessAt ? `(${ago(state.lastSuccessAt, context.now)})` : ''}</span>
                </td>
                <td>${when(state?.lastAttemptAt)}</td>
                <td>
                  ${state?.nextRunAt ? html`${when(state.nextRunAt)} <span class="muted">(${ago(state.nextRunAt, context.now)})</span>` : html`<span class="muted">—</span>`}
                </td>
                <td class="num">${count(state?.recordCount ?? 0)}</td>
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
      </table>`,
  };
}
