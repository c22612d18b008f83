/**
 * One image (/ui/images/{digest}): where registries hold it, its counts, what to upgrade, its
 * layers, its findings and its packages. Read from imageContents and imagesWithDigest, as
 * GET /tarsier/v1/images/{digest} reads them, so the numbers are the API's.
 *
 * data-testid attributes (tests and browser tests read these):
 * - `image-digest`: the whole digest, in the heading.
 * - `reference`: one row per registry record (data-repository="registry/repository").
 * - `count-<Severity>` / `fixable-<Severity>`: the Summary's Total and Fixable of each severity
 *   (Critical, High, Medium, Low, Negligible, Unknown always; Defcon1 when the image has any).
 * - `kev-count`: KnownExploited. Where a namespace has no vulnerability data these read "unknown",
 *   and `data-missing` says which.
 * - `namespace-data`: one row per namespace of its packages (data-namespace, data-state: current,
 *   stale or missing), in the `data-coverage` table.
 * - `upgrade`: one row per upgrade (data-package), with `upgrade-to` and `upgrade-removes` cells;
 *   `upgrade-removed`: the High+ findings the upgrades remove; `unfixed-high`: those no upgrade fixes.
 * - `layer`: one row per layer (id layer-N, data-digest), with `layer-packages` and
 *   `layer-vulnerabilities` cells.
 * - `finding`: one row per (vulnerability, package) (data-vulnerability, data-package);
 *   `finding-count`: how many rows.
 * - `package`: one row per package (data-package); `package-count`: how many.
 */
import { notFound } from '../../../errors.js';
import { isVersionFormatName, versionFormat } from '../../../ecosystems/index.js';
import { imageContents, type ImageContents, type ImagePackage, type ImageVulnerability } from '../../../images/report.js';
import { imageData, missingNamespaces, type ImageData } from '../../../model/coverage.js';
import { allSeverities, countFindings, worstSeverity } from '../../../model/finding-counts.js';
import { riskMetadata, type RiskContext } from '../../../model/risk.js';
import { severityRank, UNFIXED_WORDS, type FixState, type Severity } from '../../../model/vulnerability.js';
import { imagesWithDigest, type ImageReferenceRow } from '../../../store/images.js';
import type { PageContext } from '../index.js';
import {
  count,
  epssText,
  fixedVersion,
  html,
  joined,
  kevBadge,
  SEVERITIES_DOWN,
  severityBadge,
  shortDigest,
  tagList,
  vulnerabilityHref,
  when,
  type Html,
} from '../html.js';
import type { Page } from '../layout.js';
import { namespaceDataTable, table } from '../sections.js';

/** Above this many packages, the packages table starts collapsed. */
const OPEN_PACKAGES = 30;

/** The risk context as the API shows it (riskMetadata): EPSS and KEV, each with the CVE it came from when not the name. */
export interface RiskShown {
  EPSS?: { Score: number; Percentile: number; Date: string; CVE?: string };
  KEV?: { DateAdded: string; DueDate: string; KnownRansomwareCampaignUse: string; CVE?: string };
}

export const riskShown = (name: string, risk: RiskContext | undefined): RiskShown => riskMetadata(name, risk) as RiskShown;

/** What a fix state says in words, when there is no fixed version to show. */
export const fixStateText = (state: FixState): string => (state === 'fixed' ? 'fixed' : UNFIXED_WORDS[state]);

const atLeastHigh = (severity: Severity): boolean => severityRank(severity) >= severityRank('High');

/** What upgradePlan reads of a package. */
export interface PlannedPackage {
  name: string;
  version: string;
  namespace: string;
  versionFormat: string;
  vulnerabilities: ReadonlyArray<Pick<ImageVulnerability, 'name' | 'severity' | 'fixedBy'>>;
}

export interface Upgrade {
  package: string;
  namespace: string;
  /** The installed version. */
  from: string;
  /** The highest FixedBy among the package's fixable High+ findings. */
  to: string;
  /** The High+ vulnerabilities the upgrade removes, by name. */
  removes: string[];
}

export interface UpgradePlan {
  /** Most findings removed first, then by package name. */
  upgrades: Upgrade[];
  /** High, Critical and Defcon1 findings (vulnerability, package) the upgrades remove. */
  removed: number;
  /** High, Critical and Defcon1 findings no upgrade fixes (no fixed version known). */
  remaining: number;
}

function compareVersions(format: string): (a: string, b: string) => number {
  if (isVersionFormatName(format)) {
    const f = versionFormat(format);
    return (a, b) => f.compare(a, b);
  }
  return (a, b) => (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * The fewest package upgrades that remove the most High, Critical and Defcon1 findings: every
 * package with a fixable one is upgraded once, to the highest FixedBy among them, which removes
 * all of them. A finding is a (vulnerability, package) pair.
 */
export function upgradePlan(packages: readonly PlannedPackage[]): UpgradePlan {
  const upgrades: Upgrade[] = [];
  let remaining = 0;
  for (const p of packages) {
    const compare = compareVersions(p.versionFormat);
    let to: string | undefined;
    const removes = new Set<string>();
    const unfixed = new Set<string>();
    for (const v of p.vulnerabilities) {
      if (!atLeastHigh(v.severity)) continue;
      if (v.fixedBy === null) {
        unfixed.add(v.name);
        continue;
      }
      removes.add(v.name);
      if (to === undefined || compare(v.fixedBy, to) > 0) to = v.fixedBy;
    }
    remaining += [...unfixed].filter((name) => !removes.has(name)).length;
    if (to !== undefined) {
      upgrades.push({ package: p.name, namespace: p.namespace, from: p.version, to, removes: [...removes].sort() });
    }
  }
  upgrades.sort(
    (a, b) =>
      b.removes.length - a.removes.length ||
      a.package.localeCompare(b.package) ||
      a.namespace.localeCompare(b.namespace) ||
      a.from.localeCompare(b.from),
  );
  return { upgrades, removed: upgrades.reduce((n, u) => n + u.removes.length, 0), remaining };
}

/** One row of the findings table. */
interface Finding {
  vulnerability: ImageVulnerability;
  package: ImagePackage;
  layer: number;
  risk: RiskShown;
}

/** Most severe first, then known exploited, then the higher EPSS score, then by name (and package). */
function compareFindings(a: Finding, b: Finding): number {
  return (
    severityRank(b.vulnerability.severity) - severityRank(a.vulnerability.severity) ||
    Number(b.risk.KEV !== undefined) - Number(a.risk.KEV !== undefined) ||
    (b.risk.EPSS?.Score ?? -1) - (a.risk.EPSS?.Score ?? -1) ||
    a.vulnerability.name.localeCompare(b.vulnerability.name) ||
    a.package.name.localeCompare(b.package.name)
  );
}

const layerLink = (n: number): Html => html`<a href="#layer-${n}">${n}</a>`;

/** The EPSS cell: the score, and the CVE it came from when not the vulnerability's own name. */
const epssCell = (risk: RiskShown): Html =>
  html`${epssText(risk.EPSS)}${risk.EPSS?.CVE ? html` <span class="muted">(${risk.EPSS.CVE})</span>` : ''}`;

/** An image's layers, bottom first, numbered from 1: what each added and the most severe finding it brings. */
interface LayerRow {
  index: number;
  digest: string;
  packages: number;
  vulnerabilities: number;
  worst: Severity | undefined;
}

export async function imagePage(context: PageContext, digest: string): Promise<Page> {
  const [contents, references] = await Promise.all([imageContents(context.pool, digest), imagesWithDigest(context.pool, digest)]);
  if (!contents) throw notFound(`image ${digest} is not known: scan it with POST /tarsier/v1/images`);

  // Layers bottom first, numbered from 1; a digest listed twice is the first of them.
  const layerIndex = new Map<string, number>();
  contents.layers.forEach((d, i) => {
    if (!layerIndex.has(d)) layerIndex.set(d, i + 1);
  });
  const layerOf = (p: ImagePackage): number => layerIndex.get(p.addedBy) ?? 0;

  const findings: Finding[] = contents.packages
    .flatMap((p) => p.vulnerabilities.map((v) => ({ vulnerability: v, package: p, layer: layerOf(p), risk: riskShown(v.name, v.risk) })))
    .sort(compareFindings);

  const layers: LayerRow[] = contents.layers.map((d, i) => {
    const added = contents.packages.filter((p) => layerOf(p) === i + 1 && layerIndex.get(d) === i + 1);
    const counts = countFindings(added.flatMap((p) => p.vulnerabilities));
    return { index: i + 1, digest: d, packages: added.length, vulnerabilities: allSeverities(counts).total, worst: worstSeverity(counts) };
  });

  return {
    title: `Image ${digest.replace(/^sha256:/, '').slice(0, 12)}`,
    section: 'images',
    body: html`<h1>Image <code data-testid="image-digest">${digest}</code></h1>
      ${referencesSection(references)}
      ${summarySection(contents, imageData(contents.coverage, context.now, context.maxDataAgeMs), context.now)}
      ${upgradesSection(upgradePlan(contents.packages))} ${layersSection(layers)} ${findingsSection(findings)}
      ${packagesSection(contents.packages, layerOf)}`,
  };
}

/** Where registries hold the image. */
function referencesSection(references: readonly ImageReferenceRow[]): Html {
  if (references.length === 0) {
    return html`<p class="notice">No registry record holds this digest (its contents were indexed without a scan from a registry).</p>`;
  }
  return table(
    'Where registries hold it',
    ['Repository', 'Tags', 'Platform', 'First seen', 'Last seen'],
    references.map(
      (r) =>
        html`<tr data-testid="reference" data-repository="${r.registry}/${r.repository}">
          <th scope="row"><code>${r.registry}/${r.repository}</code></th>
          <td>${tagList(r.tags)}</td>
          <td>${r.platform}</td>
          <td>${when(r.firstSeen)}</td>
          <td>${when(r.lastSeen)}</td>
        </tr>`,
    ),
  );
}

/** The counts per severity (unknown where a namespace has no data), and the data behind them. */
function summarySection(contents: ImageContents, data: ImageData, now: Date): Html {
  // A namespace without data leaves the counts unknown: they are never shown as 0.
  const known = data.state !== 'missing';
  const shown = SEVERITIES_DOWN.filter((s) => s !== 'Defcon1' || contents.summary[s] !== undefined);
  return html`<h2 id="summary">Vulnerabilities by severity</h2>
    ${
      known
        ? ''
        : html`<p class="notice" role="status" data-testid="data-missing">
            Unknown: there is no vulnerability data for ${missingNamespaces(data).join(', ')}, so its packages there were not matched and
            the counts are not known. The findings below are those of the other namespaces.
          </p>`
    }
    <ul class="cards" aria-label="Vulnerabilities by severity">
      ${shown.map((s) => {
        const c = contents.summary[s] ?? { total: 0, fixable: 0 };
        return html`<li>
          ${severityBadge(s)}
          <span class="value" data-testid="count-${s}">${known ? count(c.total) : 'unknown'}</span>
          <span class="muted"><span data-testid="fixable-${s}">${known ? count(c.fixable) : 'unknown'}</span> fixable</span>
        </li>`;
      })}
      <li>
        <span class="kev">KEV</span>
        <span class="value" data-testid="kev-count">${known ? count(contents.knownExploited) : 'unknown'}</span>
        <span class="muted">known exploited</span>
      </li>
    </ul>
    <p class="muted">
      Distinct vulnerabilities, each at the highest severity any source gives it; fixable when an upgrade of an affected package fixes it.
    </p>
    ${namespaceDataTable({
      caption: 'The vulnerability data behind these numbers',
      namespaces: data.namespaces,
      now,
      rowTestId: 'namespace-data',
      testId: 'data-coverage',
    })}`;
}

/** What to upgrade to remove the most High and Critical findings, and what no upgrade fixes. */
function upgradesSection(plan: UpgradePlan): Html {
  return html`<h2 id="upgrades">What to upgrade</h2>
    ${
      plan.upgrades.length === 0
        ? html`<p class="notice">No upgrade removes a High or Critical finding.</p>`
        : table(
            html`${count(plan.upgrades.length)} ${plan.upgrades.length === 1 ? 'upgrade removes' : 'upgrades remove'}
              <span data-testid="upgrade-removed">${count(plan.removed)}</span>
              High and Critical ${plan.removed === 1 ? 'finding' : 'findings'}`,
            ['Package', 'Installed', 'Upgrade to', { label: 'Findings removed', num: true }, 'Vulnerabilities'],
            plan.upgrades.map(
              (u) =>
                html`<tr data-testid="upgrade" data-package="${u.package}">
                  <th scope="row">${u.package} <span class="muted">${u.namespace}</span></th>
                  <td><code>${u.from}</code></td>
                  <td data-testid="upgrade-to"><code>${u.to}</code></td>
                  <td class="num" data-testid="upgrade-removes">${count(u.removes.length)}</td>
                  <td>${joined(u.removes.map((name) => html`<a href="${vulnerabilityHref(name)}">${name}</a>`))}</td>
                </tr>`,
            ),
          )
    }
    <p>
      <span data-testid="unfixed-high">${count(plan.remaining)}</span> High and Critical
      ${plan.remaining === 1 ? 'finding remains' : 'findings remain'} that no upgrade fixes yet.
    </p>`;
}

function layersSection(layers: readonly LayerRow[]): Html {
  return html`<h2 id="layers">Layers</h2>
    ${table(
      html`Layers, bottom first (${count(layers.length)})`,
      [
        { label: '#', num: true },
        'Digest',
        { label: 'Packages added', num: true },
        { label: 'Vulnerabilities they bring', num: true },
        'Most severe',
      ],
      layers.map(
        (l) =>
          html`<tr id="layer-${l.index}" data-testid="layer" data-digest="${l.digest}">
            <th scope="row" class="num">${l.index}</th>
            <td>${shortDigest(l.digest)}</td>
            <td class="num" data-testid="layer-packages">${count(l.packages)}</td>
            <td class="num" data-testid="layer-vulnerabilities">${count(l.vulnerabilities)}</td>
            <td>${l.worst ? severityBadge(l.worst) : html`<span class="muted">—</span>`}</td>
          </tr>`,
      ),
    )}`;
}

function findingsSection(findings: readonly Finding[]): Html {
  return html`<h2 id="vulnerabilities">Vulnerabilities</h2>
    ${
      findings.length === 0
        ? html`<p class="notice">No known vulnerability affects this image's packages.</p>`
        : table(
            html`Findings (<span data-testid="finding-count">${count(findings.length)}</span>): one row per vulnerability and package, most
              severe first`,
            ['Vulnerability', 'Severity', 'Package', 'Installed', 'Fixed by', 'EPSS', 'KEV', 'Layer'],
            findings.map(
              (f) =>
                html`<tr data-testid="finding" data-vulnerability="${f.vulnerability.name}" data-package="${f.package.name}">
                  <th scope="row"><a href="${vulnerabilityHref(f.vulnerability.name)}">${f.vulnerability.name}</a></th>
                  <td>${severityBadge(f.vulnerability.severity)}</td>
                  <td>${f.package.name}</td>
                  <td><code>${f.package.version}</code></td>
                  <td data-testid="fixed-by">${fixedVersion(f.vulnerability.fixedBy, fixStateText(f.vulnerability.fixState))}</td>
                  <td>${epssCell(f.risk)}</td>
                  <td>${kevBadge(f.risk.KEV)}</td>
                  <td>${layerLink(f.layer)}</td>
                </tr>`,
            ),
          )
    }`;
}

/** Every package with the layer that added it; collapsed when there are many. */
function packagesSection(packages: readonly ImagePackage[], layerOf: (p: ImagePackage) => number): Html {
  const packagesTable = table(
    html`Packages (<span data-testid="package-count">${count(packages.length)}</span>)`,
    ['Package', 'Version', 'Namespace', 'Layer'],
    packages.map(
      (p) =>
        html`<tr data-testid="package" data-package="${p.name}">
          <th scope="row">${p.name}</th>
          <td><code>${p.version}</code></td>
          <td>${p.namespace}</td>
          <td>${layerLink(layerOf(p))}</td>
        </tr>`,
    ),
  );
  return html`<h2 id="packages">Packages</h2>
    ${
      packages.length > OPEN_PACKAGES
        ? html`<details>
            <summary>Show all ${count(packages.length)} packages</summary>
            ${packagesTable}
          </details>`
        : packagesTable
    }`;
}
