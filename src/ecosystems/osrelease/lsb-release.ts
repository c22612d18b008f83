import type { LayerFiles, NamespaceDetector } from '../../model/indexing.js';
import { NAMING_FINGERPRINT, namespaceFromOsRelease } from './os-release.js';
import { fileText, parseOsRelease } from './parse.js';

/**
 * `/etc/lsb-release` (Ubuntu, from before os-release existed): `DISTRIB_ID=Ubuntu`,
 * `DISTRIB_RELEASE=12.04`, `DISTRIB_CODENAME=precise`. The same shell syntax as os-release, so
 * the fields are renamed and the os-release rules apply (Debian → major, Ubuntu → X.Y).
 */
const LSB_RELEASE = 'etc/lsb-release';

export const lsbReleaseDetector = {
  name: 'lsb-release',
  version: 1,
  // The os-release rules, so the same catalog rows.
  fingerprint: NAMING_FINGERPRINT,
  wants: (path: string) => path === LSB_RELEASE,
  detect(files: LayerFiles): string | undefined {
    const text = fileText(files, LSB_RELEASE);
    if (text === undefined) return undefined;
    const lsb = parseOsRelease(text);
    return namespaceFromOsRelease({
      ID: lsb.DISTRIB_ID ?? '',
      VERSION_ID: lsb.DISTRIB_RELEASE ?? '',
      VERSION_CODENAME: lsb.DISTRIB_CODENAME ?? '',
    });
  },
} satisfies NamespaceDetector;
