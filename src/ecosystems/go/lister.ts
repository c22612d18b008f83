import type { ApplicationFindings, FileLister } from '../../model/indexing.js';
import { ecosystemPackageName, ecosystemRow } from '../catalog.js';
import { ELF_PROGRAM_FILES, readElf } from '../elf.js';
import { readBuildInfo, type BuildInfo } from './buildinfo.js';
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
 * Only executable ELF programs are read (elf.ts: ELF_PROGRAM_FILES): an image's programs are Linux
 * programs, installed with an execute permission wherever they are. An ELF file that is not a Go
 * binary lists nothing and is not unreadable; a Go binary whose build information cannot be
 * decoded is unreadable, with why.
 */

const GO = ecosystemRow('go');
const STDLIB = 'stdlib';
/** The main module's version when the go command knew none (runtime/debug's BuildInfo). */
const DEVEL = '(devel)';

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

/** The modules built into the program at location (none when it is no Go program). */
function list(location: string, content: Buffer): ApplicationFindings {
  const elf = readElf(content);
  const info = elf && readBuildInfo(elf);
  if (info === undefined) return { packages: [], unreadable: [] };
  if ('why' in info) return { packages: [], unreadable: [{ location, why: info.why }] };
  const packages = modulesOf(info).map(({ name, version }) => ({
    ecosystem: GO.namespace,
    name: ecosystemPackageName(GO, name),
    version,
    location,
  }));
  return { packages, unreadable: [] };
}

export const goBinaryLister = {
  name: 'go',
  version: 1,
  ...ELF_PROGRAM_FILES,
  list,
} satisfies FileLister;
