import { createHash } from 'node:crypto';
import { isAbsolute, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { severityRank, type Severity } from '../../model/vulnerability.js';
import { packageFormat } from '../../ecosystems/index.js';
import { findingsById, riskOfFindings } from '../findings.js';
import { epssText, fixText, type Finding, type ReportEpss, type ReportKev, type ScanReport } from '../report.js';

/**
 * SARIF 2.1.0, shaped for GitHub code scanning: one rule per vulnerability id, one result per
 * affected package. An image has no source lines, so each result points at line 1 of the package
 * database that lists the package (an SBOM's at the document itself); the image and layer go in
 * logical locations and the message.
 * EPSS and KEV go in the rule's properties and its help, and KEV in each result's message; they
 * leave `security-severity` alone, which stays the CVSS score GitHub ranks alerts by.
 */

const SARIF_SCHEMA = 'https://json.schemastore.org/sarif-2.1.0.json';

type Level = 'error' | 'warning' | 'note';

const LEVELS: Readonly<Record<Severity, Level>> = {
  Unknown: 'note',
  Negligible: 'note',
  Low: 'note',
  Medium: 'warning',
  High: 'error',
  Critical: 'error',
  Defcon1: 'error',
};

/**
 * GitHub ranks alerts by `security-severity`: 9.0 and above critical, 7.0–8.9 high, 4.0–6.9
 * medium, 0.1–3.9 low. Without a CVSS score, each severity maps inside its bucket.
 */
const SECURITY_SEVERITY: Readonly<Record<Severity, string>> = {
  Unknown: '0.0',
  Negligible: '0.5',
  Low: '2.0',
  Medium: '5.5',
  High: '8.0',
  Critical: '9.5',
  Defcon1: '10.0',
};

/** GitHub code scanning's limit on a rule's short and full description. */
const MAX_DESCRIPTION = 1024;

/** The same line for every result: a whole-file location GitHub accepts. */
const FIRST_LINE = { startLine: 1, startColumn: 1, endLine: 1, endColumn: 1 };

export function sarifReport(report: ScanReport): Record<string, unknown> {
  const groups = findingsById(report.vulnerabilities);
  const ruleIndex = new Map([...groups.keys()].map((id, index) => [id, index]));
  const { target } = report;
  return {
    $schema: SARIF_SCHEMA,
    version: '2.1.0',
    runs: [
      {
        tool: { driver: { name: 'Tarsier', version: report.tool.version, rules: [...groups.values()].map(rule) } },
        columnKind: 'utf16CodeUnits',
        results: report.vulnerabilities.map((finding) => result(report, finding, ruleIndex.get(finding.id)!)),
        properties: {
          image: target.input,
          imageDigest: target.digest,
          ...(target.platform === null ? {} : { platform: target.platform }),
          references: target.references,
        },
      },
    ],
  };
}

function rule(findings: readonly Finding[]): Record<string, unknown> {
  const { id } = findings[0]!;
  const severity = highestSeverity(findings);
  const risk = riskOfFindings(findings);
  const packages = [...new Set(findings.map((f) => f.package.name))].join(', ');
  const summary = `${id} (${severity}${risk.kev ? ', known exploited' : ''}) in ${packages}`;
  const description = findings.find((f) => f.description !== '')?.description ?? summary;
  const link = findings.find((f) => f.link !== '')?.link ?? '';
  const help = { findings, severity, description, link, ...risk };
  return {
    id,
    name: id,
    shortDescription: { text: truncate(summary) },
    fullDescription: { text: truncate(description) },
    help: { text: helpText(help), markdown: helpMarkdown(help) },
    // The schema wants a URI here, and an upload that fails the schema is refused whole.
    ...(URL.canParse(link) ? { helpUri: link } : {}),
    defaultConfiguration: { level: LEVELS[severity] },
    properties: {
      tags: ['vulnerability', 'security', severity, ...(risk.kev ? ['known-exploited'] : [])],
      'security-severity': securitySeverity(findings, severity),
      ...(risk.epss ? epssProperties(risk.epss) : {}),
      ...(risk.kev ? kevProperties(risk.kev) : {}),
    },
  };
}

function epssProperties(epss: ReportEpss): Record<string, unknown> {
  return { epss: epss.score, epssPercentile: epss.percentile, epssDate: epss.date, epssCve: epss.cve };
}

function kevProperties(kev: ReportKev): Record<string, unknown> {
  return {
    kev: true,
    kevDateAdded: kev.dateAdded,
    ...(kev.dueDate === '' ? {} : { kevDueDate: kev.dueDate }),
    kevKnownRansomwareCampaignUse: kev.knownRansomwareCampaignUse,
    kevCve: kev.cve,
  };
}

function highestSeverity(findings: readonly Finding[]): Severity {
  return findings.reduce<Severity>((max, f) => (severityRank(f.severity) > severityRank(max) ? f.severity : max), 'Unknown');
}

/** The highest CVSS score among the findings, else the severity's place in GitHub's buckets. */
function securitySeverity(findings: readonly Finding[], severity: Severity): string {
  const scores = findings.flatMap((f) => (f.cvss ? [f.cvss.score] : []));
  return scores.length > 0 ? Math.max(...scores).toFixed(1) : SECURITY_SEVERITY[severity];
}

function truncate(text: string): string {
  return text.length <= MAX_DESCRIPTION ? text : `${text.slice(0, MAX_DESCRIPTION - 1)}…`;
}

function fixPhrase(finding: Finding): string {
  return finding.fixedBy === null ? fixText(finding) : `fixed in ${finding.fixedBy}`;
}

interface Help {
  readonly findings: readonly Finding[];
  readonly severity: Severity;
  readonly description: string;
  readonly link: string;
  readonly epss?: ReportEpss;
  readonly kev?: ReportKev;
}

/** `Known exploited (CISA KEV, added 2022-05-03)`: the help's line, and the start of each result's message. */
function kevText(kev: ReportKev): string {
  return `Known exploited (CISA KEV, added ${kev.dateAdded})`;
}

/** What the help says of the risk context, one line each: KEV with its due date, EPSS with its day; the CVE when not the id. */
function riskLines({ findings, epss, kev }: Help): string[] {
  const { id } = findings[0]!;
  const through = (cve: string) => (cve === id ? '' : `, through ${cve}`);
  const lines: string[] = [];
  if (kev) {
    const due = kev.dueDate === '' ? '' : `; remediation due ${kev.dueDate}`;
    const ransomware = kev.knownRansomwareCampaignUse === 'Known' ? '; known to be used in ransomware campaigns' : '';
    lines.push(`${kevText(kev)}${through(kev.cve)}${due}${ransomware}`);
  }
  if (epss) lines.push(`EPSS ${epssText(epss)}, scored ${epss.date}${through(epss.cve)}`);
  return lines;
}

function helpText(help: Help): string {
  const { findings, severity, description, link } = help;
  const risk = riskLines(help);
  const lines = [
    `${findings[0]!.id} (${severity})`,
    ...(risk.length > 0 ? ['', ...risk] : []),
    '',
    description,
    '',
    ...findings.map((f) => `${f.package.name} ${f.package.version} (${f.package.namespace}): ${fixPhrase(f)}`),
  ];
  if (link !== '') lines.push('', link);
  return lines.join('\n');
}

function helpMarkdown(help: Help): string {
  const { findings, severity, description, link } = help;
  const { id } = findings[0]!;
  const cell = (text: string) => text.replaceAll('|', '\\|');
  // Two spaces end a line in Markdown: the KEV and EPSS lines stay apart.
  const risk = riskLines(help).map((line, i) => (i === 0 && help.kev ? `**${line}**` : line));
  return [
    `**${link === '' ? id : `[${id}](${link})`}** (${severity})`,
    ...(risk.length > 0 ? ['', risk.join('  \n')] : []),
    '',
    description,
    '',
    '| Package | Installed version | Namespace | Fixed version |',
    '| --- | --- | --- | --- |',
    ...findings.map((f) => `| ${[f.package.name, f.package.version, f.package.namespace, fixText(f)].map(cell).join(' | ')} |`),
  ].join('\n');
}

function result(report: ScanReport, finding: Finding, ruleIndex: number): Record<string, unknown> {
  const { package: pkg, id, severity } = finding;
  const image = `${report.target.input}@${report.target.digest}`;
  // Known exploited first, where a truncated list of alerts still shows it.
  const known = finding.kev ? `${kevText(finding.kev)}: ` : '';
  const affected = `${pkg.name} ${pkg.version} (${pkg.namespace}) is affected by ${id} (${severity}); ${fixPhrase(finding)}`;
  return {
    ruleId: id,
    ruleIndex,
    level: LEVELS[severity],
    message: { text: known + affected },
    locations: [
      {
        physicalLocation: {
          artifactLocation: { uri: report.target.kind === 'sbom' ? fileUri(report.target.input) : packageDatabase(pkg.versionFormat) },
          region: FIRST_LINE,
        },
        logicalLocations: [
          { name: report.target.input, fullyQualifiedName: image, kind: 'image' },
          ...(pkg.layer === undefined ? [] : [{ name: pkg.layer, fullyQualifiedName: `${image}/${pkg.layer}`, kind: 'layer' }]),
        ],
        message: {
          text: `${pkg.name} ${pkg.version}, ${pkg.layer === undefined ? 'listed in the SBOM' : `added by layer ${pkg.layer} of`} ${image}`,
        },
      },
    ],
    partialFingerprints: { 'tarsier/v1': fingerprint(report, finding) },
  };
}

/** A file named on the command line as a SARIF location: a relative path as it is (a repository's file), else a file URI. */
function fileUri(path: string): string {
  return isAbsolute(path) ? pathToFileURL(path).href : path.split(sep).join('/');
}

/**
 * The file inside the image the package's format lists its packages in (its catalog row); a format
 * the catalog does not hold (none today) points at the image's root directory.
 */
function packageDatabase(versionFormat: string): string {
  return packageFormat(versionFormat)?.databaseLocation ?? '.';
}

/**
 * Identifies the alert across scans: the image as named (not its digest, which every rebuild
 * changes), the vulnerability, and the package by name and release, so a new package version
 * that is still affected stays the same alert.
 */
function fingerprint(report: ScanReport, finding: Finding): string {
  return createHash('sha256')
    .update([finding.id, finding.package.name, finding.package.namespace, report.target.input].join('|'))
    .digest('hex');
}
