/**
 * The defaults list: every version format and every known distribution, as literal tables.
 * Adding a distribution means adding a line here (and its folder under ecosystems/).
 */
import type { VersionFormat, VersionFormatName } from '../model/version-format.js';
import { apk } from './apk/version.js';
import { dpkg } from './dpkg/version.js';
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
