import type { ApplicationLister, ApplicationPackage, LayerFiles, UnreadableManifest } from '../../model/indexing.js';
import { ecosystemPackageName, ecosystemRow } from '../catalog.js';
import { readBuildInfo, type BuildInfo } from './buildinfo.js';
import { isElf, readElf } from './elf.js';
import { go } from './version.js';

/**
 * Lists the Go modules linked into the Go binaries of a layer, from the build information the Go
 * toolchain embeds in every binary (buildinfo.ts), as `go version -m` shows them and govulncheck
 * matches them:
 *
 * - each dependency (`dep`) at its version. A replaced dependency is the code of its replacement,
 *   so it is listed as the replacement's module path and version (govulncheck matches a replaced
 *   module by its replacement too). A replacement by a local directory (`=> ../fork` with no
 *   version, or `(devel)` as Go 1.19 writes a vendored one) is left out: the code is no
 *   published version of any module, so no advisory range can be
 *   evaluated against it, and listing the replaced module's version would claim code that is not
 *   in the binary.
 * - the main module (`mod`) when it has a version. Go before 1.24 stamps every main module
 *   `(devel)`, which is no version; from 1.24 a build from a tagged checkout has one.
 * - the standard library as the package `stdlib`, at the toolchain's version as the binary
 *   spells it (`go1.19.8`): the go version format reads release tags as OSV's stdlib versions, and
 *   `go version -m` prints the same. What runtime.Version() appends after a space (experiments:
 *   `go1.21.3 X:boringcrypto`) is not part of the version; a development toolchain
 *   (`devel go1.22-abcdef …`) has none that advisories could name, so stdlib is left out.
 *
 * Only ELF binaries are read: an image's programs are Linux programs. A file that is not ELF, or
 * an ELF file that is not a Go binary, lists nothing and is not unreadable; a Go binary whose
 * build information cannot be decoded is unreadable, with why.
 */

const GO = ecosystemRow('go');
const STDLIB = 'stdlib';
/** The main module's version when the go command knew none (runtime/debug's BuildInfo). */
const DEVEL = '(devel)';

/**
 * Extensions of files that are never linked programs: text, source, data, documents, images,
 * archives and object files. Shared libraries (`.so`) stay: `-buildmode=c-shared` output carries
 * build information too.
 */
const NOT_BINARY_EXTENSIONS = new Set(
  [
    ...['txt', 'md', 'rst', 'html', 'htm', 'xml', 'json', 'yaml', 'yml', 'toml', 'ini', 'cfg', 'conf', 'csv', 'log', 'pem', 'crt', 'key'],
    ...[
      'go',
      'mod',
      'sum',
      'c',
      'h',
      'hpp',
      'cc',
      'cpp',
      'py',
      'pyc',
      'pyi',
      'js',
      'mjs',
      'cjs',
      'ts',
      'map',
      'css',
      'rb',
      'pl',
      'pm',
      'php',
    ],
    ...['java', 'class', 'jar', 'war', 'sh', 'bash', 'service', 'desktop', 'mo', 'po', 'pot', 'qm'],
    ...['png', 'jpg', 'jpeg', 'gif', 'svg', 'ico', 'ttf', 'otf', 'woff', 'woff2', 'pdf'],
    ...['gz', 'tgz', 'xz', 'bz2', 'zst', 'zip', 'tar', 'deb', 'rpm', 'a', 'o', 'la'],
  ].map((e) => `.${e}`),
);

/** Directories that hold documentation, data and headers, never programs. */
const NOT_BINARY_DIRECTORIES = [
  'etc/',
  'usr/include/',
  'usr/share/doc/',
  'usr/share/man/',
  'usr/share/info/',
  'usr/share/locale/',
  'usr/share/i18n/',
  'usr/share/zoneinfo/',
  'usr/share/icons/',
  'usr/share/fonts/',
  'var/lib/dpkg/',
  'var/lib/apt/',
  'var/cache/',
  'var/log/',
];

/**
 * Whether path may be a Go binary. Go binaries can be anywhere (`usr/local/bin/*`, `app/server`,
 * `ko-app/…`) and have no extension to recognise them by, and the archive walk decides what to
 * buffer by path before it sees any content, so this keeps every file not obviously something
 * else and leaves it to list() to reject the rest by their first bytes. That buffers many files a
 * lister reading content would skip (every shared library and non-Go program), each under the
 * walk's per-file size cap, which a large Go binary can exceed (and the walk then fails the
 * layer): a walk that looks at a file's first bytes should select with isGoBinaryCandidate
 * instead.
 */
function wants(path: string): boolean {
  if (NOT_BINARY_DIRECTORIES.some((d) => path.startsWith(d))) return false;
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot <= 0 || !NOT_BINARY_EXTENSIONS.has(name.slice(dot).toLowerCase());
}

/** ELF's identification and e_type: the bytes isGoBinaryCandidate reads. */
export const GO_BINARY_HEAD_BYTES = 18;
const ET_EXEC = 2;
const ET_DYN = 3;

/**
 * Whether a file starting with head (its first GO_BINARY_HEAD_BYTES bytes or more) may be a Go
 * binary: an ELF executable or shared object of a class and byte order list() reads. For a walk
 * that can look at a file's first bytes before deciding to buffer it: that selects only programs,
 * which path rules cannot.
 */
export function isGoBinaryCandidate(head: Buffer): boolean {
  if (head.length < GO_BINARY_HEAD_BYTES || !isElf(head)) return false;
  const elfClass = head[4];
  const data = head[5];
  if ((elfClass !== 1 && elfClass !== 2) || (data !== 1 && data !== 2)) return false;
  const type = data === 2 ? head.readUInt16BE(16) : head.readUInt16LE(16);
  return type === ET_EXEC || type === ET_DYN;
}

/** The (name, version) pairs a binary's build information lists, each once, in the order above. */
function modulesOf(info: BuildInfo): { name: string; version: string }[] {
  const found = new Map<string, { name: string; version: string }>();
  const add = (name: string, version: string): void => {
    if (go.valid(version)) found.set(`${name}@${version}`, { name, version });
  };
  add(STDLIB, info.goVersion.split(' ', 1)[0] as string);
  if (info.main !== undefined && info.main.version !== DEVEL) add(info.main.path, info.main.version);
  for (const dep of info.deps) {
    const module = dep.replace ?? dep;
    if (module.version !== '') add(module.path, module.version);
  }
  return [...found.values()];
}

/** Sorted by location, so that the same files list the same way whatever order the archive held them in. */
function list(files: LayerFiles): { packages: ApplicationPackage[]; unreadable: UnreadableManifest[] } {
  const packages: ApplicationPackage[] = [];
  const unreadable: UnreadableManifest[] = [];
  for (const location of [...files.keys()].sort()) {
    const content = files.get(location) as Buffer;
    if (!isElf(content)) continue;
    const elf = readElf(content);
    if (elf === undefined) continue;
    const info = readBuildInfo(elf);
    if (info === undefined) continue;
    if ('why' in info) {
      unreadable.push({ location, why: info.why });
      continue;
    }
    for (const { name, version } of modulesOf(info)) {
      packages.push({ ecosystem: GO.namespace, name: ecosystemPackageName(GO, name), version, location });
    }
  }
  return { packages, unreadable };
}

export const goBinaryLister = {
  name: 'go',
  version: 1,
  wants,
  list,
} satisfies ApplicationLister;
