import { unprocessable } from '../errors.js';
import type { ApplicationLister, ApplicationPackage, NamespaceDetector, PackageLister, UnreadableManifest } from '../model/indexing.js';
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
function applicationsOf(contents: LayerContents, listers: readonly ApplicationLister[]): LayerApplications | undefined {
  const packages: ApplicationPackage[] = [...(contents.applicationsInFiles?.packages ?? [])];
  const unreadable: UnreadableManifest[] = [...(contents.applicationsInFiles?.unreadable ?? [])];
  for (const lister of listers) {
    const found = lister.list(contents.files);
    for (const p of found.packages) packages.push(p);
    for (const u of found.unreadable) unreadable.push(u);
  }
  const removed = [...contents.whiteouts.deleted, ...[...contents.whiteouts.opaque].map((dir) => `${dir}/`)];
  if (packages.length === 0 && removed.length === 0 && unreadable.length === 0) return undefined;
  return { packages, removed, ...(unreadable.length > 0 ? { unreadable } : {}) };
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
  let packages;
  try {
    packages = lister.list(contents.files);
  } catch (err) {
    throw unprocessable(`the layer's ${lister.name} package database cannot be read: ${(err as Error).message}`, err);
  }
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
  const applications = applicationsOf(contents, applicationListers);
  return { namespace: detectNamespace(contents, packageDbs, detectors), packageDbs, ...(applications ? { applications } : {}) };
}
