/**
 * rpm header blobs as the package databases store them (rpm's headerExport() output, i.e. a
 * header without the 8-byte `8e ad e8 01 00 00 00 00` magic that package files carry):
 *
 *   int32 il | int32 dl | il × {int32 tag, int32 type, int32 offset, int32 count} | dl data bytes
 *
 * All integers are big-endian ("network order", rpm's lib/header.c). Only the tags needed to
 * identify a package are decoded, but every index entry gets the constant-time checks of rpm's own
 * hdrblobVerifyInfo() (known type, offset inside the data store, alignment, fixed-size data
 * fits), and the strings that are read are checked to end inside the store, so a corrupt blob
 * is rejected instead of half-read.
 */

export interface RpmHeader {
  readonly name: string;
  /** null when the header has no EPOCH tag (rpm treats that like 0 when comparing). */
  readonly epoch: number | null;
  readonly version: string;
  readonly release: string;
  /** null when absent (gpg-pubkey pseudo-packages have no ARCH). */
  readonly arch: string | null;
  /** null when absent (source packages and gpg-pubkey have no SOURCERPM; `rpm -q` prints "(none)"). */
  readonly sourceRpm: string | null;
  /**
   * MODULARITYLABEL, `name:stream:version:context` (idm:DL1:8010020191114162016:5a9b8b9b): the
   * module stream build the package was built in; null for a package built outside any module.
   */
  readonly modularityLabel: string | null;
}

/** Tag numbers from rpm's rpmtag.h. */
const TAG_NAME = 1000;
const TAG_VERSION = 1001;
const TAG_RELEASE = 1002;
const TAG_EPOCH = 1003;
const TAG_ARCH = 1022;
const TAG_SOURCERPM = 1044;
const TAG_MODULARITYLABEL = 5096;
const TAG_DIRINDEXES = 1116;
const TAG_BASENAMES = 1117;
const TAG_DIRNAMES = 1118;

/** Data types from rpm's rpmtag.h (rpmTagType_e). */
const TYPE_NULL = 0;
const TYPE_CHAR = 1;
const TYPE_INT8 = 2;
const TYPE_INT16 = 3;
const TYPE_INT32 = 4;
const TYPE_INT64 = 5;
const TYPE_STRING = 6;
const TYPE_BIN = 7;
/** Like STRING and I18NSTRING, its size is only known by scanning for NULs. */
const TYPE_STRING_ARRAY = 8;
const TYPE_I18NSTRING = 9;

/** Byte size of one element of each fixed-size type (rpm's typeSizes[]); strings are variable. */
const FIXED_TYPE_SIZE: Readonly<Record<number, number>> = {
  [TYPE_NULL]: 0,
  [TYPE_CHAR]: 1,
  [TYPE_INT8]: 1,
  [TYPE_INT16]: 2,
  [TYPE_INT32]: 4,
  [TYPE_INT64]: 8,
  [TYPE_BIN]: 1,
};

/** Limits from rpm's header_internal.h: more than this is corruption, not a big package. */
const HEADER_TAGS_MAX = 0xffff;
const HEADER_DATA_MAX = 0x0fffffff;

const PREAMBLE_SIZE = 8; // il + dl
const ENTRY_SIZE = 16;

interface IndexEntry {
  readonly tag: number;
  readonly type: number;
  readonly offset: number;
  readonly count: number;
}

/** Parses a header blob; throws an Error saying what is wrong when the blob is malformed. */
export function parseRpmHeader(blob: Buffer): RpmHeader {
  const { entries, data } = splitBlob(blob);
  const byTag = new Map<number, IndexEntry>();
  // Later entries win: rpm keeps "dribble" entries (appended after the immutable region) over
  // region entries with the same tag.
  for (const entry of entries) byTag.set(entry.tag, entry);

  const requiredString = (tag: number, label: string): string => {
    const value = stringTag(byTag.get(tag), data, label);
    if (value === null) throw new Error(`rpm header has no ${label} tag`);
    return value;
  };
  return {
    name: requiredString(TAG_NAME, 'NAME'),
    epoch: int32Tag(byTag.get(TAG_EPOCH), 'EPOCH'),
    version: requiredString(TAG_VERSION, 'VERSION'),
    release: requiredString(TAG_RELEASE, 'RELEASE'),
    arch: stringTag(byTag.get(TAG_ARCH), data, 'ARCH'),
    sourceRpm: stringTag(byTag.get(TAG_SOURCERPM), data, 'SOURCERPM'),
    modularityLabel: stringTag(byTag.get(TAG_MODULARITYLABEL), data, 'MODULARITYLABEL'),
  };

  function int32Tag(entry: IndexEntry | undefined, label: string): number | null {
    if (!entry) return null;
    if (entry.type !== TYPE_INT32 || entry.count < 1) {
      throw new Error(`rpm header ${label} tag has type ${entry.type} and count ${entry.count}, expected INT32`);
    }
    return data.readUInt32BE(entry.offset); // in range: checked by validateEntry
  }
}

/**
 * The paths of the files a package installed, without their leading `/`: each BASENAMES entry in
 * the DIRNAMES entry its DIRINDEXES entry points to (rpm's compressed file list, which every rpm
 * since 4.0 writes). Empty for a package without files; throws as parseRpmHeader does for a blob
 * whose file list does not hold together.
 */
export function rpmFilePaths(blob: Buffer): string[] {
  const { entries, data } = splitBlob(blob);
  const byTag = new Map<number, IndexEntry>();
  for (const entry of entries) byTag.set(entry.tag, entry);
  const baseNames = stringArrayTag(byTag.get(TAG_BASENAMES), data, 'BASENAMES');
  if (baseNames.length === 0) return [];
  const dirNames = stringArrayTag(byTag.get(TAG_DIRNAMES), data, 'DIRNAMES');
  const dirIndexes = byTag.get(TAG_DIRINDEXES);
  if (dirIndexes?.type !== TYPE_INT32 || dirIndexes.count !== baseNames.length)
    throw new Error(`rpm header has ${baseNames.length} BASENAMES but no DIRINDEXES of as many INT32s`);
  return baseNames.map((base, i) => {
    const dir = dirNames[data.readUInt32BE(dirIndexes.offset + 4 * i)];
    if (dir === undefined) throw new Error(`rpm header file ${i + 1} points past its ${dirNames.length} DIRNAMES`);
    return `${dir}${base}`.replace(/^\/+/, '');
  });
}

/** The strings of a STRING_ARRAY entry (none when the tag is absent), each checked to end inside the store. */
function stringArrayTag(entry: IndexEntry | undefined, data: Buffer, label: string): string[] {
  if (!entry) return [];
  if (entry.type !== TYPE_STRING_ARRAY) throw new Error(`rpm header ${label} tag has type ${entry.type}, expected a string array`);
  const strings: string[] = [];
  let at = entry.offset;
  for (let i = 0; i < entry.count; i++) {
    const nul = at < data.length ? data.indexOf(0, at) : -1;
    if (nul < 0) throw new Error(`rpm header ${label} tag has a string that runs past the data store`);
    strings.push(data.toString('utf8', at, nul));
    at = nul + 1;
  }
  return strings;
}

/** Checks the preamble and every index entry; returns the entries and the data store. */
function splitBlob(blob: Buffer): { entries: IndexEntry[]; data: Buffer } {
  if (blob.length < PREAMBLE_SIZE) {
    throw new Error(`rpm header is ${blob.length} bytes, shorter than its 8-byte preamble`);
  }
  const il = blob.readUInt32BE(0);
  const dl = blob.readUInt32BE(4);
  if (il < 1 || il > HEADER_TAGS_MAX) throw new Error(`rpm header has a bad index count ${il}`);
  if (dl > HEADER_DATA_MAX) throw new Error(`rpm header has a bad data length ${dl}`);
  const dataStart = PREAMBLE_SIZE + il * ENTRY_SIZE;
  const expected = dataStart + dl;
  // rpm's hdrblobInit() insists on an exact size; a mismatch means a truncated or misread blob.
  if (blob.length !== expected) {
    throw new Error(`rpm header is ${blob.length} bytes but its index (${il} entries) and data (${dl} bytes) need ${expected}`);
  }
  const data = blob.subarray(dataStart, expected);
  const entries: IndexEntry[] = [];
  for (let i = 0; i < il; i++) {
    const at = PREAMBLE_SIZE + i * ENTRY_SIZE;
    const entry: IndexEntry = {
      tag: blob.readInt32BE(at),
      type: blob.readUInt32BE(at + 4),
      offset: blob.readUInt32BE(at + 8),
      count: blob.readUInt32BE(at + 12),
    };
    validateEntry(entry, data, i);
    entries.push(entry);
  }
  return { entries, data };
}

/**
 * rpm's hdrblobVerifyInfo() checks that take constant time: known type, offset inside the store,
 * alignment, and fixed-size data that fits. Strings are only scanned when read (stringTag):
 * scanning every entry's strings would let a crafted index of 65535 entries all pointing at one
 * long run of NULs cost 65535 passes over the blob.
 */
function validateEntry(entry: IndexEntry, data: Buffer, index: number): void {
  const where = `rpm header entry ${index} (tag ${entry.tag})`;
  if (entry.type > TYPE_I18NSTRING) throw new Error(`${where} has unknown type ${entry.type}`);
  if (entry.offset > data.length) {
    throw new Error(`${where} points at offset ${entry.offset}, beyond its ${data.length}-byte data store`);
  }
  const size = FIXED_TYPE_SIZE[entry.type];
  if (size !== undefined) {
    if (size > 1 && entry.offset % size !== 0) throw new Error(`${where} is misaligned at offset ${entry.offset}`);
    if (entry.offset + size * entry.count > data.length) {
      throw new Error(`${where} holds ${entry.count} items that overrun the data store`);
    }
    return;
  }
  if (entry.type === TYPE_STRING && entry.count !== 1) throw new Error(`${where} is a STRING with count ${entry.count}`);
}

/**
 * The value of a STRING entry, or null when the tag is absent. rpm also accepts I18NSTRING where
 * a STRING is expected (hdrchkTagType); its first string is the untranslated one.
 */
function stringTag(entry: IndexEntry | undefined, data: Buffer, label: string): string | null {
  if (!entry) return null;
  if (entry.type !== TYPE_STRING && entry.type !== TYPE_I18NSTRING) {
    throw new Error(`rpm header ${label} tag has type ${entry.type}, expected a string`);
  }
  if (entry.count < 1) throw new Error(`rpm header ${label} tag has no value`);
  const nul = entry.offset < data.length ? data.indexOf(0, entry.offset) : -1;
  if (nul < 0) throw new Error(`rpm header ${label} tag has a string that runs past the data store`);
  return data.toString('utf8', entry.offset, nul);
}
