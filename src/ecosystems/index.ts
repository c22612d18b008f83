/**
 * The defaults list: every version format and every known distribution, as literal tables.
 * Adding a distribution means adding a line here (and its folder under ecosystems/).
 */
import type { PackageLister } from '../model/indexing.js';
import type { VersionFormat, VersionFormatName } from '../model/version-format.js';
import { apkLister } from './apk/lister.js';
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
 * Distribution (the part of a namespace name before ':') → the version format its package
 * manager uses. A namespace of a distribution listed here always gets this format, whatever a
 * client says; clients choose the format only for namespaces Tarsier does not know.
 */
export const DISTRIBUTION_FORMATS: Readonly<Record<string, VersionFormatName>> = {
  debian: 'dpkg',
  ubuntu: 'dpkg',
  alpine: 'apk',
  wolfi: 'apk',
  chainguard: 'apk',
  rhel: 'rpm',
  centos: 'rpm',
  rocky: 'rpm',
  almalinux: 'rpm',
  oracle: 'rpm',
  amzn: 'rpm',
  fedora: 'rpm',
  sles: 'rpm',
  'opensuse-leap': 'rpm',
  'opensuse-tumbleweed': 'rpm',
};

/** The version format of a namespace of a known distribution, e.g. debian:12 → dpkg. */
export function knownNamespaceFormat(namespace: string): VersionFormatName | undefined {
  const distribution = namespace.split(':', 1)[0] ?? '';
  return Object.hasOwn(DISTRIBUTION_FORMATS, distribution) ? DISTRIBUTION_FORMATS[distribution] : undefined;
}

/**
 * Distributions whose packages are matched against another distribution's advisories for the
 * same major release: CentOS, Rocky Linux and AlmaLinux rebuild RHEL, and Red Hat's data covers
 * them. The layer keeps its own namespace (centos:7); its features live in rhel:7.
 */
const MATCHED_AS: Readonly<Record<string, string>> = { centos: 'rhel', rocky: 'rhel', almalinux: 'rhel' };

/** The namespace whose advisories apply to packages of a layer in namespace. */
export function matchNamespace(namespace: string): string {
  const [distribution = '', release = ''] = namespace.split(':', 2);
  const target = Object.hasOwn(MATCHED_AS, distribution) ? MATCHED_AS[distribution] : undefined;
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
