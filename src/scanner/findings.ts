import { cvssScores } from '../model/cvss.js';
import { countFindings, type FindingCounts } from '../model/finding-counts.js';
import { severityRank, type Severity } from '../model/vulnerability.js';
import { TARSIER_VERSION } from '../version.js';
import type { ScannedContents } from './backend.js';
import { ignoreEntryFor, type IgnoreEntry } from './ignore.js';
import type { LocalImageKind } from './local-image.js';
import { packageUrl } from './purl.js';
import type { RiskContext } from '../model/risk.js';
import {
  SCAN_REPORT_VERSION,
  type Finding,
  type IgnoredFinding,
  type ReportCvss,
  type ReportEpss,
  type ReportKev,
  type ReportPackage,
  type ScanReport,
} from './report.js';

/**
 * From what a scan found to the report: each (vulnerability, package) pair a finding; findings
 * without a fix (--ignore-unfixed) or named in the ignore file set aside with the reason; the gate
 * decided on what remains (a severity threshold, and with failOnKev any finding CISA's KEV lists).
 */

export interface ReportOptions {
  input: string;
  kind: LocalImageKind | 'registry' | 'sbom';
  database: ScanReport['database'];
  ignoreUnfixed: boolean;
  ignore: readonly IgnoreEntry[];
  failOn: Severity | undefined;
  failOnKev: boolean;
  now: Date;
}

/** The score outputs show: CVSS v3 when known, else v2. */
function preferredCvss(metadata: Readonly<Record<string, unknown>> | null): ReportCvss | undefined {
  const scores = cvssScores(metadata);
  const chosen = scores?.v3 ? { version: '3' as const, ...scores.v3 } : scores?.v2 ? { version: '2' as const, ...scores.v2 } : undefined;
  return (
    chosen && { version: chosen.version, score: chosen.score, ...(chosen.vector ? { vector: chosen.vector } : {}), source: scores!.source }
  );
}

/** The risk context as the report's fields, each with the CVE it came from. */
function riskFields(risk: RiskContext): Pick<Finding, 'epss' | 'kev'> {
  const { epss, kev } = risk;
  return {
    ...(epss ? { epss: { score: epss.score, percentile: epss.percentile, date: epss.date, cve: epss.cve } } : {}),
    ...(kev
      ? {
          kev: { dateAdded: kev.dateAdded, dueDate: kev.dueDate, knownRansomwareCampaignUse: kev.knownRansomwareCampaignUse, cve: kev.cve },
        }
      : {}),
  };
}

/** Code-unit order: the same on every machine (localeCompare follows the locale the scan runs in). */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Most severe first, then by id and package, so every output lists findings in the same order. */
export function compareFindings(a: Finding, b: Finding): number {
  return (
    severityRank(b.severity) - severityRank(a.severity) ||
    compareText(a.id, b.id) ||
    compareText(a.package.name, b.package.name) ||
    compareText(a.package.version, b.package.version)
  );
}

export function buildReport(contents: ScannedContents, options: ReportOptions): ScanReport {
  const packages: ReportPackage[] = contents.packages.map((p) => ({
    name: p.name,
    version: p.version,
    namespace: p.namespace,
    versionFormat: p.versionFormat,
    purl: packageUrl(p),
    ...(p.addedBy !== undefined ? { layer: p.addedBy } : {}),
  }));
  const vulnerabilities: Finding[] = [];
  const ignored: IgnoredFinding[] = [];
  contents.packages.forEach((p, i) => {
    for (const v of p.vulnerabilities) {
      const cvss = preferredCvss(v.metadata);
      const finding: Finding = {
        id: v.name,
        namespace: v.namespace,
        severity: v.severity,
        description: v.description,
        link: v.link,
        package: packages[i]!,
        fixedBy: v.fixedBy,
        fixState: v.fixState === 'not_affected' ? 'affected' : v.fixState,
        ...(cvss ? { cvss } : {}),
        ...riskFields(v.risk),
        ...(v.metadata ? { metadata: v.metadata } : {}),
      };
      const entry = ignoreEntryFor(options.ignore, { id: v.name, packageName: p.name }, options.now);
      if (entry) {
        ignored.push({
          ...finding,
          ignored: {
            because: 'ignore-file',
            ...(entry.reason !== undefined ? { reason: entry.reason } : {}),
            ...(entry.expires !== undefined ? { expires: entry.expires } : {}),
          },
        });
      } else if (options.ignoreUnfixed && v.fixedBy === null) {
        ignored.push({ ...finding, ignored: { because: 'unfixed' } });
      } else {
        vulnerabilities.push(finding);
      }
    }
  });
  vulnerabilities.sort(compareFindings);
  ignored.sort(compareFindings);
  const counts = countReportFindings(vulnerabilities);
  const failOn = options.failOn ?? null;
  const { failOnKev } = options;
  return {
    schemaVersion: SCAN_REPORT_VERSION,
    tool: { name: 'tarsier', version: TARSIER_VERSION },
    createdAt: options.now.toISOString(),
    target: {
      input: options.input,
      kind: options.kind,
      digest: contents.digest,
      platform: contents.platform,
      references: contents.references,
    },
    layers: contents.layers,
    database: options.database,
    packages,
    ...(contents.skipped ? { skipped: [...contents.skipped] } : {}),
    ...(contents.unread && contents.unread.count > 0
      ? { unread: { count: contents.unread.count, files: [...contents.unread.files] } }
      : {}),
    vulnerabilities,
    ignored,
    summary: summaryOf(counts),
    knownExploited: counts.knownExploited,
    gate: {
      failOn,
      failOnKev,
      failed:
        (failOn !== null && vulnerabilities.some((f) => severityRank(f.severity) >= severityRank(failOn))) ||
        (failOnKev && vulnerabilities.some((f) => f.kev)),
    },
  };
}

/** Findings grouped by vulnerability id, in the order each id first appears. */
export function findingsById(findings: readonly Finding[]): Map<string, Finding[]> {
  const groups = new Map<string, Finding[]>();
  for (const finding of findings) {
    const group = groups.get(finding.id);
    if (group) group.push(finding);
    else groups.set(finding.id, [finding]);
  }
  return groups;
}

/**
 * The risk context of one vulnerability id's findings, for formats that write one entry per id:
 * the highest EPSS score and the earliest KEV entry (the same on every finding of an id, as both
 * follow from the id alone).
 */
export function riskOfFindings(findings: readonly Finding[]): { epss?: ReportEpss; kev?: ReportKev } {
  let epss: ReportEpss | undefined;
  let kev: ReportKev | undefined;
  for (const f of findings) {
    if (f.epss && (!epss || f.epss.score > epss.score)) epss = f.epss;
    if (f.kev && (!kev || f.kev.dateAdded < kev.dateAdded)) kev = f.kev;
  }
  return { ...(epss ? { epss } : {}), ...(kev ? { kev } : {}) };
}

/** The counts (countFindings) of a report's findings: each vulnerability id once, at the highest severity it has. */
export function countReportFindings(findings: readonly Finding[]): FindingCounts {
  return countFindings(findings.map((f) => ({ name: f.id, severity: f.severity, fixedBy: f.fixedBy, risk: { kev: f.kev } })));
}

/** A report's summary: how many vulnerability ids of each severity. */
function summaryOf(counts: FindingCounts): Record<string, number> {
  return Object.fromEntries(Object.entries(counts.bySeverity).map(([severity, c]) => [severity, c.total]));
}
