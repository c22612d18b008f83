/**
 * Several fixed-in entries of one package in one vulnerability record. Sources name a package more
 * than once: per architecture (Amazon's package lists, Red Hat's and SUSE's rpminfo states), per
 * version range (Microsoft's `greater than` and `less than or equal` bounds), or simply twice (two
 * OVAL definitions of one CVE, two rows of Photon's file). Each entry is an alternative, as OVAL
 * evaluates a definition (any alternative of its criteria that holds makes it true) and as each of
 * several definitions of one CVE is tested on its own: the package is affected when any entry
 * applying to it says so. Two entries "before 1.20.10-4" and "before 1.20.10-6" therefore leave
 * everything before 1.20.10-6 affected, and that is the fix to report.
 *
 * Fixes that hold for one branch of a distribution only (a service pack's LTSS variant, another
 * major release) are not alternatives of each other: the sources keep them apart by namespace
 * before their entries get here. A module stream's entries (FixedIn.module) apply to that stream's
 * packages only, and are never merged with another stream's or with those outside any module.
 */
import { FIX_STATES, fixStateOf, type FixedIn } from './vulnerability.js';

type Compare = (a: string, b: string) => number;

/**
 * The entries of a source's list with the same meaning, as few as it takes, in a stable order:
 * entries of one package under the same conditions (architectures, lower bound) become their union
 * (the highest fix; no fix over any fix; an inclusive bound where it reaches further), entries that
 * then differ only in their architectures become one, and a `not_affected` entry beside others of
 * its package, which adds nothing to what they affect, is dropped.
 */
export function unionOfFixes(compare: Compare, entries: readonly FixedIn[]): FixedIn[] {
  const byCondition = new Map<string, FixedIn>();
  for (const entry of entries) {
    const e = normalized(entry);
    const key = JSON.stringify([e.feature, e.module ?? null, e.arches ?? null, e.affectedAbove ?? null, e.affectedFrom ?? null]);
    const seen = byCondition.get(key);
    byCondition.set(key, seen ? union(compare, seen, e) : e);
  }
  const byReach = new Map<string, FixedIn>();
  for (const e of byCondition.values()) {
    const key = JSON.stringify([
      e.feature,
      e.module ?? null,
      e.version,
      fixStateOf(e),
      e.affectedAbove ?? null,
      e.affectedFrom ?? null,
      e.affectedThrough ?? null,
    ]);
    const seen = byReach.get(key);
    byReach.set(key, seen ? withArches(seen, mergedArches(seen.arches, e.arches)) : e);
  }
  const affecting = new Set([...byReach.values()].filter((e) => fixStateOf(e) !== 'not_affected').map((e) => e.feature));
  return [...byReach.values()]
    .filter((e) => fixStateOf(e) !== 'not_affected' || !affecting.has(e.feature))
    .sort((a, b) => compareText(a.feature, b.feature) || compareText(orderKey(a), orderKey(b)));
}

/**
 * Of two entries of one package that both leave an installed version affected, whether `a` rather
 * than `b` says how (the FixedBy reported): no fix over any fix (an update to a fixed version of
 * one entry would still be affected by the other), between two unfixed ones the state that reports
 * more (FIX_STATES order), else the higher fix, the version that leaves every entry behind.
 */
export function decides(
  compare: Compare,
  a: { readonly version: string | null; readonly state?: string | null },
  b: { readonly version: string | null; readonly state?: string | null },
): boolean {
  if (a.version === null || b.version === null) {
    if (a.version !== null) return false;
    if (b.version !== null) return true;
    return stateRank(a.state) < stateRank(b.state);
  }
  return compare(a.version, b.version) > 0;
}

/** An entry without the conditions that mean nothing for it (a not_affected entry affects no version, under any condition). */
function normalized(e: FixedIn): FixedIn {
  const state = fixStateOf(e);
  const { arches, affectedAbove, affectedFrom, affectedThrough, ...rest } = e;
  if (state === 'not_affected') return rest;
  const sorted = arches && arches.length > 0 ? [...new Set(arches)].sort(compareText) : undefined;
  return {
    ...rest,
    ...(sorted ? { arches: sorted } : {}),
    ...(affectedAbove !== undefined ? { affectedAbove } : {}),
    ...(affectedFrom !== undefined ? { affectedFrom } : {}),
    ...(affectedThrough !== undefined && e.version === null ? { affectedThrough } : {}),
  };
}

/** The one entry affecting what either affects, for two entries of one package under the same conditions. */
function union(compare: Compare, a: FixedIn, b: FixedIn): FixedIn {
  if (fixStateOf(a) === 'not_affected') return b;
  if (fixStateOf(b) === 'not_affected') return a;
  const unbounded = (e: FixedIn): boolean => e.version === null && e.affectedThrough === undefined;
  if (unbounded(a) || unbounded(b)) {
    if (!unbounded(b)) return a;
    if (!unbounded(a)) return b;
    return stateRank(b.state) < stateRank(a.state) ? b : a;
  }
  // Both bounded above: by the fix (versions before it) or by an inclusive bound.
  const bound = (e: FixedIn): string => (e.version ?? e.affectedThrough) as string;
  const order = compare(bound(a), bound(b));
  if (order !== 0) return order > 0 ? a : b;
  return a.version === null ? a : b;
}

function withArches(e: FixedIn, arches: readonly string[] | undefined): FixedIn {
  const { arches: _dropped, ...rest } = e;
  return arches ? { ...rest, arches } : rest;
}

/** Two entries' architectures together: absent (every architecture) when either is. */
function mergedArches(a: readonly string[] | undefined, b: readonly string[] | undefined): readonly string[] | undefined {
  return a && b ? [...new Set([...a, ...b])].sort(compareText) : undefined;
}

/** A stored or given state's place in FIX_STATES (absent or null: affected). */
function stateRank(state: string | null | undefined): number {
  const rank = FIX_STATES.indexOf((state ?? 'affected') as (typeof FIX_STATES)[number]);
  return rank < 0 ? FIX_STATES.length : rank;
}

function orderKey(e: FixedIn): string {
  return JSON.stringify([
    e.module ?? '',
    e.arches ?? [],
    e.affectedAbove ?? '',
    e.affectedFrom ?? '',
    e.version ?? '',
    e.affectedThrough ?? '',
    e.state ?? '',
  ]);
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
