import type { LayerFiles, NamespaceDetector } from '../../model/indexing.js';
import { parseControl } from '../dpkg/lister.js';
import { debianFromCodename, ubuntuFromCodename } from './names.js';
import { fileText } from './parse.js';

/**
 * apt's package sources name the release by its suite: `deb http://deb.debian.org/debian
 * bookworm main`, or in deb822 form (`Suites: noble noble-updates`, the default since Debian 12
 * and Ubuntu 24.04). The first suite, in file order, whose code name is known decides.
 */
const SOURCES_LIST = 'etc/apt/sources.list';
const SOURCES_LIST_D = 'etc/apt/sources.list.d/';

/** apt reads only `*.list` and `*.sources` files in sources.list.d (sources.list(5)). */
function isSourcesPart(path: string): boolean {
  if (!path.startsWith(SOURCES_LIST_D)) return false;
  const name = path.slice(SOURCES_LIST_D.length);
  return !name.includes('/') && (name.endsWith('.list') || name.endsWith('.sources'));
}

function wants(path: string): boolean {
  return path === SOURCES_LIST || isSourcesPart(path);
}

/** sources.list first, then sources.list.d in name order, as apt reads them. */
function sourceFiles(files: LayerFiles): string[] {
  const parts = [...files.keys()].filter(isSourcesPart).sort();
  return files.has(SOURCES_LIST) ? [SOURCES_LIST, ...parts] : parts;
}

/** One-line format: `deb [option=value ...] uri suite [component ...]`, `#` starts a comment. */
function oneLineSuites(text: string): string[] {
  const suites: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const words = line
      .replace(/#.*/, '')
      .replace(/\[[^\]]*\]/, '')
      .trim()
      .split(/\s+/);
    const [type, , suite] = words;
    if ((type === 'deb' || type === 'deb-src') && suite !== undefined) suites.push(suite);
  }
  return suites;
}

/** deb822 format: paragraphs with `Types:`, `Suites:` and optionally `Enabled: no`. */
function deb822Suites(text: string): string[] {
  return parseControl(text)
    .filter((stanza) => stanza.get('enabled')?.toLowerCase() !== 'no')
    .filter((stanza) => (stanza.get('types') ?? '').split(/\s+/).some((type) => type === 'deb' || type === 'deb-src'))
    .flatMap((stanza) => (stanza.get('suites') ?? '').split(/\s+/));
}

/**
 * `bookworm`, `bookworm-security`, `jessie/updates`, `jammy-updates` → the code name's release.
 * Class names other than unstable (stable, oldstable, testing) are ignored: which release they
 * mean changes over time, so they cannot name one.
 */
function namespaceFromSuite(suite: string): string | undefined {
  const codename = suite.split(/[-/]/, 1)[0] ?? '';
  return debianFromCodename(codename) ?? ubuntuFromCodename(codename);
}

export const aptSourcesDetector = {
  name: 'apt-sources',
  version: 1,
  wants,
  detect(files: LayerFiles): string | undefined {
    for (const path of sourceFiles(files)) {
      const text = fileText(files, path) ?? '';
      const suites = path.endsWith('.sources') ? deb822Suites(text) : oneLineSuites(text);
      for (const suite of suites) {
        const namespace = namespaceFromSuite(suite);
        if (namespace !== undefined) return namespace;
      }
    }
    return undefined;
  },
} satisfies NamespaceDetector;
