import { SEVERITIES, severityRank, type Severity } from '../../model/vulnerability.js';
import { fixText, type Finding, type ReportPackage, type ScanReport } from '../report.js';

/**
 * The report for people reading a terminal or a CI log: what was scanned, then the findings
 * grouped by package, most severe first, then one summary line. Columns are aligned with spaces
 * across the whole table, so they line up from one package to the next.
 */

const RESET = '\u001b[0m';
const SEVERITY_COLORS: Readonly<Partial<Record<Severity, string>>> = {
  Defcon1: '\u001b[1;31m',
  Critical: '\u001b[1;31m',
  High: '\u001b[31m',
  Medium: '\u001b[33m',
};

const HEADINGS = ['VULNERABILITY', 'SEVERITY', 'FIXED BY', 'LINK'] as const;
const NO_FIX = 'no fix';

interface PackageGroup {
  readonly pkg: ReportPackage;
  /** Most severe first, then by id. */
  readonly findings: Finding[];
}

export function tableReport(report: ScanReport, options: { color: boolean }): string {
  const lines = header(report);
  const groups = packageGroups(report.vulnerabilities);
  if (groups.length > 0) {
    const rows = groups.flatMap((g) => g.findings.map(cells));
    const widths = HEADINGS.map((heading, column) => Math.max(heading.length, ...rows.map((row) => row[column]!.length)));
    lines.push('', formatRow(HEADINGS, widths, false));
    for (const group of groups) {
      const { name, version, namespace, layer } = group.pkg;
      lines.push('', `${name} ${version} (${namespace}, layer ${shortDigest(layer)})`);
      for (const finding of group.findings) lines.push(formatRow(cells(finding), widths, options.color));
    }
  }
  lines.push('', summaryLine(report));
  return `${lines.join('\n')}\n`;
}

function header(report: ScanReport): string[] {
  const { target, database } = report;
  const source = database.mode === 'server' && database.server ? `server ${database.server}` : database.mode;
  const updated =
    database.updatedAt === null
      ? 'never updated'
      : `updated ${database.updatedAt} (${age(Date.parse(report.createdAt) - Date.parse(database.updatedAt))} before this scan)`;
  return [
    `Target:    ${target.input} (${target.kind})`,
    `Digest:    ${target.digest}`,
    `Platform:  ${target.platform ?? 'unknown'}`,
    `Database:  ${source}, ${updated}`,
  ];
}

function age(milliseconds: number): string {
  const minutes = Math.max(0, Math.floor(milliseconds / 60_000));
  if (minutes < 120) return count(minutes, 'minute');
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? count(hours, 'hour') : count(Math.floor(hours / 24), 'day');
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** Packages in order of their most severe finding, then name and version. */
function packageGroups(findings: readonly Finding[]): PackageGroup[] {
  const groups = new Map<string, PackageGroup>();
  for (const finding of findings) {
    const { name, version, namespace, layer } = finding.package;
    const key = JSON.stringify([name, version, namespace, layer]);
    const group = groups.get(key);
    if (group) group.findings.push(finding);
    else groups.set(key, { pkg: finding.package, findings: [finding] });
  }
  const sorted = [...groups.values()];
  for (const group of sorted) group.findings.sort((a, b) => severityRank(b.severity) - severityRank(a.severity) || compareText(a.id, b.id));
  return sorted.sort(
    (a, b) =>
      severityRank(b.findings[0]!.severity) - severityRank(a.findings[0]!.severity) ||
      compareText(a.pkg.name, b.pkg.name) ||
      compareText(a.pkg.version, b.pkg.version),
  );
}

/** Code-unit order, the same on every machine (localeCompare depends on the locale). */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function cells(finding: Finding): string[] {
  return [finding.id, finding.severity, finding.fixedBy ?? (finding.fixState === 'affected' ? NO_FIX : fixText(finding)), finding.link];
}

/** Cells padded to their column; the severity column coloured when asked, its padding left plain. */
function formatRow(row: readonly string[], widths: readonly number[], color: boolean): string {
  const padded = row.map((cell, column) => {
    const padding = ' '.repeat(widths[column]! - cell.length);
    const code = color && column === 1 ? SEVERITY_COLORS[cell as Severity] : undefined;
    return code ? `${code}${cell}${RESET}${padding}` : cell + padding;
  });
  return `  ${padded.join('  ')}`.trimEnd();
}

function shortDigest(digest: string): string {
  return digest.slice(digest.indexOf(':') + 1, digest.indexOf(':') + 13);
}

/** Counts distinct vulnerability ids, as report.summary does. */
function summaryLine(report: ScanReport): string {
  const ignoredIds = new Set(report.ignored.map((f) => f.id)).size;
  const ignored = ignoredIds === 0 ? '' : `; ${ignoredIds} ignored`;
  const total = Object.values(report.summary).reduce((sum, n) => sum + n, 0);
  if (total === 0) return `No vulnerabilities found (${count(report.packages.length, 'package')})${ignored}`;
  const bySeverity = SEVERITIES.toReversed()
    .filter((severity) => (report.summary[severity] ?? 0) > 0)
    .map((severity) => `${report.summary[severity]} ${severity}`);
  const fixable = new Set(report.vulnerabilities.filter((f) => f.fixedBy !== null).map((f) => f.id)).size;
  return `${total === 1 ? '1 vulnerability' : `${total} vulnerabilities`}: ${bySeverity.join(', ')} (${fixable} fixable)${ignored}`;
}
