import type { SemVer } from 'semver';
import parse from 'semver/functions/parse.js';
import type { VersionFormat } from '../../model/version-format.js';
import { compareCodeUnits, unreadableFirst } from '../version-text.js';

/**
 * Semantic Versioning 2.0.0 precedence, for npm and crates.io, computed by node-semver (npm's own
 * `semver` package): MAJOR.MINOR.PATCH by value, a prerelease before its release, prerelease
 * identifiers compared one by one (numeric ones by value and before alphanumeric ones, those in
 * ASCII order, a longer list after its prefix), build metadata ignored (`1.2.3+a = 1.2.3+b`).
 *
 * Parsing is node-semver's loose mode, because that is what npm accepts: it reads a package.json
 * non-strictly (@npmcli/package-json `lib/normalize.js`, `fixVersionField`: `loose = !strict`),
 * refuses a version `semver.valid(v, loose)` rejects and stores `semver.clean(v, loose)`. Loose
 * adds a leading `v` or `=` and white space, leading zeros (`01.02.03 = 1.2.3`) and a prerelease
 * without its hyphen (`1.2.3foo = 1.2.3-foo`), a superset of the strict grammar, so crates.io's
 * strict versions (Cargo's `semver` crate) read the same either way. Versions longer than 256
 * characters, and numbers above 2^53 - 1 in MAJOR.MINOR.PATCH, are invalid for npm too. One
 * difference from the letter of the spec, kept because it is npm's order: node-semver compares
 * numeric prerelease identifiers as JavaScript numbers, so two above 2^53 that round to the same
 * double are equal.
 */
const LOOSE = { loose: true } as const;

/**
 * Parsed versions by string. node-semver parses with a regular expression into a new object
 * (microseconds each), and matching compares one installed version against many fixed versions
 * that recur across packages, so parses are kept; the map is emptied when full, which bounds it
 * without bookkeeping. Nothing here mutates a SemVer (no inc()), so sharing them is safe.
 */
const parsed = new Map<string, SemVer | null>();
const PARSED_MAX = 4096;

function read(v: string): SemVer | null {
  let p = parsed.get(v);
  if (p === undefined) {
    p = parse(v, LOOSE);
    if (parsed.size >= PARSED_MAX) parsed.clear();
    parsed.set(v, p);
  }
  return p;
}

/**
 * Invalid versions sort before every valid one, and among themselves by their UTF-16 code units.
 * npm has no order for them (node-semver's compare throws), so one is chosen: before all valid
 * versions, as golang.org/x/mod/semver also orders invalid versions (unreadableFirst says why).
 */
const compare = unreadableFirst(read, (x, y) => x.compare(y), compareCodeUnits);

function valid(v: string): boolean {
  return read(v) !== null;
}

export const semver = { name: 'semver', compare, valid, revision: 1 } satisfies VersionFormat;
