import cvssCalculator from 'ae-cvss-calculator';

/**
 * The base score of a CVSS vector as OSV records give them (`CVSS:3.1/AV:N/…`, `CVSS:4.0/…`, or a
 * v2 vector without a prefix), from the FIRST formulas as a maintained calculator implements them;
 * undefined for a vector it cannot read (a wrong or truncated vector scores nothing rather than a
 * guess).
 */
export function cvssBaseScore(vector: string): number | undefined {
  const { Cvss2, Cvss3P0, Cvss3P1, Cvss4P0 } = cvssCalculator;
  try {
    const text = vector.trim();
    const scores = text.startsWith('CVSS:4.0/')
      ? new Cvss4P0(text).calculateScores()
      : text.startsWith('CVSS:3.1/')
        ? new Cvss3P1(text).calculateScores()
        : text.startsWith('CVSS:3.0/')
          ? new Cvss3P0(text).calculateScores()
          : new Cvss2(text).calculateScores();
    const score = scores.base;
    return typeof score === 'number' && Number.isFinite(score) && score >= 0 && score <= 10 ? score : undefined;
  } catch {
    return undefined;
  }
}
