import type { LayerFiles, NamespaceDetector } from '../../model/indexing.js';
import { DISTRIBUTIONS } from '../catalog.js';
import { digestOf } from '../digest.js';
import { fileText } from './parse.js';

/**
 * The one-line release files of Red Hat and its relatives (`CentOS Linux release 7.9.2009 (Core)`),
 * as the catalog's rows say (releaseFile). Each distribution's own file comes before the shared
 * `redhat-release` and `system-release`, which are often copies of (or links to) them, and which
 * Oracle Linux fills with Red Hat's text.
 */
const SHARED_RELEASE_FILES = ['etc/redhat-release', 'etc/system-release'];
const RELEASE_FILES = [...DISTRIBUTIONS.flatMap((d) => d.releaseFile?.file ?? []), ...SHARED_RELEASE_FILES];

/**
 * Each pattern captures the namespace version: the major release, except for the Amazon Linux AMI,
 * whose releases are named `YYYY.MM` (`2018.03`). Unlike Clair, which named RHEL `centos:N`, RHEL
 * is `rhel:N`. Other texts (Scientific Linux, ...) name no supported distribution.
 */
const RELEASE_LINES = DISTRIBUTIONS.flatMap((d) => (d.releaseFile?.lines ?? []).map((pattern) => ({ pattern, distribution: d.id })));

/** The rows this detector names layers by, in the order it reads them: a change indexes layers again. */
const RELEASE_FILE_FINGERPRINT = digestOf(
  DISTRIBUTIONS.flatMap((d) => (d.releaseFile ? [[d.id, d.releaseFile.file ?? null, d.releaseFile.lines.map(String)]] : [])),
);

/** The namespace named by a release file's text, e.g. `Oracle Linux Server release 8.9` → `oracle:8`. */
export function namespaceFromReleaseLine(text: string): string | undefined {
  const line = text.trim();
  for (const { pattern, distribution } of RELEASE_LINES) {
    const version = pattern.exec(line)?.[1];
    if (version !== undefined) return `${distribution}:${version}`;
  }
  return undefined;
}

export const redhatReleaseDetector = {
  name: 'redhat-release',
  version: 1,
  fingerprint: RELEASE_FILE_FINGERPRINT,
  wants: (path: string) => RELEASE_FILES.includes(path),
  detect(files: LayerFiles): string | undefined {
    for (const path of RELEASE_FILES) {
      const text = fileText(files, path);
      const namespace = text === undefined ? undefined : namespaceFromReleaseLine(text);
      if (namespace !== undefined) return namespace;
    }
    return undefined;
  },
} satisfies NamespaceDetector;
