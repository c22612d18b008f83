import type { LayerFiles, Package, PackageLister } from '../../model/indexing.js';
import { dpkg } from './version.js';

/**
 * Lists the source packages of a dpkg database: `var/lib/dpkg/status`, and the one-file-per-package
 * `var/lib/dpkg/status.d/` that distroless images ship instead. Debian's and Ubuntu's advisories
 * are keyed by source package, so that is what a feature is.
 */

const STATUS = 'var/lib/dpkg/status';
const STATUS_D = 'var/lib/dpkg/status.d/';

/**
 * dpkg's own per-package info files. Distroless images copy some (`<pkg>.md5sums`) into status.d
 * next to the stanza files. A suffix test rather than "has a dot": package names may contain dots
 * (`libssl1.1`), and those files are stanzas.
 */
const COMPANION_SUFFIXES = [
  '.md5sums',
  '.conffiles',
  '.list',
  '.shlibs',
  '.symbols',
  '.triggers',
  '.templates',
  '.config',
  '.preinst',
  '.postinst',
  '.prerm',
  '.postrm',
];

/** The third word of `Status:` for packages whose files are on disk (dpkg-query(1) "package states"). */
const INSTALLED_STATES = new Set(['installed', 'half-configured', 'unpacked', 'half-installed', 'triggers-awaited', 'triggers-pending']);

/** A control-file paragraph: lower-cased field name → value (continuation lines joined by '\n'). */
export type Stanza = ReadonlyMap<string, string>;

/**
 * Parses deb822 control text (dpkg status, apt `.sources`): paragraphs separated by blank lines,
 * `Field: value` lines, continuation lines starting with a space or tab, `#` comment lines.
 * Field names are case-insensitive (deb822(5)). Lines it cannot read are skipped, never fatal.
 */
export function parseControl(text: string): Stanza[] {
  const stanzas: Stanza[] = [];
  let fields = new Map<string, string>();
  let last: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      if (fields.size > 0) stanzas.push(fields);
      fields = new Map();
      last = undefined;
    } else if (line.startsWith('#')) {
      continue;
    } else if (line.startsWith(' ') || line.startsWith('\t')) {
      if (last !== undefined) fields.set(last, `${fields.get(last) ?? ''}\n${line.trim()}`);
    } else {
      last = setField(fields, line);
    }
  }
  if (fields.size > 0) stanzas.push(fields);
  return stanzas;
}

/** Stores one `Field: value` line; returns the field name, or undefined for a line without a colon. */
function setField(fields: Map<string, string>, line: string): string | undefined {
  const colon = line.indexOf(':');
  if (colon <= 0) return undefined;
  const name = line.slice(0, colon).trim().toLowerCase();
  fields.set(name, line.slice(colon + 1).trim());
  return name;
}

function isStatusDFile(path: string): boolean {
  if (!path.startsWith(STATUS_D)) return false;
  const name = path.slice(STATUS_D.length);
  return name !== '' && !name.includes('/') && !COMPANION_SUFFIXES.some((suffix) => name.endsWith(suffix));
}

/** dpkg's list of the files each package installed, `info/<package>[:<arch>].list`: one absolute path per line. */
const FILE_LISTS = 'var/lib/dpkg/info/';

function isFileList(path: string): boolean {
  return path.startsWith(FILE_LISTS) && path.endsWith('.list') && !path.includes('/', FILE_LISTS.length);
}

function wants(path: string): boolean {
  return path === STATUS || isStatusDFile(path) || isFileList(path);
}

/** Every path the layer's file lists name (a package's directories are listed too). */
function ownedFiles(files: LayerFiles): ReadonlySet<string> | undefined {
  let owned: Set<string> | undefined;
  for (const [path, content] of files) {
    if (!isFileList(path)) continue;
    owned ??= new Set();
    for (const line of content.toString('utf8').split('\n')) if (line.startsWith('/')) owned.add(line.slice(1));
  }
  return owned;
}

/** Absent `Status:` means installed: distroless status.d files carry none. */
function isInstalled(stanza: Stanza): boolean {
  const status = stanza.get('status');
  if (status === undefined) return true;
  const state = status.split(/\s+/)[2];
  return state !== undefined && INSTALLED_STATES.has(state);
}

/** `Source: name (version)` names the source package, and its version when it differs from the binary's. */
function sourcePackage(stanza: Stanza): Package | undefined {
  const binary = stanza.get('package');
  const binaryVersion = stanza.get('version');
  const source = /^(\S+)(?:\s*\(([^)]*)\))?/.exec(stanza.get('source') ?? '');
  const name = source?.[1] ?? binary;
  const version = source?.[2]?.trim() ?? binaryVersion;
  if (!binary || !binaryVersion || !name || !version || !dpkg.valid(version)) return undefined;
  return { name, version };
}

/** The database's files in a fixed order: the status file, then status.d by name. */
function databaseFiles(files: LayerFiles): Buffer[] {
  const statusD = [...files.keys()].filter(isStatusDFile).sort();
  const status = files.get(STATUS);
  const contents = statusD.map((path) => files.get(path) ?? Buffer.alloc(0));
  return status === undefined ? contents : [status, ...contents];
}

function list(files: LayerFiles): Package[] | undefined {
  const contents = databaseFiles(files);
  if (contents.length === 0) return undefined;
  const packages = new Map<string, Package>();
  for (const content of contents) {
    // Package databases are not guaranteed to be UTF-8; names and versions are ASCII, so a lossy
    // decode (invalid bytes become U+FFFD) loses nothing that matters and never throws.
    for (const stanza of parseControl(content.toString('utf8'))) {
      const pkg = isInstalled(stanza) ? sourcePackage(stanza) : undefined;
      if (pkg) packages.set(`${pkg.name}\0${pkg.version}`, pkg);
    }
  }
  return [...packages.values()];
}

export const dpkgLister = {
  name: 'dpkg',
  // 3: its file lists say which application packages the OS package manager installed.
  version: 3,
  format: dpkg.name,
  databasePaths: [STATUS, STATUS_D],
  // Distroless images have no status file and add one status.d file per package, layer by layer.
  wholeDatabaseFiles: [STATUS],
  wants,
  list,
  ownedFiles,
} satisfies PackageLister;
