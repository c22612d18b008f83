import type { Vulnerability } from '../model/vulnerability.js';

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
