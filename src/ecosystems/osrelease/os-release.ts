import type { LayerFiles, NamespaceDetector } from '../../model/indexing.js';
import { DISTRIBUTIONS, distributionWithOsReleaseId, type Distribution } from '../catalog.js';
import { digestOf } from '../digest.js';
import { alpineFromVersion, debianFromCodename, debianFromVersionText, ubuntuFromCodename, withMajor, withVersion } from './names.js';
import { fileText, parseOsRelease, type ReleaseFields } from './parse.js';

/**
 * os-release(5): `/etc/os-release`, falling back to `/usr/lib/os-release` only when the former is
 * missing. An empty `etc/os-release` counts as missing: it is what a symbolic link to a file in
 * another layer looks like.
 */
const OS_RELEASE_PATHS = ['etc/os-release', 'usr/lib/os-release'];

/** Read only for Debian os-release files that carry no version (distroless images, testing). */
const DEBIAN_VERSION = 'etc/debian_version';

/**
 * The namespace that os-release fields name: the catalog's distribution with that ID, named by its
 * rule; undefined for any other ID (Scientific Linux, Hummingbird, …). ID_LIKE is deliberately not
 * followed: a derivative's package versions differ from its parent's, so matching them against the
 * parent's advisories would report wrong fixes.
 */
export function namespaceFromOsRelease(fields: ReleaseFields, debianVersion?: string): string | undefined {
  const id = (fields.ID ?? '').toLowerCase();
  const version = fields.VERSION_ID ?? '';
  if (id === 'opensuse') return legacyOpenSuse(fields);
  const distribution = distributionWithOsReleaseId(id);
  if (!distribution) return undefined;
  switch (distribution.naming) {
    case 'debian':
      return debian(fields, debianVersion);
    case 'ubuntu':
      return ubuntu(fields);
    case 'alpine':
      return alpineFromVersion(version);
    case 'major':
      return withMajor(distribution.id, version);
    case 'version':
      return withVersion(distribution.id, version);
    case 'rolling':
      return `${distribution.id}:rolling`;
  }
}

/**
 * Debian 12 says VERSION_ID="12". Testing and sid have no VERSION_ID but name the coming release
 * (VERSION_CODENAME=trixie, PRETTY_NAME="Debian GNU/Linux trixie/sid"); some distroless images
 * have neither, leaving `/etc/debian_version` (`10.8`) as the only record of the release.
 */
function debian(fields: ReleaseFields, debianVersion: string | undefined): string | undefined {
  if (fields.VERSION_ID) return withMajor('debian', fields.VERSION_ID);
  if (fields.VERSION_CODENAME) return debianFromCodename(fields.VERSION_CODENAME);
  const testing = /(\w+)\/sid\b/.exec(fields.PRETTY_NAME ?? '')?.[1];
  if (testing !== undefined) return debianFromCodename(testing);
  return debianVersion === undefined ? undefined : debianFromVersionText(debianVersion);
}

/** Ubuntu keeps X.Y; a development release without VERSION_ID still has its code name. */
function ubuntu(fields: ReleaseFields): string | undefined {
  if (fields.VERSION_ID) return withVersion('ubuntu', fields.VERSION_ID);
  const codename = fields.VERSION_CODENAME || fields.UBUNTU_CODENAME;
  return codename ? ubuntuFromCodename(codename) : undefined;
}

/** openSUSE before Leap 15 said ID=opensuse for both Leap (42.x) and Tumbleweed. */
function legacyOpenSuse(fields: ReleaseFields): string | undefined {
  const name = fields.PRETTY_NAME ?? fields.NAME ?? '';
  if (/tumbleweed/i.test(name)) return 'opensuse-tumbleweed:rolling';
  if (/leap/i.test(name)) return withVersion('opensuse-leap', fields.VERSION_ID ?? '');
  return undefined;
}

/**
 * What namespaceFromOsRelease reads of the catalog: each row's id, os-release IDs and naming rule,
 * in no particular order (rows may be reordered without indexing anything again).
 */
export const namingFingerprint = (distributions: readonly Distribution[]): string =>
  digestOf(distributions.map((d) => JSON.stringify([d.id, d.osReleaseIds, d.naming])).sort());

/** The catalog's naming rows as this build has them: a row added or changed indexes layers again, with no version bump. */
export const NAMING_FINGERPRINT = namingFingerprint(DISTRIBUTIONS);

function osReleaseText(files: LayerFiles): string | undefined {
  for (const path of OS_RELEASE_PATHS) {
    const text = fileText(files, path);
    if (text !== undefined && text.trim() !== '') return text;
  }
  return undefined;
}

export const osReleaseDetector = {
  name: 'os-release',
  // 2: Photon, Azure Linux, CBL-Mariner and SLE Micro layers are named (catalog rows, before the
  // fingerprint followed them). Catalog rows change the fingerprint, not the version.
  version: 2,
  fingerprint: NAMING_FINGERPRINT,
  wants: (path: string) => OS_RELEASE_PATHS.includes(path) || path === DEBIAN_VERSION,
  detect(files: LayerFiles): string | undefined {
    const text = osReleaseText(files);
    if (text === undefined) return undefined;
    return namespaceFromOsRelease(parseOsRelease(text), fileText(files, DEBIAN_VERSION));
  },
} satisfies NamespaceDetector;
