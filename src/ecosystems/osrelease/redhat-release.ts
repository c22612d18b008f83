import type { LayerFiles, NamespaceDetector } from '../../model/indexing.js';
import { fileText } from './parse.js';

/**
 * The one-line release files of Red Hat and its relatives (`CentOS Linux release 7.9.2009 (Core)`).
 * Distribution-specific files come before the shared `redhat-release` and `system-release`,
 * which are often copies of (or links to) them, and which Oracle Linux fills with Red Hat's text.
 */
const RELEASE_FILES = [
  'etc/oracle-release',
  'etc/centos-release',
  'etc/almalinux-release',
  'etc/rocky-release',
  'etc/fedora-release',
  'etc/redhat-release',
  'etc/system-release',
];

/**
 * Each pattern captures the namespace version: the major release, except for the Amazon Linux AMI,
 * whose releases are named `YYYY.MM` (`2018.03`). Unlike Clair, which named RHEL `centos:N`, RHEL
 * is `rhel:N`. Other texts (Scientific Linux, ...) name no supported distribution.
 */
const RELEASE_LINES: readonly { readonly pattern: RegExp; readonly distribution: string }[] = [
  { pattern: /^Amazon Linux AMI release (\d+\.\d+)/i, distribution: 'amzn' },
  { pattern: /^Amazon Linux release (\d+)/i, distribution: 'amzn' },
  { pattern: /^Oracle Linux (?:Server )?release (\d+)/i, distribution: 'oracle' },
  { pattern: /^Red Hat Enterprise Linux\b.*? release (\d+)/i, distribution: 'rhel' },
  { pattern: /^CentOS (?:Linux |Stream )?release (\d+)/i, distribution: 'centos' },
  { pattern: /^Rocky Linux release (\d+)/i, distribution: 'rocky' },
  { pattern: /^AlmaLinux release (\d+)/i, distribution: 'almalinux' },
  { pattern: /^Fedora release (\d+)/i, distribution: 'fedora' },
];

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
