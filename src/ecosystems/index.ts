/**
 * The defaults list: every version format, package lister and release detector, as literal
 * tables; distributions are rows of the catalog (catalog.ts).
 */
import type { PackageLister } from '../model/indexing.js';
import type { VersionFormat, VersionFormatName } from '../model/version-format.js';
import { apkLister } from './apk/lister.js';
import { distributionOf } from './catalog.js';
import { apk } from './apk/version.js';
import { dpkgLister } from './dpkg/lister.js';
import { dpkg } from './dpkg/version.js';
import { NAMESPACE_DETECTORS } from './osrelease/detectors.js';
import { rpmLister } from './rpm/lister.js';
import { rpm } from './rpm/version.js';

export const VERSION_FORMATS: readonly VersionFormat[] = [dpkg, rpm, apk];

const FORMATS_BY_NAME = new Map<string, VersionFormat>(VERSION_FORMATS.map((f) => [f.name, f]));

export function isVersionFormatName(name: string): name is VersionFormatName {
  return FORMATS_BY_NAME.has(name);
}

export function versionFormat(name: VersionFormatName): VersionFormat {
  const format = FORMATS_BY_NAME.get(name);
  if (!format) throw new Error(`unknown version format ${name}`);
  return format;
}

/**
 * The version format of a namespace of a known distribution (the catalog's), e.g. debian:12 →
 * dpkg. A namespace of a known distribution always gets its format, whatever a client says;
 * clients choose the format only for namespaces Tarsier does not know.
 */
export function knownNamespaceFormat(namespace: string): VersionFormatName | undefined {
  return distributionOf(namespace)?.versionFormat;
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
export const PACKAGE_LISTERS: readonly PackageLister[] = [dpkgLister, apkLister, rpmLister];

/** Release-file detectors, in precedence order: the first that recognises a layer names it. */
export { NAMESPACE_DETECTORS };

/**
 * The indexer's version (IndexedByVersion): the sum of its parts' versions, so it grows whenever a
 * lister or detector changes what it finds, or one is added. A layer indexed by an older version
 * is indexed again when posted again.
 */
export const INDEXER_VERSION = [...PACKAGE_LISTERS, ...NAMESPACE_DETECTORS].reduce((sum, part) => sum + part.version, 0);
