/**
 * A package manager's version ordering. Implementations must agree with the
 * package manager itself (dpkg, rpm, apk-tools); the vector tables under
 * test/fixtures prove it.
 */
export interface VersionFormat {
  /** The format's name as stored on namespaces and shown on the wire. */
  readonly name: VersionFormatName;
  /**
   * Total order: -1 when a sorts before b, 0 when equal, 1 when after.
   * Never throws; invalid input is ordered the way the package manager
   * orders it (or, where it has no rule, deterministically).
   */
  compare(a: string, b: string): -1 | 0 | 1;
  /** Whether the package manager accepts v as a version string. */
  valid(v: string): boolean;
  /**
   * The revision of compare's order, raised whenever compare orders some pair differently than
   * before. Stored matches were computed with a revision (table match_revision); where it differs
   * from this one, they are computed again (src/rematch.ts).
   */
  readonly revision: number;
}

/**
 * A package format's name (dpkg, rpm, apk). The formats are rows of the format catalog
 * (ecosystems/formats.ts), which the model cannot import: a union spelled here would be a second
 * list to keep in step, so the name is a plain string and the catalog is the one judge of which
 * names exist (isVersionFormatName, checked wherever a client or a file gives one).
 */
export type VersionFormatName = string;
