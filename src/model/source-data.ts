import { cveIdsOf, severityRank, type Vulnerability } from './vulnerability.js';

/**
 * What one upstream source says after parsing: complete vulnerability records (fixed-in lists
 * merged per vulnerability and namespace), and the namespaces the data is complete for. A live
 * vulnerability this updater wrote earlier in one of those namespaces that is missing from
 * `vulnerabilities` was withdrawn upstream.
 */
export interface SourceData {
  readonly namespaces: readonly string[];
  readonly vulnerabilities: readonly Vulnerability[];
}

/** NVD's contribution to a CVE: metadata under Metadata.NVD, and a severity from its CVSS scores. */
export interface Enrichment {
  /** { CVSSv3: { Score, Vectors }, CVSSv2: { Score, Vectors } } (either may be absent). */
  readonly nvd: Readonly<Record<string, { readonly Score: number; readonly Vectors: string }>>;
  /** Severity from CVSS (v3 preferred), for vulnerabilities whose source gave none. */
  readonly severity: 'Unknown' | 'Negligible' | 'Low' | 'Medium' | 'High' | 'Critical';
}

/**
 * NVD's data for a vulnerability: its own CVE's, or for an advisory listing CVEs (ALAS, RHSA,
 * ELSA) the highest score of each CVSS version among them, each with the CVE it came from, and the
 * highest severity. Undefined when NVD scored none of them.
 */
export function enrichmentFor(v: Pick<Vulnerability, 'name' | 'cves'>, nvd: ReadonlyMap<string, Enrichment>): Enrichment | undefined {
  if (v.name.startsWith('CVE-')) return nvd.get(v.name);
  let found: { nvd: Record<string, { Score: number; Vectors: string; CVE: string }>; severity: Enrichment['severity'] } | undefined;
  for (const cve of cveIdsOf(v)) {
    const e = nvd.get(cve);
    if (!e) continue;
    found ??= { nvd: {}, severity: e.severity };
    if (severityRank(e.severity) > severityRank(found.severity)) found.severity = e.severity;
    for (const [scheme, cvss] of Object.entries(e.nvd)) {
      const best = found.nvd[scheme];
      // Ties keep the CVE listed first.
      if (!best || cvss.Score > best.Score) found.nvd[scheme] = { Score: cvss.Score, Vectors: cvss.Vectors, CVE: cve };
    }
  }
  return found;
}
