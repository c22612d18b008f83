import { fileOfLocation, type ApplicationPackage, type Package, type UnreadableManifest } from './indexing.js';
import type { VersionFormatName } from './version-format.js';

/**
 * A layer's own package database of one format: held whole ('present': its packages replace those
 * inherited), held in part ('added': files that each add packages to those inherited, as distroless
 * images add one dpkg status.d file per layer), or deleted by a whiteout.
 */
export type PackageDatabase =
  { readonly state: 'present' | 'added'; readonly packages: readonly Package[] } | { readonly state: 'deleted' };

export type PackageDatabaseState = PackageDatabase['state'];

/** Paths a layer deletes from the layers below it. */
export interface Whiteouts {
  /** Files or directories removed by `.wh.<name>` entries. */
  readonly deleted: ReadonlySet<string>;
  /** Directories whose lower-layer contents are hidden (`.wh..wh..opq`). */
  readonly opaque: ReadonlySet<string>;
}

/** True when path, or a directory above it, is deleted or made opaque by a layer's whiteouts. */
export function isWhitedOut(path: string, whiteouts: Whiteouts): boolean {
  for (let current = path; ;) {
    if (whiteouts.deleted.has(current)) return true;
    const slash = current.lastIndexOf('/');
    const dir = slash < 0 ? '' : current.slice(0, slash);
    if (current !== '' && whiteouts.opaque.has(dir)) return true;
    if (current === '') return false;
    current = dir;
  }
}

/** A layer's whiteouts from its removed paths (LayerApplications.removed: opaque directories end in `/`). */
export function whiteoutsOf(removed: readonly string[]): Whiteouts {
  return {
    deleted: new Set(removed.filter((p) => !p.endsWith('/'))),
    opaque: new Set(removed.filter((p) => p.endsWith('/')).map((p) => p.slice(0, -1))),
  };
}

/**
 * What one layer's own files say of application packages, whatever its parent holds: the packages
 * its manifests list (each at its location), and the paths it deletes, which remove the inherited
 * packages listed at or below them.
 */
export interface LayerApplications {
  readonly packages: readonly ApplicationPackage[];
  /** Whited-out paths (the path and everything below it), and opaque directories as `dir/` (everything below it). */
  readonly removed: readonly string[];
  /** Files the listers could not read, with why: logged when the layer is indexed, stored (the first 100) and shown with the images that hold it. */
  readonly unreadable?: readonly UnreadableManifest[];
}

/**
 * What one layer's own files say, whatever its parent holds. A format missing from packageDbs
 * means the layer does not touch that database: its parent's packages of that format carry on.
 */
export interface LayerScan {
  /** The namespace the layer's release files name (e.g. debian:12), if any. */
  readonly namespace: string | null;
  readonly packageDbs: Readonly<Record<VersionFormatName, PackageDatabase>>;
  /** Absent when the layer lists no application package and deletes nothing. */
  readonly applications?: LayerApplications;
}

/** The application packages installed once a layer is applied, by location, ecosystem, name and version. */
export type InstalledApplications = ReadonlyMap<string, ApplicationPackage>;

const applicationKey = (p: ApplicationPackage): string => `${p.location}\0${p.ecosystem}\0${p.name}\0${p.version}`;

/**
 * The application packages installed after a layer: the inherited ones it neither deletes (a
 * whiteout at or above their location, an opaque directory above it) nor lists again at their
 * location (an upgrade rewrites the manifest in place), then its own. Unlike an OS package
 * database, application manifests are files of their own, each added and removed with its file.
 */
export function applicationsAfter(before: InstalledApplications, layer: LayerApplications | undefined): InstalledApplications {
  if (!layer) return before;
  const whiteouts = whiteoutsOf(layer.removed);
  // A package inside an archive goes with the archive's file: a rewritten or deleted jar takes
  // its nested jars' packages with it.
  const relisted = new Set(layer.packages.map((p) => fileOfLocation(p.location)));
  const after = new Map<string, (typeof layer.packages)[number]>();
  for (const [key, p] of before) {
    const file = fileOfLocation(p.location);
    if (!relisted.has(file) && !isWhitedOut(file, whiteouts)) after.set(key, p);
  }
  for (const p of layer.packages) after.set(applicationKey(p), p);
  return after;
}
