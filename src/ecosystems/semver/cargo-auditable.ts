import { inflateSync } from 'node:zlib';
import type { ApplicationFindings, FileLister } from '../../model/indexing.js';
import { isJsonObject, listManifest, manifestEntry, readJsonManifest, type ManifestReading } from '../application-manifests.js';
import { ecosystemRow } from '../catalog.js';
import { ELF_PROGRAM_FILES, readElf, sectionBytes, sectionByName } from '../elf.js';
import { semver } from './version.js';

/**
 * Lists the crates.io crates built into Rust programs that `cargo auditable` built: it links into
 * each program a section `.dep-v0` holding its dependency tree as zlib-compressed (RFC 1950) JSON,
 * `{"format": 1, "packages": [{"name", "version", "source", "kind", "dependencies", "root"}, …]}`
 * (the `auditable-serde` crate's VersionInfo; `format` says how the tree was collected, and every
 * format so far has this shape). What is listed, and why:
 *
 * - packages whose `source` is `crates.io`, at their version, as Cargo.lock's lister does: the
 *   registry whose crates RustSec's advisories (OSV's crates.io ecosystem) name. Skipped: `local`
 *   (the workspace's own crates and path dependencies, code of the image's own), `git` (a
 *   repository at a commit, whose version field names no published crate), `registry` (another
 *   registry, where a crate of the same name is other code) and any other source a later writer
 *   names. The root package, the program itself, follows the same rule: usually `local` (built from
 *   a checkout), so left out; `crates.io` when `cargo auditable install <crate>` built it, and then
 *   it is that published crate's code, which advisories may name.
 * - only runtime dependencies (`kind` absent or `runtime`), as Syft and Trivy read the section.
 *   `build` marks crates that only ran at build time (build scripts and their dependencies, and
 *   from format 1 on procedural macros): their code is not in the program, so their advisories say
 *   nothing about it. Format 0 records procedural macros as runtime dependencies, so those are
 *   listed: more than the program holds, never less. `dev` is no kind cargo auditable writes (it
 *   leaves dev-dependencies out), but such a crate would be in no program either, so it is skipped
 *   as `build` is; any other kind is reported, with the package, rather than guessed at.
 *
 * Only executable ELF programs are read (elf.ts: ELF_PROGRAM_FILES), and the section is found by
 * name, as cargo auditable's own reader finds it, so a program whose section headers were removed
 * lists nothing. A program without the section lists nothing and is not unreadable: most programs
 * are not built with cargo auditable. The section is untrusted: it is inflated to at most
 * MAX_AUDIT_DATA_BYTES (zlib inflates up to about a thousand times its input), and anything not of
 * the shape above makes the program unreadable with why, never an exception.
 */

const CRATES_IO = ecosystemRow('crates.io');
const SECTION = '.dep-v0';
/** The source cargo auditable records for crates from crates.io. */
const CRATES_IO_SOURCE = 'crates.io';
/** Kinds of crates that are not in the program: build-time only (`dev`: see above). */
const NOT_LINKED_KINDS = new Set(['build', 'dev']);
const RUNTIME_KIND = 'runtime';
/**
 * The most the section is inflated to: the limit cargo auditable's own reader (auditable-info)
 * applies by default, far above real data (about 100 bytes a package).
 */
export const MAX_AUDIT_DATA_BYTES = 8 * 1024 * 1024;

/** The section's JSON, or why it does not inflate to any within MAX_AUDIT_DATA_BYTES. */
function inflateAuditData(section: Buffer): Buffer | { why: string } {
  try {
    return inflateSync(section, { maxOutputLength: MAX_AUDIT_DATA_BYTES });
  } catch (e) {
    const error = e as NodeJS.ErrnoException;
    if (error.code === 'ERR_BUFFER_TOO_LARGE') return { why: `inflates to more than ${MAX_AUDIT_DATA_BYTES} bytes` };
    return { why: `not zlib data: ${error.message}` };
  }
}

/** The packages of cargo auditable's JSON, or why it is not of that shape. */
function readVersionInfo(value: unknown): ManifestReading {
  if (!isJsonObject(value) || !Array.isArray(value.packages)) return { why: 'not cargo auditable data: no packages array' };
  const entries = value.packages.map((item: unknown, index) => {
    const label = `packages[${index}]`;
    if (!isJsonObject(item)) return { why: `${label}: not an object` };
    const { name, version, source, kind } = item;
    const entry = manifestEntry(name, version, label);
    if ('why' in entry) return entry;
    if (typeof source !== 'string') return { why: `${entry.name}: no source` };
    const linked = kind === undefined || kind === RUNTIME_KIND;
    if (!linked && !(typeof kind === 'string' && NOT_LINKED_KINDS.has(kind)))
      return { why: `${entry.name}: kind ${JSON.stringify(kind)} is neither runtime nor build` };
    return linked && source === CRATES_IO_SOURCE ? entry : undefined;
  });
  return { entries: entries.filter((entry) => entry !== undefined) };
}

/** The crates built into the program at location (none when it has no audit data). */
function list(location: string, content: Buffer): ApplicationFindings {
  const elf = readElf(content);
  const section = elf === undefined ? undefined : sectionByName(elf, SECTION);
  if (elf === undefined || section === undefined) return { packages: [], unreadable: [] };
  const compressed = sectionBytes(elf, section);
  const json = compressed === undefined ? { why: 'lies outside the file' } : inflateAuditData(compressed);
  const found = listManifest(location, 'why' in json ? json : readJsonManifest(json, readVersionInfo), CRATES_IO, semver);
  // Every reason names the section: the location is the whole program.
  return { packages: found.packages, unreadable: found.unreadable.map(({ why }) => ({ location, why: `its ${SECTION} section: ${why}` })) };
}

export const cargoAuditableLister = {
  name: 'cargo-auditable',
  version: 1,
  ...ELF_PROGRAM_FILES,
  list,
} satisfies FileLister;
