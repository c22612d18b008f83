import type { ApplicationLister, ApplicationPackage, LayerFiles, UnreadableManifest } from '../../model/indexing.js';
import { ecosystemPackageName, ecosystemRow } from '../catalog.js';

/**
 * Lists the Python distributions installed in a layer, as Python's own importlib.metadata finds
 * them on a `site-packages` or `dist-packages` directory (pip, virtualenvs, `--user` installs,
 * Debian's python3-* packages), whatever the prefix above it:
 * - `<name>-<version>.dist-info/METADATA`: a wheel installed by pip;
 * - `<name>-<version>.egg-info/PKG-INFO`: setuptools' `setup.py install` and Debian's packaging;
 * - `<name>-<version>.egg-info` as a file: distutils' install_egg_info, whose file is the PKG-INFO;
 * - `<name>-<version>.egg/EGG-INFO/PKG-INFO`: an easy_install egg, which easy-install.pth puts on
 *   the path.
 * The name and version are the metadata's `Name` and `Version` headers: the directory's name
 * escapes or normalises them in ways that changed across tools (`zope_interface-8.6.dist-info` for
 * zope.interface, `cryptography.egg-info` with no version at all).
 *
 * Not decided here: which of these distributions the operating system's package manager installed
 * (Debian's python3-yaml ships a PyYAML egg-info), whose advisories already reach them through the
 * OS package. The indexer drops those by the OS package databases' file lists (PackageLister's
 * ownedFiles), for every ecosystem alike.
 */

const PYPI = ecosystemRow('pypi');

/**
 * A metadata file directly in a site directory, as importlib.metadata looks for it: it matches the
 * `.dist-info` / `.egg-info` suffix case-insensitively, and the files inside by their exact name.
 */
const METADATA_PATH = new RegExp(
  '(?:^|/)(?:site|dist)-packages/(?:' +
    [
      '[^/]+\\.[dD][iI][sS][tT]-[iI][nN][fF][oO]/METADATA',
      '[^/]+\\.[eE][gG][gG]-[iI][nN][fF][oO](?:/PKG-INFO)?',
      '[^/]+\\.egg/EGG-INFO/PKG-INFO',
    ].join('|') +
    ')$',
);

function wants(path: string): boolean {
  return METADATA_PATH.test(path);
}

/**
 * A header line: a name of printable characters other than `:`, then `:` (the header pattern of
 * Python's email.feedparser, which importlib.metadata parses these files with). A line starting
 * with `:` is a header without a name, which feedparser skips, continuations and all.
 */
const HEADER = /^([\x21-\x39\x3b-\x7e]*):(.*)$/;

/**
 * The RFC 822 headers of a core metadata file, by lower-cased name, the first occurrence of each
 * (as email.message.Message.get answers). Headers end at the first blank line, after which comes the
 * description, or at the first line that is neither a header nor a continuation (feedparser takes
 * it for the start of the body). A continuation line (starting with a space or tab) is unfolded
 * into the header before it. Values are trimmed, where Python keeps trailing blanks.
 */
export function parseHeaders(text: string): ReadonlyMap<string, string> {
  const headers = new Map<string, string>();
  let current: { name: string; value: string } | undefined;
  const keep = (): void => {
    if (current !== undefined && !headers.has(current.name)) headers.set(current.name, current.value.trim());
  };
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') break;
    if (line[0] === ' ' || line[0] === '\t') {
      if (current !== undefined) current.value += ` ${line.trim()}`;
      continue;
    }
    const header = HEADER.exec(line);
    if (header === null) break;
    keep();
    const name = (header[1] as string).toLowerCase();
    current = name === '' ? undefined : { name, value: header[2] as string };
  }
  keep();
  return headers;
}

const UTF8 = new TextDecoder('utf-8');

/** One file's distribution, or why it names none. */
function readMetadata(location: string, content: Buffer): ApplicationPackage | UnreadableManifest {
  // Name and Version are ASCII; a description in Latin-1 (old distutils) must not make them unreadable.
  const headers = parseHeaders(UTF8.decode(content));
  const name = headers.get('name');
  const version = headers.get('version');
  const missing = [name ? undefined : 'Name', version ? undefined : 'Version'].filter((h) => h !== undefined);
  if (!name || !version) return { location, why: `core metadata without ${missing.join(' or ')} header` };
  return { ecosystem: PYPI.namespace, name: ecosystemPackageName(PYPI, name), version, location };
}

function list(files: LayerFiles): { packages: ApplicationPackage[]; unreadable: UnreadableManifest[] } {
  const packages: ApplicationPackage[] = [];
  const unreadable: UnreadableManifest[] = [];
  // One file describes one distribution, and a location is one key of files: each name, version
  // and location comes once.
  for (const location of [...files.keys()].filter(wants).sort()) {
    const found = readMetadata(location, files.get(location) as Buffer);
    if ('why' in found) unreadable.push(found);
    else packages.push(found);
  }
  return { packages, unreadable };
}

export const pythonLister = {
  name: 'python',
  version: 1,
  wants,
  list,
} satisfies ApplicationLister;
