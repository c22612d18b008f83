import { severityRank, type Severity } from './vulnerability.js';

/**
 * How an image's findings are counted, wherever counts are shown (the images API and its stored
 * summaries, the dashboard, the scanner's report): each vulnerability once by name, at the highest
 * severity any of its sources gives it; fixable when an upgrade of any affected package fixes it
 * (a fixed version is known); known exploited when CISA's KEV catalog lists it.
 *
 * The store counts the same way in SQL (store/summaries.ts FINDING_COUNTS), so that lists never
 * read every image's packages; test/store/finding-counts.test.ts holds the two to the same results.
 */

/** One affecting (vulnerability, package) pair, as far as counting needs it. */
export interface CountedFinding {
  readonly name: string;
  readonly severity: Severity;
  /** The version that fixes it; null when no upgrade does (no fix yet, will not be fixed, deferred). */
  readonly fixedBy: string | null;
  /** Its KEV entry (any shape) when CISA's catalog lists it; absent or undefined when not. */
  readonly risk: { readonly kev?: unknown };
}

export interface SeverityCount {
  /** Distinct vulnerabilities (by name, each at the highest severity its sources give) affecting the image. */
  total: number;
  /** Of those, the ones a package upgrade fixes (a fixed version is known for an affected package). */
  fixable: number;
}

export interface FindingCounts {
  /** Per severity; a severity no vulnerability has is absent. */
  bySeverity: Partial<Record<Severity, SeverityCount>>;
  /** Distinct vulnerabilities (by name) that CISA's KEV catalog lists. */
  knownExploited: number;
}

/**
 * The counts of these findings. Severities appear in the order their first vulnerability does,
 * so outputs that list them keep the order they have always had.
 */
export function countFindings(findings: Iterable<CountedFinding>): FindingCounts {
  const byName = new Map<string, { severity: Severity; fixable: boolean; kev: boolean }>();
  for (const f of findings) {
    const known = byName.get(f.name);
    byName.set(f.name, {
      severity: known && severityRank(known.severity) > severityRank(f.severity) ? known.severity : f.severity,
      fixable: (known?.fixable ?? false) || f.fixedBy !== null,
      kev: (known?.kev ?? false) || f.risk.kev !== undefined,
    });
  }
  const bySeverity: Partial<Record<Severity, SeverityCount>> = {};
  let knownExploited = 0;
  for (const { severity, fixable, kev } of byName.values()) {
    const count = (bySeverity[severity] ??= { total: 0, fixable: 0 });
    count.total++;
    if (fixable) count.fixable++;
    if (kev) knownExploited++;
  }
  return { bySeverity, knownExploited };
}

/** The counts of every severity together: how many vulnerabilities, and how many of them an upgrade fixes. */
export function allSeverities(counts: FindingCounts): SeverityCount {
  const all = { total: 0, fixable: 0 };
  for (const c of Object.values(counts.bySeverity)) {
    all.total += c.total;
    all.fixable += c.fixable;
  }
  return all;
}

/** The highest severity counted; undefined when nothing was. */
export function worstSeverity(counts: FindingCounts): Severity | undefined {
  return (Object.keys(counts.bySeverity) as Severity[]).reduce<Severity | undefined>(
    (worst, s) => (worst === undefined || severityRank(s) > severityRank(worst) ? s : worst),
    undefined,
  );
}
