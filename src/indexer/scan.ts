import { unprocessable } from '../errors.js';
import {
  fileOfLocation,
  type ApplicationLister,
  type ApplicationPackage,
  type NamespaceDetector,
  type PackageLister,
  type UnreadableManifest,
} from '../model/indexing.js';
import { isWhitedOut, type LayerApplications, type LayerScan, type PackageDatabase } from '../model/layer.js';
import type { VersionFormatName } from '../model/version-format.js';
import type { LayerContents } from './archive.js';

/** Whether any lister or detector wants the file at path (what the archive walk buffers). */
export function wantedBy(
  listers: readonly PackageLister[],
  detectors: readonly NamespaceDetector[],
  applicationListers: readonly ApplicationLister[] = [],
): (path: string) => boolean {
  return (path) =>
    listers.some((l) => l.wants(path)) || detectors.some((d) => d.wants(path)) || applicationListers.some((l) => l.wants(path));
}

/**
 * The application packages the layer's manifests list and the file listers found in its programs
 * and archives (as the archive walk went), and the paths it deletes. A manifest a
 * lister cannot read is left out, as a broken one is by the ecosystem's own tools, and named in
 * `unreadable`; the layer's other packages are still listed.
 */
function applicationsOf(
  contents: LayerContents,
  listers: readonly ApplicationLister[],
  packageListers: readonly PackageLister[],
): LayerApplications | undefined {
  const found: ApplicationPackage[] = [...(contents.applicationsInFiles?.packages ?? [])];
  const unreadable: UnreadableManifest[] = [...(contents.applicationsInFiles?.unreadable ?? [])];
  for (const lister of listers) {
    const listed = lister.list(contents.files);
    for (const p of listed.packages) found.push(p);
    for (const u of listed.unreadable) unreadable.push(u);
  }
  const owned = found.length > 0 ? ownedFiles(contents, packageListers) : new Set<string>();
  const packages = found.filter((p) => !owned.has(fileOfLocation(p.location)));
  const removed = [...contents.whiteouts.deleted, ...[...contents.whiteouts.opaque].map((dir) => `${dir}/`)];
  if (packages.length === 0 && removed.length === 0 && unreadable.length === 0) return undefined;
  return { packages, removed, ...(unreadable.length > 0 ? { unreadable } : {}) };
}

/**
 * The files the layer's OS package databases say their packages installed. An application
 * package in one of them was installed by the OS package manager (Debian's python3-* egg-info,
 * ruby-* gemspecs, lib*-java jars, Go programs) and is reported once, as the OS package, whose
 * advisories the distribution keeps: as Trivy and Syft avoid counting it twice. Only the layer's
 * own databases are read: a package and its file list arrive in the same layer.
 */
function ownedFiles(contents: LayerContents, listers: readonly PackageLister[]): ReadonlySet<string> {
  const owned = new Set<string>();
  for (const lister of listers) for (const path of fromDatabase(lister, () => lister.ownedFiles?.(contents.files)) ?? []) owned.add(path);
  return owned;
}

/** What read makes of a lister's database; a database that cannot be read fails the layer, saying which. */
function fromDatabase<T>(lister: PackageLister, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw unprocessable(`the layer's ${lister.name} package database cannot be read: ${(err as Error).message}`, err);
  }
}

/** The first detector (in precedence order) that recognises the layer's release files or packages. */
function detectNamespace(
  contents: LayerContents,
  databases: LayerScan['packageDbs'],
  detectors: readonly NamespaceDetector[],
): string | null {
  for (const detector of detectors) {
    const found = detector.detect(contents.files, databases);
    if (found !== undefined) return found;
  }
  return null;
}

/** A database file is gone when whited out; a database directory also when made opaque (its lower contents hidden). */
function deletesDatabase(lister: PackageLister, contents: LayerContents): boolean {
  const { whiteouts } = contents;
  return lister.databasePaths.some((path) => {
    if (!path.endsWith('/')) return isWhitedOut(path, whiteouts);
    const dir = path.slice(0, -1);
    return isWhitedOut(dir, whiteouts) || whiteouts.opaque.has(dir);
  });
}

function packageDatabase(lister: PackageLister, contents: LayerContents): PackageDatabase | undefined {
  const packages = fromDatabase(lister, () => lister.list(contents.files));
  if (packages === undefined) return deletesDatabase(lister, contents) ? { state: 'deleted' } : undefined;
  const partial = lister.wholeDatabaseFiles !== undefined && !lister.wholeDatabaseFiles.some((path) => contents.files.has(path));
  return { state: partial ? 'added' : 'present', packages };
}

/** Runs the detectors and listers over a layer's wanted files. */
export function scanContents(
  contents: LayerContents,
  listers: readonly PackageLister[],
  detectors: readonly NamespaceDetector[],
  applicationListers: readonly ApplicationLister[] = [],
): LayerScan {
  const packageDbs: Record<VersionFormatName, PackageDatabase> = {};
  for (const lister of listers) {
    const database = packageDatabase(lister, contents);
    if (database) packageDbs[lister.format] = database;
  }
  const applications = applicationsOf(contents, applicationListers, listers);
  return { namespace: detectNamespace(contents, packageDbs, detectors), packageDbs, ...(applications ? { applications } : {}) };
}
