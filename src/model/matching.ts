import type { Package } from './indexing.js';
import type { VersionFormatName } from './version-format.js';

/** A fixed-in entry as the store holds it. */
export interface StoredFix {
  readonly fixed_version: string | null;
  readonly fix_state?: string | null;
}

/**
 * The matching rules the store applies when it links feature versions to the vulnerabilities
 * that affect them: how versions compare, which namespace's advisories apply to a layer's
 * packages. They are domain decisions (ecosystems/matching.ts implements them from the catalog);
 * the store receives them from its callers and never imports the ecosystems.
 */
export interface Matching {
  /**
   * Whether a fix leaves an installed version affected, for a format: the version sorts before the
   * fix, or there is no fix; never when the source says the package is not affected.
   */
  affects(format: VersionFormatName): (fix: StoredFix, installed: string) => boolean;
  /** The version format of a namespace of a distribution Tarsier knows; undefined for any other namespace. */
  namespaceFormat(namespace: string): VersionFormatName | undefined;
  /**
   * The namespace whose advisories apply to a layer's packages of this format: its own, or the
   * one it rebuilds (centos:7 → rhel:7); undefined when none do (an rpm database inside a Debian
   * image). Throws, for the client (422), when the layer holds packages but no release file names
   * its distribution.
   */
  advisoryNamespace(layerNamespace: string | null, format: VersionFormatName): string | undefined;
  /**
   * How packages are matched in a layer of this namespace: undefined when as they are (their own
   * name and version), else the mapping to the source package each was built from, where the
   * distribution's advisories name source packages. Asked once per layer, not per package.
   */
  bySource(layerNamespace: string | null): ((pkg: Package) => { name: string; version: string }) | undefined;
}
