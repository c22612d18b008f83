import { cvssScores } from '../model/cvss.js';
import { severityRank, type Severity } from '../model/vulnerability.js';
import { TARSIER_VERSION } from '../version.js';
import type { ScannedContents } from './backend.js';
import { ignoreEntryFor, type IgnoreEntry } from './ignore.js';
import type { LocalImageKind } from './local-image.js';
import { packageUrl } from './purl.js';
import { SCAN_REPORT_VERSION, type Finding, type IgnoredFinding, type ReportCvss, type ReportPackage, type ScanReport } from './report.js';

/**
 * From what a scan found to the report: each (vulnerability, package) pair a finding; findings
 * without a fix (--ignore-unfixed) or named in the ignore file set aside with the reason; the gate
 * decided on what remains.
 */

export interface ReportOptions {
  input: string;
  kind: LocalImageKind | 'registry';
  database: ScanReport['database'];
  ignoreUnfixed: boolean;
  ignore: readonly IgnoreEntry[];
  failOn: Severity | undefined;
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

/** Most severe first, then by id and package, so every output lists findings in the same order. */
export function compareFindings(a: Finding, b: Finding): number {
  return (
    severityRank(b.severity) - severityRank(a.severity) ||
    a.id.localeCompare(b.id) ||
    a.package.name.localeCompare(b.package.name) ||
    a.package.version.localeCompare(b.package.version)
  );
}

export function buildReport(contents: ScannedContents, options: ReportOptions): ScanReport {
  const packages: ReportPackage[] = contents.packages.map((p) => ({
    name: p.name,
    version: p.version,
    namespace: p.namespace,
    versionFormat: p.versionFormat,
    purl: packageUrl(p),
    layer: p.addedBy,
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
  const failOn = options.failOn ?? null;
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
    vulnerabilities,
    ignored,
    summary: summarize(vulnerabilities),
    gate: { failOn, failed: failOn !== null && vulnerabilities.some((f) => severityRank(f.severity) >= severityRank(failOn)) },
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

/** Distinct vulnerability ids per severity, each counted once at the highest severity it has. */
function summarize(findings: readonly Finding[]): Record<string, number> {
  const highest = new Map<string, Severity>();
  for (const f of findings) {
    const known = highest.get(f.id);
    if (!known || severityRank(f.severity) > severityRank(known)) highest.set(f.id, f.severity);
  }
  const summary: Record<string, number> = {};
  for (const severity of highest.values()) summary[severity] = (summary[severity] ?? 0) + 1;
  return summary;
}
