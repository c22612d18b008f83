import { riskMetadata } from '../../model/risk.js';
import type { ImageContents } from '../../images/report.js';
import type { Queryable } from '../../store/pool.js';
import { TARSIER_VERSION } from '../../version.js';
import { serviceStatus } from '../v3/operations.js';
import {
  CAPABILITY_TYPE,
  CONSUMED_MIME_TYPES,
  harborSeverity,
  highestSeverity,
  MIME_VULN_REPORT_V1_1,
  preferredCvss,
  PROPERTY_DB_UPDATED_AT,
  PROPERTY_REGISTRY_AUTHORIZATION_TYPE,
  PROPERTY_SCANNER_TYPE,
  SEVERITIES,
  type Artifact,
  type HarborVulnerabilityReport,
  type Scanner,
  type ScannerAdapterMetadata,
  type VulnerabilityItem,
} from './spec.js';

/** What Tarsier tells Harbor about itself, and how it fills a Pluggable Scanner API report. */

export const TARSIER_SCANNER: Scanner = { name: 'Tarsier', vendor: 'Tarsier', version: TARSIER_VERSION };

/**
 * GET /metadata. The database date is the last successful updater run of any source (absent
 * before the first). Harbor is asked for Basic registry authorization: its robot account's
 * credentials, which the registry client uses for a Bearer challenge as well.
 */
export async function scannerMetadata(db: Queryable): Promise<ScannerAdapterMetadata> {
  const updatedAt = (await serviceStatus(db)).last_update_time;
  return {
    scanner: TARSIER_SCANNER,
    capabilities: [{ type: CAPABILITY_TYPE, consumes_mime_types: [...CONSUMED_MIME_TYPES], produces_mime_types: [MIME_VULN_REPORT_V1_1] }],
    properties: {
      [PROPERTY_SCANNER_TYPE]: 'os-package-vulnerability',
      ...(updatedAt ? { [PROPERTY_DB_UPDATED_AT]: updatedAt } : {}),
      [PROPERTY_REGISTRY_AUTHORIZATION_TYPE]: 'Basic',
    },
  };
}

/**
 * The report of a scanned image: one item per vulnerability and affected package. Harbor keys a
 * finding on id, package and version, so a pair two namespaces both report is sent once, at the
 * higher severity.
 */
export function harborReport(contents: ImageContents, artifact: Artifact, generatedAt: Date): HarborVulnerabilityReport {
  const items = new Map<string, VulnerabilityItem>();
  for (const pkg of contents.packages) {
    for (const v of pkg.vulnerabilities) {
      const cvss = preferredCvss(v.metadata);
      const risk = riskMetadata(v.name, v.risk);
      const item: VulnerabilityItem = {
        id: v.name,
        package: pkg.name,
        version: pkg.version,
        // Harbor counts any fix_version as a fix: none is left out, never Clair's "None".
        ...(v.fixedBy !== null ? { fix_version: v.fixedBy } : {}),
        severity: harborSeverity(v.severity),
        ...(v.description !== '' ? { description: v.description } : {}),
        ...(v.link !== '' ? { links: [v.link] } : {}),
        ...(cvss ? { preferred_cvss: cvss } : {}),
        // EPSS and KEV, as v1's Metadata keys: Harbor keeps vendor attributes with the report.
        ...(Object.keys(risk).length > 0 ? { vendor_attributes: risk } : {}),
      };
      const key = JSON.stringify([item.id, item.package, item.version]);
      const known = items.get(key);
      if (!known || SEVERITIES.indexOf(item.severity) > SEVERITIES.indexOf(known.severity)) items.set(key, item);
    }
  }
  const vulnerabilities = [...items.values()];
  const severity = highestSeverity(vulnerabilities.map((item) => item.severity));
  return {
    generated_at: generatedAt.toISOString(),
    artifact,
    scanner: TARSIER_SCANNER,
    ...(severity ? { severity } : {}),
    vulnerabilities,
  };
}
