import type { FileLister } from '../model/indexing.js';

/**
 * The few parts of an ELF file that the listers of programs need (Go's build information, the
 * audit data `cargo auditable` links into Rust programs): which files are programs, their section
 * headers (names, addresses, file offsets) and their loadable segments (to turn a virtual address
 * into a file offset). 32- and 64-bit, either byte order, as the System V ABI lays them out.
 *
 * The input is untrusted (any file of any layer), so every offset, count and size is checked
 * against the buffer before it is read: a header or table that does not fit is left out, never
 * read past, and nothing here throws. Table sizes are bounded by their 16-bit counts, so a hostile
 * header costs at most 65,535 entries of work.
 */

export const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);

const CLASS_32 = 1;
const CLASS_64 = 2;
const DATA_LSB = 1;
const DATA_MSB = 2;
/** e_shnum 0 with sections present: the count is section 0's sh_size (gABI extended numbering). */
const SHN_UNDEF = 0;
/** e_shstrndx that says the index is in section 0's sh_link. */
const SHN_XINDEX = 0xffff;
export const PT_LOAD = 1;
export const PF_X = 1;
export const PF_W = 2;
const SHT_NOBITS = 8;
const ET_EXEC = 2;
const ET_DYN = 3;

/** ELF's identification and e_type: the bytes isElfProgram reads. */
export const ELF_PROGRAM_HEAD_BYTES = 18;

export interface ElfSection {
  /** Its name's offset in the section-name string table. */
  readonly nameOffset: number;
  readonly type: number;
  readonly addr: number;
  /** Where its bytes are in the file; NaN for a section that occupies none (SHT_NOBITS). */
  readonly offset: number;
  readonly size: number;
}

export interface ElfSegment {
  readonly type: number;
  readonly flags: number;
  readonly offset: number;
  readonly vaddr: number;
  readonly filesz: number;
}

export interface Elf {
  readonly file: Buffer;
  readonly bigEndian: boolean;
  readonly is64: boolean;
  /** The section headers that lie within the file (none when the table is missing or outside it). */
  readonly sections: readonly ElfSection[];
  /** The index of the section-name string table in sections, or -1. */
  readonly sectionNames: number;
  /** The program headers that lie within the file. */
  readonly segments: readonly ElfSegment[];
}

/** Whether head starts with the ELF magic. */
export const isElf = (head: Buffer): boolean => head.length >= ELF_MAGIC.length && head.subarray(0, ELF_MAGIC.length).equals(ELF_MAGIC);

/**
 * Whether a file starting with head (its first ELF_PROGRAM_HEAD_BYTES bytes or more) may be a
 * program: an ELF executable or shared object (a position-independent executable is one) of a
 * class and byte order readElf reads. The archive walk reads only such files whole, not the
 * scripts and data that share their execute permission, nor object files, which are not linked.
 */
export function isElfProgram(head: Buffer): boolean {
  const layout = head.length >= ELF_PROGRAM_HEAD_BYTES ? identify(head) : undefined;
  if (layout === undefined) return false;
  const type = layout.bigEndian ? head.readUInt16BE(16) : head.readUInt16LE(16);
  return type === ET_EXEC || type === ET_DYN;
}

/** The word size and byte order the identification bytes give, undefined for a file this does not read. */
function identify(file: Buffer): { is64: boolean; bigEndian: boolean } | undefined {
  if (!isElf(file) || file.length < 16) return undefined;
  const elfClass = file[4];
  const data = file[5];
  if ((elfClass !== CLASS_32 && elfClass !== CLASS_64) || (data !== DATA_LSB && data !== DATA_MSB)) return undefined;
  return { is64: elfClass === CLASS_64, bigEndian: data === DATA_MSB };
}

/**
 * Whether a file's mode lets anyone execute it: an image's programs are installed so, wherever
 * they are (`usr/local/bin/*`, `app/server`, `ko-app/…`).
 */
const isExecutableMode = (mode: number): boolean => (mode & 0o111) !== 0;

/**
 * Which files a lister of ELF programs reads, as the archive walk asks (FileLister): executable
 * files wherever they are, then those whose first bytes make them ELF programs.
 */
export const ELF_PROGRAM_FILES = {
  considers: (_path: string, mode: number) => isExecutableMode(mode),
  headBytes: ELF_PROGRAM_HEAD_BYTES,
  selects: isElfProgram,
} satisfies Pick<FileLister, 'considers' | 'headBytes' | 'selects'>;

/** Reads fixed-width fields in one file's byte order and word size; undefined past the end. */
class Fields {
  constructor(
    private readonly file: Buffer,
    private readonly bigEndian: boolean,
    readonly is64: boolean,
  ) {}

  u16(at: number): number | undefined {
    if (at < 0 || at + 2 > this.file.length) return undefined;
    return this.bigEndian ? this.file.readUInt16BE(at) : this.file.readUInt16LE(at);
  }

  u32(at: number): number | undefined {
    if (at < 0 || at + 4 > this.file.length) return undefined;
    return this.bigEndian ? this.file.readUInt32BE(at) : this.file.readUInt32LE(at);
  }

  /**
   * A 64-bit field as a number; values past 2^53 come out inexact, but every such value is an
   * offset or size past any buffer, which the callers' bounds checks reject anyway.
   */
  u64(at: number): number | undefined {
    if (at < 0 || at + 8 > this.file.length) return undefined;
    return Number(this.bigEndian ? this.file.readBigUInt64BE(at) : this.file.readBigUInt64LE(at));
  }

  /** An address, offset or size: the word size's width. */
  word(at: number): number | undefined {
    return this.is64 ? this.u64(at) : this.u32(at);
  }
}

/**
 * The ELF file's headers, undefined when file is not an ELF file of a class and byte order this
 * reads (the identification bytes say which). Missing or truncated tables come out empty.
 */
export function readElf(file: Buffer): Elf | undefined {
  const layout = identify(file);
  if (layout === undefined) return undefined;
  const { is64, bigEndian } = layout;
  const f = new Fields(file, bigEndian, is64);
  // e_phoff, e_shoff, then e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx after e_flags and e_ehsize.
  const phoff = f.word(is64 ? 0x20 : 0x1c);
  const shoff = f.word(is64 ? 0x28 : 0x20);
  const tail = is64 ? 0x36 : 0x2a;
  const phentsize = f.u16(tail);
  const phnum = f.u16(tail + 2);
  const shentsize = f.u16(tail + 4);
  let shnum = f.u16(tail + 6);
  let shstrndx = f.u16(tail + 8);
  if (phoff === undefined || shoff === undefined || phentsize === undefined || phnum === undefined) return undefined;
  if (shentsize === undefined || shnum === undefined || shstrndx === undefined) return undefined;

  const sectionAt = (i: number): ElfSection | undefined => {
    const at = shoff + i * shentsize;
    if (shentsize < (is64 ? 0x40 : 0x28) || at + shentsize > file.length) return undefined;
    const nameOffset = f.u32(at);
    const type = f.u32(at + 4);
    const addr = f.word(at + (is64 ? 0x10 : 0x0c));
    const offset = f.word(at + (is64 ? 0x18 : 0x10));
    const size = f.word(at + (is64 ? 0x20 : 0x14));
    if (nameOffset === undefined || type === undefined || addr === undefined || offset === undefined || size === undefined)
      return undefined;
    return { nameOffset, type, addr, offset: type === SHT_NOBITS ? NaN : offset, size };
  };

  const sections: ElfSection[] = [];
  let sectionNames = -1;
  if (shoff !== 0) {
    if (shnum === SHN_UNDEF || shstrndx === SHN_XINDEX) {
      const first = sectionAt(0);
      const link = f.u32(shoff + (is64 ? 0x28 : 0x18));
      if (shnum === SHN_UNDEF) shnum = first === undefined ? 0 : Math.min(first.size, 0xffff);
      if (shstrndx === SHN_XINDEX) shstrndx = link ?? 0;
    }
    for (let i = 0; i < shnum; i++) {
      const section = sectionAt(i);
      if (section === undefined) break;
      sections.push(section);
    }
    if (shstrndx < sections.length) sectionNames = shstrndx;
  }

  const segments: ElfSegment[] = [];
  if (phoff !== 0 && phentsize >= (is64 ? 0x38 : 0x20)) {
    for (let i = 0; i < phnum; i++) {
      const at = phoff + i * phentsize;
      if (at + phentsize > file.length) break;
      const type = f.u32(at);
      const flags = f.u32(at + (is64 ? 0x04 : 0x18));
      const offset = f.word(at + (is64 ? 0x08 : 0x04));
      const vaddr = f.word(at + (is64 ? 0x10 : 0x08));
      const filesz = f.word(at + (is64 ? 0x20 : 0x10));
      if (type === undefined || flags === undefined || offset === undefined || vaddr === undefined || filesz === undefined) break;
      segments.push({ type, flags, offset, vaddr, filesz });
    }
  }
  return { file, bigEndian, is64, sections, sectionNames, segments };
}

/** Whether the section's name is name (compared as bytes in the string table, NUL-terminated). */
export function sectionNamed(elf: Elf, section: ElfSection, name: string): boolean {
  const table = elf.sections[elf.sectionNames];
  if (table === undefined || Number.isNaN(table.offset)) return false;
  const at = table.offset + section.nameOffset;
  const end = at + name.length;
  if (section.nameOffset + name.length >= table.size || end >= elf.file.length) return false;
  return elf.file.toString('latin1', at, end) === name && elf.file[end] === 0;
}

/** The first section named name, or undefined. */
export const sectionByName = (elf: Elf, name: string): ElfSection | undefined => elf.sections.find((s) => sectionNamed(elf, s, name));

/**
 * A section's bytes as the file holds them (not as loaded: for sections no segment loads, such as
 * notes and audit data), or undefined when it occupies none (SHT_NOBITS) or does not lie wholly
 * within the file.
 */
export function sectionBytes(elf: Elf, section: ElfSection): Buffer | undefined {
  const end = section.offset + section.size;
  if (!Number.isSafeInteger(section.offset) || !Number.isSafeInteger(end) || end > elf.file.length) return undefined;
  return elf.file.subarray(section.offset, end);
}

/**
 * The file's bytes at virtual address addr, at most size of them, as the loadable segment that
 * holds addr has them in the file (fewer when the segment's file image ends first, as Go's
 * debug/buildinfo reads them); undefined when no segment holds addr or its bytes are not all in
 * the file.
 */
export function readVirtual(elf: Elf, addr: number, size: number): Buffer | undefined {
  for (const s of elf.segments) {
    if (s.type !== PT_LOAD || addr < s.vaddr || addr - s.vaddr >= s.filesz) continue;
    const start = s.offset + (addr - s.vaddr);
    const n = Math.min(size, s.vaddr + s.filesz - addr);
    if (!Number.isSafeInteger(start) || start + n > elf.file.length) return undefined;
    return elf.file.subarray(start, start + n);
  }
  return undefined;
}
