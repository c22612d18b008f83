import { PF_W, PF_X, PT_LOAD, readVirtual, sectionByName, type Elf } from '../elf.js';

/**
 * The build information the Go linker writes into every binary, read as Go's own debug/buildinfo
 * reads it (go1.19 `src/debug/buildinfo/buildinfo.go`, which `go version -m` prints): a 32-byte
 * header at the start of the `.go.buildinfo` section, then the toolchain version and the module
 * information.
 *
 * The header is the magic `\xff Go buildinf:` (14 bytes), the pointer size, and a flags byte: bit
 * 0 says big-endian, bit 1 that the strings follow the header inline, each prefixed by its length
 * as an unsigned varint (Go 1.18 on). Before Go 1.18 the header instead holds two pointers, to the
 * string headers (data pointer, length) of runtime.buildVersion and runtime.modinfo, which are
 * virtual addresses to resolve through the loadable segments.
 *
 * Where the header is: at the start of the `.go.buildinfo` section when the section headers say
 * so; without them (a binary whose section table was stripped or lost) at the start of the first
 * writable, non-executable loadable segment, where the linker puts that section first. Either way
 * Go looks for the magic at a 16-byte-aligned offset within the first 64 KiB, and so does this.
 */

const MAGIC = Buffer.from('\xff Go buildinf:', 'latin1');
const HEADER_SIZE = 32;
const ALIGN = 16;
const SEARCH_BYTES = 64 * 1024;
const FLAG_BIG_ENDIAN = 0x1;
const FLAG_INLINE = 0x2;
/** Go's readString refuses longer strings behind the old format's pointers. */
const MAX_POINTED_STRING = 20 << 20;
/** runtime.modinfo is framed by 16-byte sentinels (cmd/go's infoStart and infoEnd). */
const SENTINEL_BYTES = 16;

/** A module as the build information names it; version is empty for a local directory replacement. */
export interface BuildModule {
  readonly path: string;
  readonly version: string;
  readonly replace?: { readonly path: string; readonly version: string };
}

export interface BuildInfo {
  /** The toolchain that built it, as runtime.Version() reports it (`go1.19.8`, `go1.21.3 X:boringcrypto`). */
  readonly goVersion: string;
  /** The main module, absent for a binary built outside module mode (GOPATH) or without module information. */
  readonly main?: BuildModule;
  readonly deps: readonly BuildModule[];
}

/**
 * The binary's build information; undefined when it is not a Go binary (no `.go.buildinfo`
 * section and no magic where the section would be); `{ why }` when it is one but its build
 * information cannot be decoded.
 */
export function readBuildInfo(elf: Elf): BuildInfo | { why: string } | undefined {
  const window = buildInfoWindow(elf);
  if (window === undefined) return undefined;
  if ('why' in window) return window;
  const header = findHeader(window.data);
  if (header < 0) return window.fromSection ? { why: 'its .go.buildinfo section has no build information header' } : undefined;
  const data = window.data.subarray(header);
  const pointerSize = data[14] as number;
  const flags = data[15] as number;
  let goVersion: string | undefined;
  let modinfo: string | undefined;
  if (flags & FLAG_INLINE) {
    const version = varintString(data, HEADER_SIZE);
    if (version === undefined) return { why: 'its Go version string runs past the build information' };
    const mod = varintString(data, version.end);
    if (mod === undefined) return { why: 'its module information string runs past the build information' };
    goVersion = version.text;
    modinfo = mod.text;
  } else {
    if (pointerSize !== 4 && pointerSize !== 8) return { why: `its build information header gives a pointer size of ${pointerSize}` };
    const bigEndian = (flags & FLAG_BIG_ENDIAN) !== 0;
    const pointer = (b: Buffer, at: number): number =>
      pointerSize === 4
        ? bigEndian
          ? b.readUInt32BE(at)
          : b.readUInt32LE(at)
        : Number(bigEndian ? b.readBigUInt64BE(at) : b.readBigUInt64LE(at));
    const pointed = (at: number): string | undefined => {
      const stringHeader = readVirtual(elf, pointer(data, at), 2 * pointerSize);
      if (stringHeader === undefined || stringHeader.length < 2 * pointerSize) return undefined;
      const length = pointer(stringHeader, pointerSize);
      if (length > MAX_POINTED_STRING) return undefined;
      if (length === 0) return '';
      const bytes = readVirtual(elf, pointer(stringHeader, 0), length);
      return bytes !== undefined && bytes.length === length ? bytes.toString('utf8') : undefined;
    };
    goVersion = pointed(16);
    if (goVersion === undefined) return { why: 'its Go version pointer leads outside the file' };
    modinfo = pointed(16 + pointerSize);
    if (modinfo === undefined) return { why: 'its module information pointer leads outside the file' };
  }
  if (goVersion === '') return { why: 'its build information has no Go version' };
  // Without both sentinels there is no module information (a binary built outside module mode before Go 1.18).
  const framed = modinfo.length >= 2 * SENTINEL_BYTES + 1 && modinfo[modinfo.length - SENTINEL_BYTES - 1] === '\n';
  const modules = parseModuleInfo(framed ? modinfo.slice(SENTINEL_BYTES, -SENTINEL_BYTES) : '');
  if ('why' in modules) return modules;
  return { goVersion, ...modules };
}

/** The bytes in which to look for the header, and whether the section table named them. */
function buildInfoWindow(elf: Elf): { data: Buffer; fromSection: boolean } | { why: string } | undefined {
  const section = sectionByName(elf, '.go.buildinfo');
  if (section !== undefined) {
    // Go reads it through the segment that loads it; its file offset says the same for any binary the linker wrote.
    const viaSegment = readVirtual(elf, section.addr, SEARCH_BYTES);
    if (viaSegment !== undefined) return { data: viaSegment, fromSection: true };
    if (Number.isNaN(section.offset) || section.offset >= elf.file.length)
      return { why: 'its .go.buildinfo section lies outside the file' };
    return { data: elf.file.subarray(section.offset, Math.min(elf.file.length, section.offset + SEARCH_BYTES)), fromSection: true };
  }
  const data = elf.segments.find((s) => s.type === PT_LOAD && (s.flags & (PF_X | PF_W)) === PF_W);
  if (data === undefined) return undefined;
  const bytes = readVirtual(elf, data.vaddr, SEARCH_BYTES);
  return bytes === undefined ? undefined : { data: bytes, fromSection: false };
}

/** The offset of the first header at a 16-byte-aligned offset of data (with its 32 bytes whole), or -1. */
function findHeader(data: Buffer): number {
  for (let from = 0; ;) {
    const i = data.indexOf(MAGIC, from);
    if (i < 0 || data.length - i < HEADER_SIZE) return -1;
    if (i % ALIGN === 0) return i;
    from = i + ALIGN - (i % ALIGN);
  }
}

/** The string at data[at] prefixed by its length as an unsigned varint (encoding/binary's Uvarint). */
function varintString(data: Buffer, at: number): { text: string; end: number } | undefined {
  let length = 0;
  let scale = 1;
  let i = at;
  for (;;) {
    // Ten bytes encode any uint64; a longer run is malformed, and any length past 2^53 is past the buffer.
    if (i >= data.length || i - at >= 10) return undefined;
    const byte = data[i] as number;
    length += (byte & 0x7f) * scale;
    scale *= 128;
    i += 1;
    if (byte < 0x80) break;
  }
  if (length > data.length - i) return undefined;
  return { text: data.toString('utf8', i, i + length), end: i + length };
}

/**
 * The module lines of runtime/debug's ParseBuildInfo (the reverse of BuildInfo.String, which
 * `go version -m` prints): `mod` (the main module), `dep` (a dependency), each a path, a version
 * and optionally a checksum, tab-separated; `=>` (the replacement of the module on the line
 * before: path, version, checksum; a local directory has an empty version). `path` and `build`
 * lines say how it was built, not what it contains; a last line without its newline is ignored,
 * as Go ignores it. A malformed module line makes Go reject the whole build information, and so
 * here.
 */
function parseModuleInfo(text: string): { main?: BuildModule; deps: BuildModule[] } | { why: string } {
  let main: BuildModule | undefined;
  const deps: BuildModule[] = [];
  /** Where the module of the line before is kept, so that a `=>` line can replace it there. */
  let last: { set: (m: BuildModule) => void; module: BuildModule } | undefined;
  const lines = text.split('\n');
  lines.pop();
  for (const [n, line] of lines.entries()) {
    const word = line.slice(0, line.indexOf('\t') + 1);
    const fields = line.slice(word.length).split('\t');
    if (word === 'mod\t' || word === 'dep\t') {
      if (fields.length !== 2 && fields.length !== 3)
        return { why: `line ${n + 1} of its module information has ${fields.length} columns, not 2 or 3` };
      const module: BuildModule = { path: fields[0] as string, version: fields[1] as string };
      if (word === 'mod\t') {
        main = module;
        last = { module, set: (m) => (main = m) };
      } else {
        const index = deps.push(module) - 1;
        last = { module, set: (m) => (deps[index] = m) };
      }
    } else if (word === '=>\t') {
      if (fields.length !== 3)
        return { why: `line ${n + 1} of its module information has ${fields.length} columns for a replacement, not 3` };
      if (last === undefined) return { why: `line ${n + 1} of its module information replaces no module` };
      last.set({ ...last.module, replace: { path: fields[0] as string, version: fields[1] as string } });
      last = undefined;
    }
  }
  return main === undefined ? { deps } : { main, deps };
}
