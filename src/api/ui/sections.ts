import type { NamespaceData } from '../../model/coverage.js';
import { count, Html, html, namespaceDataCells } from './html.js';

/**
 * The shapes the dashboard's pages are built of: a captioned table, a pager, a chart with its
 * numbers, the table of namespaces' data. Each page keeps what it says; these keep how it looks.
 */

/** A column heading: its label, or { label, num: true } for a column of numbers (right-aligned). */
export type Column = string | Html | { readonly label: string | Html; readonly num: true };

function heading(column: Column): Html {
  return typeof column === 'object' && !(column instanceof Html)
    ? html`<th scope="col" class="num">${column.label}</th>`
    : html`<th scope="col">${column}</th>`;
}

/** A table: a caption, a row of column headings, and the rows (each a <tr>). */
export function table(caption: Html | string, columns: readonly Column[], rows: readonly Html[], testId?: string): Html {
  return html`<table${testId ? html` data-testid="${testId}"` : ''}>
    <caption>
      ${caption}
    </caption>
    <thead>
      <tr>
        ${columns.map((c) => html` ${heading(c)}`)}
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}

/** A link of a pager: the first page, or the next one (rel=next). */
export interface PagerLink {
  readonly href: string;
  readonly text: string;
  readonly testId?: string;
}

/** Links to the first page and the next, each when there is one. */
export function pager(label: string, first: PagerLink | undefined, next: PagerLink | undefined): Html {
  return html`<nav class="pager" aria-label="${label}">
    ${first ? html`<a${first.testId ? html` data-testid="${first.testId}"` : ''} href="${first.href}">${first.text}</a>` : ''}
    ${next ? html`<a${next.testId ? html` data-testid="${next.testId}"` : ''} rel="next" href="${next.href}">${next.text}</a>` : ''}
  </nav>`;
}

/**
 * A chart (drawn by /ui/assets/app.js from the page's chart data under the canvas's id), described
 * for screen readers by ariaLabel, with its numbers as a table under "Data".
 */
export function chart(canvasId: string, ariaLabel: string, numbers: Html): Html {
  return html`<div id="${canvasId}" class="chart-canvas" role="img" aria-label="${ariaLabel}"></div>
    <details>
      <summary>Data</summary>
      ${numbers}
    </details>`;
}

/** The vulnerability data of namespaces: its state, who brought it (with how many records, when asked) and when. */
export function namespaceDataTable(options: {
  caption: Html | string;
  namespaces: readonly NamespaceData[];
  now: Date;
  rowTestId: string;
  records?: boolean;
  testId?: string;
}): Html {
  const { namespaces, now, rowTestId, records } = options;
  const columns: Column[] = ['Namespace', 'Data', 'From', ...(records ? [{ label: 'Records', num: true } as const] : []), 'Last updated'];
  return table(
    options.caption,
    columns,
    namespaces.map((n) => {
      const cells = namespaceDataCells(n, now);
      return html`<tr data-testid="${rowTestId}" data-namespace="${n.namespace}" data-state="${n.state}">
        <th scope="row">${n.namespace}</th>
        <td>${cells.state}</td>
        <td>${cells.sources}</td>
        ${records ? html`<td class="num">${count(n.sources.reduce((sum, s) => sum + (s.records ?? 0), 0))}</td>` : ''}
        <td>${cells.updated}</td>
      </tr>`;
    }),
    options.testId,
  );
}
