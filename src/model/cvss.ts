/**
 * CVSS scores from a vulnerability's metadata (`{ NVD: { CVSSv3: { Score, Vectors }, CVSSv2: {...} } }`,
 * as the NVD enrichment writes it; other sources may add their own under their name): NVD's when it
 * has a score, else the first source's that does. One reading for every output that shows a score.
 */
export interface CvssScore {
  score: number;
  /** Absent when the source gave none. */
  vector?: string;
  /** For an advisory listing several CVEs: the one the score is of (as enrichmentFor writes it). */
  cve?: string;
}

export interface CvssScores {
  /** The metadata key the scores came from (NVD, or another source's name). */
  source: string;
  v3?: CvssScore;
  v2?: CvssScore;
}

export function cvssScores(metadata: Readonly<Record<string, unknown>> | null | undefined): CvssScores | undefined {
  if (!metadata) return undefined;
  const names = ['NVD', ...Object.keys(metadata).filter((k) => k !== 'NVD')];
  for (const source of names) {
    const scores = metadata[source];
    if (typeof scores !== 'object' || scores === null) continue;
    const found: CvssScores = { source };
    for (const [scheme, key] of [
      ['CVSSv3', 'v3'],
      ['CVSSv2', 'v2'],
    ] as const) {
      const cvss = (scores as Record<string, unknown>)[scheme];
      if (typeof cvss !== 'object' || cvss === null) continue;
      const { Score, Vectors, CVE } = cvss as Record<string, unknown>;
      if (typeof Score !== 'number' || !Number.isFinite(Score)) continue;
      found[key] = {
        score: Score,
        ...(typeof Vectors === 'string' && Vectors !== '' ? { vector: Vectors } : {}),
        ...(typeof CVE === 'string' && CVE !== '' ? { cve: CVE } : {}),
      };
    }
    if (found.v3 || found.v2) return found;
  }
  return undefined;
}
