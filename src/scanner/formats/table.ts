import { allSeverities } from '../../model/finding-counts.js';
import { SEVERITIES, severityRank, type Severity } from '../../model/vulnerability.js';
import { compareText, countReportFindings } from '../findings.js';
import { epssText, fixText, type Finding, type ReportKev, type ReportPackage, type ScanReport } from '../report.js';

/**
 * The report for people reading a terminal or a CI log: what was scanned, then the findings
 * grouped by package, most severe first, then one summary line. Columns are aligned with spaces
 * across the whole table, so they line up from one package to the next. Beside the fix, each
 * finding's EPSS score and, when CISA's catalog lists it, `KEV` and the day it was added: the
 * marker a reader (or grep) looks for in a CI log. Those two columns appear when a finding has a
 * value in them; the summary line counts the known exploited in any case.
 */

const RESET = '\u001b[0m';
const SEVERITY_COLORS: Readonly<Partial<Record<Severity, string>>> = {
  Defcon1: '\u001b[1;31m',
  Critical: '\u001b[1;31m',
  High: '\u001b[31m',
  Medium: '\u001b[33m',
};

/** Known exploited stands out as the most severe findings do. */
const KEV_COLOR = '\u001b[1;31m';

const NO_FIX = 'no fix';

interface Column {
  readonly heading: string;
  readonly cell: (finding: Finding) => string;
  /** A cell's colour code, when colours are on. */
  readonly color?: (cell: string) => string | undefined;
  /** Left out when no finding has a value in it: a scan without risk context reads as it did before. */
  readonly optional?: boolean;
}

const COLUMNS: readonly Column[] = [
  { heading: 'VULNERABILITY', cell: (f) => f.id },
  { heading: 'SEVERITY', cell: (f) => f.severity, color: (cell) => SEVERITY_COLORS[cell as Severity] },
  { heading: 'FIXED BY', cell: (f) => f.fixedBy ?? (f.fixState === 'affected' ? NO_FIX : fixText(f)) },
  { heading: 'EPSS', cell: (f) => (f.epss ? epssText(f.epss) : ''), optional: true },
  { heading: 'KNOWN EXPLOITED', cell: (f) => (f.kev ? kevCell(f.kev) : ''), color: () => KEV_COLOR, optional: true },
  { heading: 'LINK', cell: (f) => f.link },
];

interface PackageGroup {
  readonly pkg: ReportPackage;
  /** Most severe first, then by id. */
  readonly findings: Finding[];
}

export function tableReport(report: ScanReport, options: { color: boolean }): string {
  const lines = header(report);
  const groups = packageGroups(report.vulnerabilities);
  if (groups.length > 0) {
    const findings = groups.flatMap((g) => g.findings);
    const columns = COLUMNS.filter((c) => !c.optional || findings.some((f) => c.cell(f) !== ''));
    const widths = columns.map((c) => Math.max(c.heading.length, ...findings.map((f) => c.cell(f).length)));
    const colorOf = options.color ? (column: number, cell: string) => columns[column]!.color?.(cell) : undefined;
    const headings = columns.map((c) => c.heading);
    lines.push('', formatRow(headings, widths, undefined));
    for (const group of groups) {
      const { name, version, namespace, layer } = group.pkg;
      lines.push('', `${name} ${version} (${namespace}${layer === undefined ? '' : `, layer ${shortDigest(layer)}`})`);
      for (const finding of group.findings) {
        const row = columns.map((c) => c.cell(finding));
        lines.push(formatRow(row, widths, colorOf));
      }
    }
  }
  lines.push('', summaryLine(report));
  return `${lines.join('\n')}\n`;
}

function header(report: ScanReport): string[] {
  const { target, database } = report;
  const source = database.mode === 'server' && database.server ? `server ${database.server}` : database.mode;
  const data = database.namespaces.map((n) => {
    const from = n.sources.length > 0 ? `, from ${n.sources.join(', ')}` : '';
    if (n.state === 'missing') return `${n.namespace}: NO DATA (its packages were not matched)`;
    if (n.updatedAt === null) return `${n.namespace}: age not recorded${from}`;
    const when = `updated ${n.updatedAt} (${age(Date.parse(report.createdAt) - Date.parse(n.updatedAt))} before this scan${from})`;
    return `${n.namespace}: ${when}${n.state === 'stale' ? ', STALE' : ''}`;
  });
  return [
    `Target:    ${target.input} (${target.kind})`,
    `Digest:    ${target.digest}`,
    `Platform:  ${target.platform ?? 'unknown'}`,
    `Database:  ${source}`,
    ...(report.skipped && report.skipped.length > 0
      ? [
          `Skipped:   ${count(report.skipped.length, 'component')} of the SBOM not matched (no package URL Tarsier reads; see --format json)`,
        ]
      : []),
    ...(report.unread
      ? [`Unread:    ${count(report.unread.count, 'file')} that may hold packages could not be read (see --format json)`]
      : []),
    ...(data.length > 0
      ? data.map((line, i) => `${i === 0 ? 'Data:' : ''}`.padEnd(11) + line)
      : ['Data:      none needed (no package of a known distribution)']),
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

/** `KEV 2022-05-03`, and `, ransomware` when CISA knows it used in ransomware campaigns. */
function kevCell(kev: ReportKev): string {
  return `KEV ${kev.dateAdded}${kev.knownRansomwareCampaignUse === 'Known' ? ', ransomware' : ''}`;
}

/** Cells padded to their column; coloured when colorOf gives a colour, their padding left plain. */
function formatRow(
  row: readonly string[],
  widths: readonly number[],
  colorOf: ((column: number, cell: string) => string | undefined) | undefined,
): string {
  const padded = row.map((cell, column) => {
    const padding = ' '.repeat(widths[column]! - cell.length);
    const code = cell === '' ? undefined : colorOf?.(column, cell);
    return code ? `${code}${cell}${RESET}${padding}` : cell + padding;
  });
  return `  ${padded.join('  ')}`.trimEnd();
}

function shortDigest(digest: string): string {
  return digest.slice(digest.indexOf(':') + 1, digest.indexOf(':') + 13);
}

/** Counts distinct vulnerability ids, as report.summary and report.knownExploited do. */
function summaryLine(report: ScanReport): string {
  const ignoredIds = new Set(report.ignored.map((f) => f.id)).size;
  const ignored = ignoredIds === 0 ? '' : `; ${ignoredIds} ignored`;
  const total = Object.values(report.summary).reduce((sum, n) => sum + n, 0);
  if (total === 0) return `No vulnerabilities found (${count(report.packages.length, 'package')})${ignored}`;
  const bySeverity = SEVERITIES.toReversed()
    .filter((severity) => (report.summary[severity] ?? 0) > 0)
    .map((severity) => `${report.summary[severity]} ${severity}`);
  const { fixable } = allSeverities(countReportFindings(report.vulnerabilities));
  const counts = `${fixable} fixable, ${report.knownExploited} known exploited`;
  return `${total === 1 ? '1 vulnerability' : `${total} vulnerabilities`}: ${bySeverity.join(', ')} (${counts})${ignored}`;
}
