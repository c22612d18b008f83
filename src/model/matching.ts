import type { Package } from './indexing.js';
import type { VersionFormatName } from './version-format.js';

/** A fixed-in entry as the store holds it. */
export interface StoredFix {
  readonly fixed_version: string | null;
  readonly fix_state?: string | null;
  /** The package architectures it is limited to; null or absent: every architecture. */
  readonly arches?: readonly string[] | null;
  /** Only versions after this one are affected. */
  readonly affected_above?: string | null;
  /** Only this version and later ones are affected. */
  readonly affected_from?: string | null;
  /** With no fix: only versions up to this one, included, are affected. */
  readonly affected_through?: string | null;
  /** It names a source package: it applies to the packages built from it, compared by their source's version. */
  readonly source?: boolean | null;
  /** The module stream (name:stream) it is scoped to; null or absent: packages built outside any module. */
  readonly module?: string | null;
}

/** An installed version of a package as the store holds it. */
export interface InstalledVersion {
  readonly version: string;
  /** The architectures it is installed for (multilib: several); empty when the database does not say. */
  readonly arches: readonly string[];
  /**
   * The version of the source package it was built from, which entries naming that source compare
   * against; null or absent when not known (its own version is compared then).
   */
  readonly source_version?: string | null;
  /**
   * The module stream (name:stream) it was built in, where the namespace's records are scoped by
   * module stream; '' (or absent) for a package built outside any module, and everywhere else.
   */
  readonly module?: string;
}

/**
 * The matching rules the store applies when it links feature versions to the vulnerabilities
 * that affect them: how versions compare, which namespace's advisories apply to a layer's
 * packages. They are domain decisions (ecosystems/matching.ts implements them from the catalog);
 * the store receives them from its callers and never imports the ecosystems.
 */
export interface Matching {
  /**
   * For a format: of the entries one vulnerability record gives for one package (alternatives:
   * model/fixes.ts), the one that leaves an installed version affected and says how (its FixedBy),
   * or undefined when none does. An entry affects a version that sorts before its fix (any version
   * when there is none), within its bounds, for one of its architectures; never when the source
   * says the package is not affected. An entry of a module stream applies only to that stream's
   * packages, any other only to packages outside every module.
   */
  match(format: VersionFormatName): <F extends StoredFix>(fixes: readonly F[], installed: InstalledVersion) => F | undefined;
  /** The version format of a namespace of a distribution Tarsier knows; undefined for any other namespace. */
  namespaceFormat(namespace: string): VersionFormatName | undefined;
  /** Whether a namespace is an application ecosystem's (npm, pypi): its packages come from manifests, not a package database. */
  isApplicationNamespace(namespace: string): boolean;
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
  /**
   * Whether an advisory namespace's records may hold entries naming source packages beside those
   * naming installed ones (FixedIn.source: Red Hat's VEX): its package versions are then stored with
   * the source package each was built from, and linked to those entries by it.
   */
  sourceEntries(advisoryNamespace: string): boolean;
  /**
   * Whether an advisory namespace's records scope entries by module stream (FixedIn.module: Red
   * Hat's OVAL): its package versions are then stored with the module stream each was built in.
   */
  moduleStreams(advisoryNamespace: string): boolean;
}
