/**
 * Small ELF files built in the tests, for the cases no committed binary covers: 32-bit and
 * big-endian files, the build information layout of Go before 1.18 (pointers to string headers)
 * and of 1.18 on (strings inline), and files that are ELF but not Go. Each is a file Go's
 * debug/elf accepts (go-lister-oracle.test.ts checks them with `go version -m`): an ELF header,
 * one writable PT_LOAD segment holding the data, and section headers naming `.go.buildinfo`.
 */

export interface ElfShape {
  readonly is64: boolean;
  readonly bigEndian: boolean;
}

export const ELF_SHAPES: readonly (ElfShape & { name: string })[] = [
  { name: '64-bit little-endian', is64: true, bigEndian: false },
  { name: '64-bit big-endian', is64: true, bigEndian: true },
  { name: '32-bit little-endian', is64: false, bigEndian: false },
  { name: '32-bit big-endian', is64: false, bigEndian: true },
];

const MAGIC = Buffer.from('\xff Go buildinf:', 'latin1');
/** cmd/go's modload infoStart and infoEnd sentinels around the module information. */
export const INFO_START = Buffer.from('3077af0c9274080241e1c107e6d618e6', 'hex');
export const INFO_END = Buffer.from('f932433186182072008242104116d8f2', 'hex');
const DATA_OFFSET = 0x100;
const VADDR = 0x400000;

/** runtime.modinfo as the go command frames it. */
export const framed = (modinfo: string): Buffer => Buffer.concat([INFO_START, Buffer.from(modinfo), INFO_END]);

function uvarint(n: number): Buffer {
  const bytes: number[] = [];
  while (n >= 0x80) {
    bytes.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** Writes unsigned fields in one shape's byte order and word size. */
function writer(shape: ElfShape, b: Buffer) {
  const u16 = (at: number, v: number) => (shape.bigEndian ? b.writeUInt16BE(v, at) : b.writeUInt16LE(v, at));
  const u32 = (at: number, v: number) => (shape.bigEndian ? b.writeUInt32BE(v, at) : b.writeUInt32LE(v, at));
  const u64 = (at: number, v: number) => (shape.bigEndian ? b.writeBigUInt64BE(BigInt(v), at) : b.writeBigUInt64LE(BigInt(v), at));
  const word = (at: number, v: number) => (shape.is64 ? u64(at, v) : u32(at, v));
  return { u16, u32, word };
}

/**
 * The `.go.buildinfo` contents for goVersion and modinfo: inline (Go 1.18 on), or the older
 * header of two pointers to string headers, which point at the strings after them (addresses as
 * loaded at base).
 */
export function buildInfoBlob(shape: ElfShape, inline: boolean, goVersion: string, modinfo: Buffer, base = VADDR + DATA_OFFSET): Buffer {
  const ptr = shape.is64 ? 8 : 4;
  const header = Buffer.alloc(32);
  MAGIC.copy(header);
  header[14] = ptr;
  header[15] = (shape.bigEndian ? 1 : 0) | (inline ? 2 : 0);
  const version = Buffer.from(goVersion);
  if (inline) return Buffer.concat([header, uvarint(version.length), version, uvarint(modinfo.length), modinfo]);
  const headers = Buffer.alloc(4 * ptr);
  const w = writer(shape, header);
  const h = writer(shape, headers);
  const versionAt = base + 32 + headers.length;
  w.word(16, base + 32);
  w.word(16 + ptr, base + 32 + 2 * ptr);
  h.word(0, versionAt);
  h.word(ptr, version.length);
  h.word(2 * ptr, versionAt + version.length);
  h.word(3 * ptr, modinfo.length);
  return Buffer.concat([header, headers, version, modinfo]);
}

/** An executable whose data segment holds data, in a section named sectionName. */
export function elfWithData(shape: ElfShape, data: Buffer, sectionName = '.go.buildinfo'): Buffer {
  const { is64 } = shape;
  const ehsize = is64 ? 64 : 52;
  const phentsize = is64 ? 56 : 32;
  const shentsize = is64 ? 64 : 40;
  const names = Buffer.from(`\0${sectionName}\0.shstrtab\0`);
  const namesAt = DATA_OFFSET + data.length;
  const shoff = Math.ceil((namesAt + names.length) / 8) * 8;
  const file = Buffer.alloc(shoff + 3 * shentsize);
  const w = writer(shape, file);
  file.set([0x7f, 0x45, 0x4c, 0x46, is64 ? 2 : 1, shape.bigEndian ? 2 : 1, 1]);
  w.u16(16, 2); // ET_EXEC
  w.u16(18, is64 ? 62 : 3); // x86-64 or i386: Go's reader does not care which
  w.u32(20, 1); // EV_CURRENT
  w.word(0x18, VADDR); // e_entry
  w.word(is64 ? 0x20 : 0x1c, ehsize); // e_phoff
  w.word(is64 ? 0x28 : 0x20, shoff); // e_shoff
  const tail = is64 ? 0x34 : 0x28;
  w.u16(tail, ehsize);
  w.u16(tail + 2, phentsize);
  w.u16(tail + 4, 1);
  w.u16(tail + 6, shentsize);
  w.u16(tail + 8, 3);
  w.u16(tail + 10, 2);
  // PT_LOAD, read-write (PF_R|PF_W), from the data to the end of the names; p_flags moves with the class.
  const ph = ehsize;
  const at = is64
    ? { flags: 4, offset: 8, vaddr: 16, paddr: 24, filesz: 32, memsz: 40, align: 48 }
    : { offset: 4, vaddr: 8, paddr: 12, filesz: 16, memsz: 20, flags: 24, align: 28 };
  const loaded = namesAt + names.length - DATA_OFFSET;
  w.u32(ph, 1);
  w.u32(ph + at.flags, 6);
  w.word(ph + at.offset, DATA_OFFSET);
  w.word(ph + at.vaddr, VADDR + DATA_OFFSET);
  w.word(ph + at.paddr, VADDR + DATA_OFFSET);
  w.word(ph + at.filesz, loaded);
  w.word(ph + at.memsz, loaded);
  w.word(ph + at.align, 0x10);
  data.copy(file, DATA_OFFSET);
  names.copy(file, namesAt);
  // Section 1: the data (PROGBITS, SHF_WRITE|SHF_ALLOC); section 2: the names (STRTAB).
  const section = (i: number, name: number, type: number, flags: number, addr: number, offset: number, size: number) => {
    const at = shoff + i * shentsize;
    w.u32(at, name);
    w.u32(at + 4, type);
    w.word(at + 8, flags);
    w.word(at + (is64 ? 0x10 : 0x0c), addr);
    w.word(at + (is64 ? 0x18 : 0x10), offset);
    w.word(at + (is64 ? 0x20 : 0x14), size);
    w.word(at + (is64 ? 0x30 : 0x20), 1); // sh_addralign
  };
  section(1, 1, 1, 3, VADDR + DATA_OFFSET, DATA_OFFSET, data.length);
  section(2, 2 + sectionName.length, 3, 0, 0, namesAt, names.length);
  return file;
}

/** The binary as a tool that drops section headers (sstrip) leaves it: Go then finds the build information through the data segment. */
export function withoutSectionHeaders(binary: Buffer): Buffer {
  const copy = Buffer.from(binary);
  const is64 = copy[4] === 2;
  const bigEndian = copy[5] === 2;
  const w = writer({ is64, bigEndian }, copy);
  w.word(is64 ? 0x28 : 0x20, 0);
  const tail = is64 ? 0x34 : 0x28;
  w.u16(tail + 6, 0);
  w.u16(tail + 8, 0);
  w.u16(tail + 10, 0);
  return copy;
}
