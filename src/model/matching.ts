import type { VersionFormatName } from './version-format.js';

/**
 * The matching rules the store applies when it links feature versions to the vulnerabilities
 * that affect them: how versions compare, which namespace's advisories apply to a layer's
 * packages. They are domain decisions (ecosystems/matching.ts implements them from the catalog);
 * the store receives them from its callers and never imports the ecosystems.
 */
export interface Matching {
  /** How versions of a format compare (negative: a is older). */
  compare(format: VersionFormatName): (a: string, b: string) => number;
  /** The version format of a namespace of a distribution Tarsier knows; undefined for any other namespace. */
  namespaceFormat(namespace: string): VersionFormatName | undefined;
  /**
   * The namespace whose advisories apply to a layer's packages of this format: its own, or the
   * one it rebuilds (centos:7 → rhel:7); undefined when none do (an rpm database inside a Debian
   * image). Throws, for the client (422), when the layer holds packages but no release file names
   * its distribution.
   */
  advisoryNamespace(layerNamespace: string | null, format: VersionFormatName): string | undefined;
}
