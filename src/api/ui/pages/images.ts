/**
 * /ui: every image, ranked by risk (or in the order first seen), filtered, paged.
 *
 * data-testid (read by the browser tests): `image-row` per image (with data-digest, and data-state:
 * current, stale or missing), `count-<Severity>` per count cell (its text starts with the total;
 * data-total and data-fixable carry both), `kev-count`, or `counts-unknown` instead of them where a
 * namespace of the image has no vulnerability data; `next-page`, `severity-chart-table`.
 */
import { Type, type Static } from '@sinclair/typebox';
import { badRequest } from '../../../errors.js';
import { storeCoverage } from '../../../coverage.js';
import { imageData, imagesData, missingNamespaces, type ImageData } from '../../../model/coverage.js';
import { SEVERITIES, type Severity } from '../../../model/vulnerability.js';
import {
  imagesByHighestSeverity,
  listImages,
  listImagesByRisk,
  type HighestBucket,
  type ImageFilter,
  type ImageRow,
  type RiskCursor,
} from '../../../store/images.js';
import { MAX_NAME_LENGTH } from '../../limits.js';
import type { PageContext } from '../index.js';
import { count, dataTitle, html, type Html, imageHref, SEVERITIES_DOWN, severityBadge, shortDigest, uiHref, when } from '../html.js';
import type { Page } from '../layout.js';
import { chart, pager, table } from '../sections.js';

export const ImagesQuery = Type.Object({
  repository: Type.Optional(Type.String({ maxLength: MAX_NAME_LENGTH })),
  tag: Type.Optional(Type.String({ maxLength: 128 })),
  severity: Type.Optional(Type.Union([Type.Literal(''), ...SEVERITIES.map((s) => Type.Literal(s))])),
  kev: Type.Optional(Type.Union([Type.Literal(''), Type.Literal('on')])),
  sort: Type.Optional(Type.Union([Type.Literal('risk'), Type.Literal('first-seen')])),
  page: Type.Optional(Type.String({ maxLength: 4096 })),
});
export type ImagesQuery = Static<typeof ImagesQuery>;

/** The order of the list. */
type Sort = NonNullable<ImagesQuery['sort']>;

/** Images per page. */
export const IMAGES_PAGE = 50;

interface Token {
  List: string;
  After?: number;
  Rank?: RiskCursor;
}

export const imagesPage = (context: PageContext, query: ImagesQuery): Promise<Page> => imagesPageOf(context, query, IMAGES_PAGE);

/** The images page with `limit` images a page (tests page through a few images). */
export async function imagesPageOf(context: PageContext, query: ImagesQuery, limit: number): Promise<Page> {
  const filter: ImageFilter = {
    repository: query.repository?.trim() || undefined,
    tag: query.tag?.trim() || undefined,
    minSeverity: (query.severity || undefined) as Severity | undefined,
    knownExploited: query.kev === 'on' || undefined,
  };
  const sort = query.sort ?? 'risk';
  const list = `ui images ${sort} ${JSON.stringify(filter)}`;
  const token = pageToken(context, query.page, list);

  // The coverage of every namespace, read once: the chart's "no data" bucket and each row's data.
  const [rows, [coverage, distribution]] = await Promise.all([
    sort === 'risk'
      ? listImagesByRisk(context.pool, filter, token?.Rank, limit)
      : listImages(context.pool, filter, token?.After ?? 0, limit),
    storeCoverage(context.pool).then(
      async (all) => [all, await imagesByHighestSeverity(context.pool, missingNamespaces(imageData(all, context.now, 0)))] as const,
    ),
  ]);
  const data = imagesData(rows, coverage, context.now, context.maxDataAgeMs);
  // Every image is in one bucket. Counts are always current (a stale summary's are counted live):
  // only the order can lag, for the images being recounted.
  const total = distribution.reduce((sum, d) => sum + d.images, 0);
  const stale = sort === 'risk' ? (distribution.find((d) => d.highest === 'Being recounted')?.images ?? 0) : 0;
  const last = rows[rows.length - 1];
  const next =
    rows.length === limit && last
      ? context.pageTokens.encode({
          List: list,
          ...(sort === 'risk' ? { Rank: (last as ImageRow & { rank: RiskCursor }).rank } : { After: last.id }),
        } satisfies Token)
      : undefined;
  const filtered = Boolean(filter.repository || filter.tag || filter.minSeverity || filter.knownExploited);
  const keep = { repository: filter.repository, tag: filter.tag, severity: filter.minSeverity, kev: query.kev, sort: query.sort };

  return {
    title: 'Images',
    section: 'images',
    charts: {
      severity: {
        kind: 'bars',
        target: 'severity-chart',
        labels: distribution.map((d) => d.highest),
        x: distribution.map((_, i) => i),
        series: [{ label: 'Images', values: distribution.map((d) => d.images), colour: '--high-bg' }],
      },
    },
    body: html`<h1>Images</h1>
      ${header(total, sort, stale)} ${filtersForm(filter, sort, filtered)} ${imagesTable(rows, data, token !== undefined, filtered)}
      ${pager(
        'Pages',
        token ? { href: uiHref('/ui', keep), text: 'First page' } : undefined,
        next ? { href: uiHref('/ui', { ...keep, page: next }), text: 'Next page', testId: 'next-page' } : undefined,
      )}
      ${severityChart(distribution)}`,
  };
}

/** How many images there are, in which order, and how many are being re-ranked. */
function header(total: number, sort: Sort, stale: number): Html {
  return html`<p class="lead">
      ${count(total)} images recorded from
      registries${
        sort === 'risk'
          ? ', most at risk first: known exploited vulnerabilities, then the counts from the most severe down'
          : ', in the order first seen'
      }.
    </p>
    ${
      stale > 0
        ? html`<p class="notice" role="status">
            ${count(stale)} images are being re-ranked after a change of the vulnerability data; their counts below are current.
          </p>`
        : ''
    }`;
}

/** The filters, as they are now. */
function filtersForm(filter: ImageFilter, sort: Sort, filtered: boolean): Html {
  return html`<form class="filters" method="get" action="/ui" aria-label="Filter images">
    <label>Repository <input name="repository" value="${filter.repository ?? ''}" placeholder="team/app" /></label>
    <label>Tag <input name="tag" value="${filter.tag ?? ''}" placeholder="latest" size="12" /></label>
    <label
      >At least
      <select name="severity">
        <option value="">any severity</option>
        ${SEVERITIES_DOWN.map((s) => html`<option${s === filter.minSeverity ? html` selected` : ''}>${s}</option>`)}
      </select></label
    >
    <label class="check"
      ><input type="checkbox" name="kev" value="on" ${filter.knownExploited ? html` checked` : ''} /> Known exploited only</label
    >
    <label
      >Order
      <select name="sort">
        <option value="risk" ${sort === 'risk' ? html` selected` : ''}>Risk</option>
        <option value="first-seen" ${sort === 'first-seen' ? html` selected` : ''}>First seen</option>
      </select></label
    >
    <button type="submit">Apply</button>
    ${filtered ? html`<a href="/ui">Clear</a>` : ''}
  </form>`;
}

/** A page of images with their counts per severity (the severities some image of the page has), or why there is none. */
function imagesTable(rows: readonly ImageRow[], data: readonly ImageData[], continued: boolean, filtered: boolean): Html {
  if (rows.length === 0) {
    return html`<p class="notice" role="status">
      ${filtered ? 'No image matches these filters.' : 'No image has been scanned yet: scan one with POST /tarsier/v1/images, or a registry webhook.'}
    </p>`;
  }
  const shown = SEVERITIES_DOWN.filter((s) => rows.some((r, i) => data[i]!.state !== 'missing' && r.counts[s]));
  return table(
    html`Images${continued ? ' (continued)' : ''}: vulnerabilities per severity, with how many an upgrade fixes`,
    [
      'Repository',
      'Tags',
      'Digest',
      'Platform',
      'Last scanned',
      ...shown.map((s) => ({ label: s, num: true }) as const),
      { label: html`<abbr title="Known exploited (CISA KEV)">KEV</abbr>`, num: true },
    ],
    rows.map((r, i) => {
      const { state, namespaces } = data[i]!;
      return html`<tr data-testid="image-row" data-digest="${r.digest}" data-state="${state}">
        <th scope="row"><a href="${imageHref(r.digest)}">${r.registry}/${r.repository}</a></th>
        <td>${r.tags.length > 0 ? r.tags.join(', ') : html`<span class="muted">untagged</span>`}</td>
        <td>${shortDigest(r.digest)}</td>
        <td>${r.platform}</td>
        <td>
          ${when(r.scannedAt)}
          ${state === 'stale' ? html`<span class="sev sev-medium" title="${dataTitle(namespaces)}">stale data</span>` : ''}
        </td>
        ${
          state === 'missing'
            ? html`<td class="num" colspan="${shown.length + 1}" data-testid="counts-unknown" title="${dataTitle(namespaces)}">
                <span class="sev sev-unknown">unknown</span> no vulnerability data for ${missingNamespaces(data[i]!).join(', ')}
              </td>`
            : countCells(r, shown)
        }
      </tr>`;
    }),
  );
}

/** How many images have each severity as their most severe, as a bar chart and its table. */
function severityChart(distribution: ReadonlyArray<{ highest: HighestBucket; images: number }>): Html {
  return html`<section class="chart" aria-labelledby="severity-heading">
    <h2 id="severity-heading">Images by their most severe vulnerability</h2>
    ${chart(
      'severity-chart',
      `Bar chart: ${distribution.map((d) => `${d.images} images: ${d.highest}`).join(', ')}`,
      table(
        'Images by most severe vulnerability (all images)',
        ['Most severe', { label: 'Images', num: true }],
        distribution.map(
          (d) =>
            html`<tr>
              <th scope="row">${(SEVERITIES as readonly string[]).includes(d.highest) ? severityBadge(d.highest) : d.highest}</th>
              <td class="num">${count(d.images)}</td>
            </tr>`,
        ),
        'severity-chart-table',
      ),
    )}
  </section>`;
}

/** An image's counts per shown severity and its known exploited count. */
function countCells(r: ImageRow, shown: readonly Severity[]) {
  return html`${shown.map((s) => {
      const c = r.counts[s];
      return c
        ? html`<td class="num" data-testid="count-${s}" data-total="${c.total}" data-fixable="${c.fixable}">
            ${count(c.total)} <span class="muted">(${count(c.fixable)} fixable)</span>
          </td>`
        : html`<td class="num muted" data-testid="count-${s}" data-total="0" data-fixable="0">0</td>`;
    })}
    <td class="num" data-testid="kev-count">${r.knownExploited > 0 ? html`<span class="kev">${count(r.knownExploited)}</span>` : '0'}</td>`;
}

function pageToken(context: PageContext, page: string | undefined, list: string): Token | undefined {
  if (page === undefined || page === '') return undefined;
  const token = context.pageTokens.decode(page) as Partial<Token> | null;
  if (!token || token.List !== list) throw badRequest('page is a token of another list; start again from the first page');
  return token as Token;
}
