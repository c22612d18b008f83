/**
 * The defaults list: every version format, package lister and release detector; formats are rows
 * of the format catalog (formats.ts), distributions rows of the distribution catalog (catalog.ts).
 */
import type { ApplicationLister, FileLister, PackageLister } from '../model/indexing.js';
import type { VersionFormat, VersionFormatName } from '../model/version-format.js';
import { distributionOf, ecosystemOf } from './catalog.js';
import { digestOf } from './digest.js';
import { APPLICATION_VERSION_FORMATS, PACKAGE_FORMATS, type PackageFormat } from './formats.js';
import { composerLister } from './composer/lister.js';
import { gemspecLister } from './gem/lister.js';
import { goBinaryLister } from './go/lister.js';
import { javaArchiveLister } from './maven/lister.js';
import { npmLister } from './npm/lister.js';
import { dotnetDepsLister } from './nuget/lister.js';
import { NAMESPACE_DETECTORS } from './osrelease/detectors.js';
import { pythonLister } from './pypi/lister.js';
import { cargoAuditableLister } from './semver/cargo-auditable.js';
import { cargoLockLister } from './semver/cargo-lock.js';

export type { PackageFormat };

/** Every version order: the package formats' (dpkg, rpm, apk), then the application ecosystems'. */
export const VERSION_FORMATS: readonly VersionFormat[] = [...PACKAGE_FORMATS.map((f) => f.versions), ...APPLICATION_VERSION_FORMATS];

const FORMATS_BY_NAME = new Map<string, PackageFormat>(PACKAGE_FORMATS.map((f) => [f.versions.name, f]));
const VERSION_FORMATS_BY_NAME = new Map<string, VersionFormat>(VERSION_FORMATS.map((f) => [f.name, f]));

/** Whether name is a format of the catalog: the check every format a client or a file gives passes. */
export function isVersionFormatName(name: string): name is VersionFormatName {
  return VERSION_FORMATS_BY_NAME.has(name);
}

/** The catalog row of a package format (dpkg, rpm, apk); undefined for any other name. */
export const packageFormat = (name: string): PackageFormat | undefined => FORMATS_BY_NAME.get(name);

/** The package URL type of an OS package format's packages (deb for dpkg); a format the catalog does not hold is its own type. */
export const purlTypeOfFormat = (name: VersionFormatName): string => packageFormat(name)?.purlType ?? name;

export function versionFormat(name: VersionFormatName): VersionFormat {
  const format = VERSION_FORMATS_BY_NAME.get(name);
  if (!format) throw new Error(`unknown version format ${name}`);
  return format;
}

const FORMAT_NAMES = VERSION_FORMATS.map((f) => f.name);

/** The catalog's format names as messages and API descriptions list them: "dpkg, rpm, apk, semver, … or composer". */
export const VERSION_FORMAT_NAMES_TEXT =
  FORMAT_NAMES.length > 1 ? `${FORMAT_NAMES.slice(0, -1).join(', ')} or ${FORMAT_NAMES.at(-1)}` : FORMAT_NAMES.join('');

/**
 * The version format of a namespace of a known distribution or application ecosystem (the
 * catalog's), e.g. debian:12 → dpkg, npm → semver. A namespace of a known distribution always gets its format, whatever a client says;
 * clients choose the format only for namespaces Tarsier does not know.
 */
export function knownNamespaceFormat(namespace: string): VersionFormatName | undefined {
  return distributionOf(namespace)?.versionFormat ?? ecosystemOf(namespace)?.versionFormat;
}

/**
 * The namespace whose advisories apply to packages of a layer in namespace: its own, or for a
 * rebuild (CentOS, Rocky, Alma) the same major of the distribution it rebuilds (centos:7 → rhel:7).
 */
export function matchNamespace(namespace: string): string {
  const target = distributionOf(namespace)?.matchedAs;
  const release = namespace.split(':', 2)[1] ?? '';
  return target ? `${target}:${release.split('.')[0]}` : namespace;
}

/** Package database readers, one per format. */
export const PACKAGE_LISTERS: readonly PackageLister[] = PACKAGE_FORMATS.map((f) => f.lister);

/**
 * Application manifest readers (npm's package.json, Python's METADATA, Composer's installed.json,
 * .NET's deps.json, installed gemspecs, Cargo.lock), each listing packages of its ecosystem.
 */
export const APPLICATION_LISTERS: readonly ApplicationLister[] = [
  npmLister,
  pythonLister,
  composerLister,
  dotnetDepsLister,
  gemspecLister,
  cargoLockLister,
];

/**
 * Readers of the packages built into files: Go programs' build information, the audit data
 * `cargo auditable` links into Rust programs, Java archives.
 */
export const FILE_LISTERS: readonly FileLister[] = [goBinaryLister, cargoAuditableLister, javaArchiveLister];

/** Release-file detectors, in precedence order: the first that recognises a layer names it. */
export { NAMESPACE_DETECTORS };

/**
 * The indexer's version (IndexedByVersion): the sum of its parts' versions, so it grows whenever a
 * lister or detector changes what it finds, or one is added. A layer indexed by an older version,
 * or by this one under another fingerprint (below), is indexed again when posted again.
 */
export const INDEXER_VERSION = [...PACKAGE_LISTERS, ...APPLICATION_LISTERS, ...FILE_LISTERS, ...NAMESPACE_DETECTORS].reduce(
  (sum, part) => sum + part.version,
  0,
);

/**
 * What the indexer read layers with besides its code: a digest of its parts' fingerprints (the
 * catalog rows the release detectors name layers by). It is stored with each layer's indexing
 * beside INDEXER_VERSION but never shown: a layer indexed by this version under another fingerprint
 * (before a catalog row was added or changed) is indexed again when posted again, as after a
 * version bump, while IndexedByVersion stays the sum of the declared versions.
 */
export const INDEXER_FINGERPRINT = digestOf(
  NAMESPACE_DETECTORS.flatMap((detector) => (detector.fingerprint === undefined ? [] : [[detector.name, detector.fingerprint]])),
);

/** How this build indexes layers, stored with each layer and layer scan it indexes. */
export const CURRENT_INDEXING = { indexedByVersion: INDEXER_VERSION, indexerFingerprint: INDEXER_FINGERPRINT } as const;

/**
 * Whether a stored indexing stands, or the layer is indexed again when posted: it does when a later
 * indexer did it (another replica's, during a rolling upgrade) or this one under the same data.
 * indexerFingerprint is null for what was indexed before fingerprints were kept.
 */
export const isCurrentIndexing = (stored: { readonly indexedByVersion: number; readonly indexerFingerprint: string | null }): boolean =>
  stored.indexedByVersion > INDEXER_VERSION ||
  (stored.indexedByVersion === INDEXER_VERSION && stored.indexerFingerprint === INDEXER_FINGERPRINT);
