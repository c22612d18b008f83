/**
 * What the indexer's parts agree on. A layer is read once as a stream; listers and detectors
 * declare the paths they want, and only those files are buffered and handed to them.
 */
import type { PackageDatabase } from './layer.js';
import type { VersionFormatName } from './version-format.js';

/**
 * The wanted files of one layer: normalised path (relative to the layer root: no leading `/` or
 * `./`, no `..`, `rootfs/` already removed for ACI layers) → content. Symbolic and hard links to
 * wanted files are resolved within the layer before listers see the map.
 */
export type LayerFiles = ReadonlyMap<string, Buffer>;

/** One installed package as it is matched against advisories. */
export interface Package {
  /** dpkg: the source package name; apk: the origin; rpm: the binary package name. */
  readonly name: string;
  /** dpkg: the source version when the Source field gives one, else the binary version; apk: V:; rpm: [epoch:]version-release. */
  readonly version: string;
  /**
   * rpm: the source package it was built from (SOURCERPM: its name, and its version-release with
   * the package's epoch), which some distributions' advisories name instead of the binary packages
   * (Azure Linux). A subpackage may have a version of its own (perl's modules): advisories on the
   * source compare against the source's. Absent where the database does not say, and for dpkg and
   * apk, whose names are already the source's.
   */
  readonly source?: { readonly name: string; readonly version: string };
  /**
   * rpm: the architectures it is installed for (its ARCH: x86_64, noarch, …; both copies of a
   * multilib package), sorted, which advisories limited to some architectures are matched against.
   * Absent where the database does not say, and for dpkg and apk.
   */
  readonly arches?: readonly string[];
  /**
   * rpm: the module stream it was built in (`name:stream` from its MODULARITYLABEL: idm:DL1), whose
   * advisories alone apply to it where the distribution's advisories are scoped by module stream
   * (RHEL). Absent for a package built outside any module, and for dpkg and apk.
   */
  readonly module?: string;
}

/** Reads one package manager's database. */
export interface PackageLister {
  readonly name: string;
  /** Bumped whenever list() would return something different for the same files. */
  readonly version: number;
  /** The version format of the packages it lists. */
  readonly format: VersionFormatName;
  /**
   * Where the database lives (files, or directories ending in '/'). A whiteout of one of these
   * paths, or of a directory above it, or an opaque directory, means the layer deleted the database.
   */
  readonly databasePaths: readonly string[];
  /**
   * For a database kept in several files: the files that hold the whole database. A layer with
   * only the other files (e.g. dpkg's status.d entries) adds its packages to those it inherits.
   * Without it, whatever the layer holds replaces the inherited packages.
   */
  readonly wholeDatabaseFiles?: readonly string[];
  /** Whether the file at path (normalised) belongs to this lister's database. */
  wants(path: string): boolean;
  /**
   * The packages of the database held in files, de-duplicated (same name and version once), or
   * undefined when files hold no such database. Throws an Error whose message says what is wrong
   * (e.g. "var/lib/rpm/Packages: not a Berkeley DB hash database") when the database is corrupt.
   */
  list(files: LayerFiles): Package[] | undefined;
  /**
   * The files (normalised layer paths) the database held in files says its packages installed,
   * or undefined when files hold none of its file lists. An application package found in one of
   * them (Debian's python3-yaml ships a PyYAML egg-info) is the OS package's, which the
   * distribution's advisories cover: it is reported once, as the OS package. Asked only of a
   * layer that lists application packages. Throws as list() does for a corrupt database.
   */
  ownedFiles?(files: LayerFiles): ReadonlySet<string> | undefined;
}

/**
 * A package of an application ecosystem (npm, PyPI, Go, Maven, …) found in a layer's files. Where
 * it was found matters: a later layer removes it by deleting or replacing that file, and one image
 * may hold the same package at several places (nested node_modules).
 */
export interface ApplicationPackage {
  /** Its ecosystem's namespace: a row of APPLICATION_ECOSYSTEMS (`npm`, `pypi`). */
  readonly ecosystem: string;
  /** As its ecosystem matches names (ecosystemPackageName: PyPI's PEP 503 form). */
  readonly name: string;
  readonly version: string;
  /** The file that lists it: a normalised layer path (`usr/lib/node_modules/npm/package.json`). */
  readonly location: string;
}

/** A manifest an application lister could not read, and why: reported, never silently dropped. */
export interface UnreadableManifest {
  readonly location: string;
  readonly why: string;
}

/** What application listers found: packages, and the manifests they could not read. */
export interface ApplicationFindings {
  readonly packages: ApplicationPackage[];
  readonly unreadable: UnreadableManifest[];
}

/**
 * Where a package inside an archive is: the archive's layer path, then the path of each nested
 * archive, joined as Java's `jar:` URLs join them (`app/app.jar!/BOOT-INF/lib/guava-31.jar`).
 */
export const NESTED = '!/';

/** The layer file a package's location is in: the outermost archive for a package inside one. */
export function fileOfLocation(location: string): string {
  const nested = location.indexOf(NESTED);
  return nested < 0 ? location : location.slice(0, nested);
}

/**
 * Reads one kind of application manifest (npm's package.json, Python's METADATA, …) from a layer's
 * wanted files. Unlike an OS package database, each manifest is a file of its own, so one broken
 * manifest is reported and the others are still listed.
 */
export interface ApplicationLister {
  readonly name: string;
  /** Bumped whenever list() would return something different for the same files. */
  readonly version: number;
  /** Whether the file at path (normalised) is one it reads: the archive walk buffers only those. */
  wants(path: string): boolean;
  /** The packages the wanted files list, each name, version and location once, and the manifests it could not read. */
  list(files: LayerFiles): ApplicationFindings;
}

/**
 * Reads the packages built into one file: a program (Go's build information) or an archive (Java's
 * jars). Such files can be anywhere, be large and be many, so the archive walk picks them by path
 * and mode, then by their first bytes, reads each whole (up to clair.indexer.maxfilebytes, over
 * which the file is reported unread), hands it over as soon as it is read and keeps only what was
 * found: a layer holds one such file in memory at a time, and a big one never fails the layer.
 */
export interface FileLister {
  readonly name: string;
  /** Bumped whenever list() would return something different for the same file. */
  readonly version: number;
  /** Whether the regular file at path (normalised), with mode's permission bits, may be one it reads. */
  considers(path: string, mode: number): boolean;
  /** How many first bytes selects() needs (at most 512: one tar block). */
  readonly headBytes: number;
  /** Whether a considered file starting with head (headBytes of it, or the whole of a shorter file) is one it reads. */
  selects(head: Buffer): boolean;
  /**
   * The packages built into the file at location, each name, version and location once, and the
   * parts of it that could not be read (a program that is not one of its kind lists nothing).
   */
  list(location: string, content: Buffer): ApplicationFindings | Promise<ApplicationFindings>;
}

/** Recognises the operating system release of a layer. */
export interface NamespaceDetector {
  readonly name: string;
  /** Bumped whenever detect() would return something different for the same files and the same data (below). */
  readonly version: number;
  /**
   * A digest of the data outside its code that detect() decides with (the catalog rows it reads),
   * absent when it reads none. A change of that data changes what it finds as a version bump
   * would: layers indexed under another digest are indexed again when posted again (INDEXER_FINGERPRINT).
   */
  readonly fingerprint?: string;
  wants(path: string): boolean;
  /**
   * The namespace name (e.g. "debian:12", "alpine:v3.19", "rhel:9"), or undefined. databases: the
   * layer's own package databases as the listers read them (the products a layer has installed are
   * release packages: SUSE's LTSS).
   */
  detect(files: LayerFiles, databases?: Readonly<Record<VersionFormatName, PackageDatabase>>): string | undefined;
}
