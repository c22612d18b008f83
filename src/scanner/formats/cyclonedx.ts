import { randomUUID } from 'node:crypto';
import type { Severity } from '../../model/vulnerability.js';
import { findingsById, riskOfFindings } from '../findings.js';
import type { Finding, ReportCvss, ReportPackage, ScanReport } from '../report.js';

/**
 * CycloneDX 1.6 JSON: the image as the BOM's subject, every package in it as a component
 * (bom-ref = its purl), and one vulnerability per id, whose `affects` names the components.
 * CycloneDX has no field for EPSS or KEV (and EPSS is no rating: it scores likelihood, not
 * severity), so they are the vulnerability's properties, `tarsier:epss:*` and `tarsier:kev:*`.
 */

type CycloneDxSeverity = 'critical' | 'high' | 'medium' | 'low' | 'info' | 'none' | 'unknown';

const SEVERITIES: Readonly<Record<Severity, CycloneDxSeverity>> = {
  Unknown: 'unknown',
  Negligible: 'info',
  Low: 'low',
  Medium: 'medium',
  High: 'high',
  Critical: 'critical',
  Defcon1: 'critical',
};

/** options.serialNumber: the BOM's serialNumber (urn:uuid:…) instead of a random one, e.g. for reproducible output. */
export function cyclonedxReport(report: ScanReport, options: { serialNumber?: string } = {}): Record<string, unknown> {
  const { target } = report;
  // The image has no purl without a registry name; its digest is unique in the BOM all the same.
  const imageRef = target.digest;
  // Findings name packages of report.packages; adding theirs as well keeps every `affects` resolvable.
  const components = uniqueByPurl([...report.packages, ...report.vulnerabilities.map((f) => f.package)]);
  return {
    $schema: 'http://cyclonedx.org/schema/bom-1.6.schema.json',
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    serialNumber: options.serialNumber ?? `urn:uuid:${randomUUID()}`,
    version: 1,
    metadata: {
      timestamp: report.createdAt,
      tools: { components: [{ type: 'application', name: report.tool.name, version: report.tool.version }] },
      component: {
        // An SBOM may be of anything; what it is of, its own document says.
        type: target.kind === 'sbom' ? 'application' : 'container',
        'bom-ref': imageRef,
        name: target.input,
        version: target.digest,
        properties: [
          ...(target.platform === null ? [] : [{ name: 'tarsier:platform', value: target.platform }]),
          ...target.references.map((reference) => ({ name: 'tarsier:reference', value: reference })),
        ],
      },
    },
    components: components.map(component),
    dependencies: [{ ref: imageRef, dependsOn: components.map((p) => p.purl) }],
    vulnerabilities: [...findingsById(report.vulnerabilities).values()].map(vulnerability),
  };
}

/** The first package listed for each purl: a component is one per purl, whichever layers list it. */
function uniqueByPurl(packages: readonly ReportPackage[]): ReportPackage[] {
  const byPurl = new Map<string, ReportPackage>();
  for (const pkg of packages) if (!byPurl.has(pkg.purl)) byPurl.set(pkg.purl, pkg);
  return [...byPurl.values()];
}

function component(pkg: ReportPackage): Record<string, unknown> {
  return {
    type: 'library',
    'bom-ref': pkg.purl,
    name: pkg.name,
    version: pkg.version,
    purl: pkg.purl,
    properties: [
      ...(pkg.layer === undefined ? [] : [{ name: 'tarsier:layer', value: pkg.layer }]),
      { name: 'tarsier:namespace', value: pkg.namespace },
      { name: 'tarsier:version-format', value: pkg.versionFormat },
    ],
  };
}

function vulnerability(findings: readonly Finding[]): Record<string, unknown> {
  const first = findings[0]!;
  const link = findings.find((f) => f.link !== '')?.link ?? '';
  const description = findings.find((f) => f.description !== '')?.description ?? '';
  const upgrades = unique(findings.flatMap((f) => (f.fixedBy === null ? [] : [`Upgrade ${f.package.name} to ${f.fixedBy}`])));
  const properties = riskProperties(findings);
  return {
    'bom-ref': first.id,
    id: first.id,
    source: { name: first.namespace, ...(link === '' ? {} : { url: link }) },
    ratings: ratings(findings),
    ...(description === '' ? {} : { description }),
    ...(upgrades.length === 0 ? {} : { recommendation: upgrades.join('; ') }),
    ...(link === '' ? {} : { advisories: [{ url: link }] }),
    affects: uniqueByPurl(findings.map((f) => f.package)).map((pkg) => ({
      ref: pkg.purl,
      versions: [{ version: pkg.version, status: 'affected' }],
    })),
    ...(properties.length === 0 ? {} : { properties }),
  };
}

/** EPSS and KEV as properties, whose values are strings: numbers as JSON writes them, dates YYYY-MM-DD. */
function riskProperties(findings: readonly Finding[]): { name: string; value: string }[] {
  const { epss, kev } = riskOfFindings(findings);
  return [
    ...(epss
      ? [
          { name: 'tarsier:epss:score', value: String(epss.score) },
          { name: 'tarsier:epss:percentile', value: String(epss.percentile) },
          { name: 'tarsier:epss:date', value: epss.date },
          { name: 'tarsier:epss:cve', value: epss.cve },
        ]
      : []),
    ...(kev
      ? [
          { name: 'tarsier:kev:dateAdded', value: kev.dateAdded },
          ...(kev.dueDate === '' ? [] : [{ name: 'tarsier:kev:dueDate', value: kev.dueDate }]),
          { name: 'tarsier:kev:knownRansomwareCampaignUse', value: kev.knownRansomwareCampaignUse },
          { name: 'tarsier:kev:cve', value: kev.cve },
        ]
      : []),
  ];
}

/** Each distinct CVSS score, then each distribution's own severity (which has no score). */
function ratings(findings: readonly Finding[]): Record<string, unknown>[] {
  const cvss = findings.flatMap((f) => (f.cvss ? [cvssRating(f.cvss)] : []));
  const distributions = findings.map((f) => ({ source: { name: f.namespace }, severity: SEVERITIES[f.severity] }));
  return uniqueJson([...cvss, ...distributions]);
}

function cvssRating(cvss: ReportCvss): Record<string, unknown> {
  return {
    source: { name: cvss.source },
    score: cvss.score,
    severity: cvssSeverity(cvss),
    method: cvss.version === '2' ? 'CVSSv2' : cvss.vector?.startsWith('CVSS:3.1/') ? 'CVSSv31' : 'CVSSv3',
    ...(cvss.vector === undefined ? {} : { vector: cvss.vector }),
  };
}

/** The qualitative rating of a score, as each CVSS version's specification defines it. */
function cvssSeverity({ version, score }: ReportCvss): CycloneDxSeverity {
  if (version === '2') return score >= 7 ? 'high' : score >= 4 ? 'medium' : 'low';
  if (score >= 9) return 'critical';
  if (score >= 7) return 'high';
  if (score >= 4) return 'medium';
  return score > 0 ? 'low' : 'none';
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

function uniqueJson<T>(values: readonly T[]): T[] {
  return [...new Map(values.map((v) => [JSON.stringify(v), v])).values()];
}
