/**
 * Reads the package headers out of rpm's own "ndb" package database (`Packages.db`, rpm ≥ 4.16,
 * the default on SUSE Linux Enterprise 15 SP3+ and openSUSE). The format is defined by rpm's
 * lib/backend/ndb/rpmpkg.c; every integer is a little-endian u32.
 *
 *   header (32 bytes)  'RpmP', version (0), generation, slot page count, next package index, …
 *   slot pages         slotnpages × 4096 bytes of 16-byte slots {'Slot', pkgidx, blkoff, blkcnt};
 *                      the header occupies the first two slots. blkoff 0 marks a free slot.
 *   blobs              at blkoff × 16, blkcnt × 16 bytes: {'BlbS', pkgidx, timestamp, bloblen},
 *                      the header blob, zero padding, then {adler32, bloblen, 'BlbE'} at the end.
 */

const BLOCK_SIZE = 16;
const SLOT_PAGE_SIZE = 4096;
const SLOT_SIZE = 16;
const DB_HEADER_SIZE = 32;

/** Magic numbers: four ASCII bytes read as a little-endian u32. */
const DB_MAGIC = 'RpmP';
const SLOT_MAGIC = 'Slot';
const BLOB_HEAD_MAGIC = 'BlbS';
const BLOB_TAIL_MAGIC = 'BlbE';

const DB_VERSION_SUPPORTED = 0;
const HDR_VERSION = 4;
const HDR_SLOT_PAGES = 12;

const SLOT_PKGIDX = 4;
const SLOT_BLKOFF = 8;
const SLOT_BLKCNT = 12;

const BLOB_HEAD_SIZE = 16;
const BLOB_HEAD_PKGIDX = 4;
const BLOB_HEAD_LENGTH = 12;
const BLOB_TAIL_SIZE = 12;
const BLOB_TAIL_LENGTH = 4;
const BLOB_TAIL_MAGIC_AT = 8;

interface Slot {
  readonly pkgidx: number;
  readonly blkoff: number;
  readonly blkcnt: number;
}

/**
 * The header blobs of an ndb database, in the order `rpm -qa` lists them (by position in the
 * file, which is the order rpmpkgList() returns package indexes in).
 */
export function readNdb(buf: Buffer): Buffer[] {
  const slotPages = readDbHeader(buf);
  const slots = readSlots(buf, slotPages).sort((a, b) => a.blkoff - b.blkoff);
  checkNoOverlap(slots, slotPages);
  return slots.map((slot) => readBlob(buf, slot));
}

function hasMagic(buf: Buffer, at: number, magic: string): boolean {
  return buf.toString('latin1', at, at + 4) === magic;
}

/** Validates the database header; returns the number of slot pages. */
function readDbHeader(buf: Buffer): number {
  if (buf.length < DB_HEADER_SIZE || !hasMagic(buf, 0, DB_MAGIC)) throw new Error('not an rpm ndb database');
  const version = buf.readUInt32LE(HDR_VERSION);
  if (version !== DB_VERSION_SUPPORTED) throw new Error(`rpm ndb database version ${version} is not supported`);
  // rpm stores whole blocks only (rpmpkgReadSlots refuses anything else).
  if (buf.length % BLOCK_SIZE !== 0) {
    throw new Error(`rpm ndb database is truncated (${buf.length} bytes is not a whole number of blocks)`);
  }
  const slotPages = buf.readUInt32LE(HDR_SLOT_PAGES);
  if (slotPages === 0) throw new Error('rpm ndb database has no slot pages');
  const slotBytes = slotPages * SLOT_PAGE_SIZE;
  if (slotBytes > buf.length) {
    throw new Error(`rpm ndb database is truncated: ${slotPages} slot pages need ${slotBytes} bytes, the file has ${buf.length}`);
  }
  return slotPages;
}

/** The used slots, checked as rpmpkgReadSlots() checks them. */
function readSlots(buf: Buffer, slotPages: number): Slot[] {
  const fileBlocks = buf.length / BLOCK_SIZE;
  const firstBlobBlock = (slotPages * SLOT_PAGE_SIZE) / BLOCK_SIZE;
  const slots: Slot[] = [];
  const seen = new Set<number>();
  for (let at = DB_HEADER_SIZE; at < slotPages * SLOT_PAGE_SIZE; at += SLOT_SIZE) {
    const slotno = at / SLOT_SIZE;
    if (!hasMagic(buf, at, SLOT_MAGIC)) throw new Error(`rpm ndb slot ${slotno} has a bad magic`);
    const slot: Slot = {
      pkgidx: buf.readUInt32LE(at + SLOT_PKGIDX),
      blkoff: buf.readUInt32LE(at + SLOT_BLKOFF),
      blkcnt: buf.readUInt32LE(at + SLOT_BLKCNT),
    };
    if (slot.blkoff === 0) continue; // free slot
    if (slot.pkgidx === 0 || slot.blkcnt === 0 || slot.blkoff < firstBlobBlock) {
      throw new Error(`rpm ndb slot ${slotno} is invalid (package ${slot.pkgidx}, block ${slot.blkoff}, ${slot.blkcnt} blocks)`);
    }
    const end = slot.blkoff + slot.blkcnt;
    if (end > fileBlocks) {
      throw new Error(`rpm ndb database is truncated: package ${slot.pkgidx} ends at block ${end}, the file has ${fileBlocks}`);
    }
    if (seen.has(slot.pkgidx)) throw new Error(`rpm ndb database has two slots for package ${slot.pkgidx}`);
    seen.add(slot.pkgidx);
    slots.push(slot);
  }
  return slots;
}

/** Blobs never share blocks (rpm refuses to write into overlapping slots); slots sorted by blkoff. */
function checkNoOverlap(slots: readonly Slot[], slotPages: number): void {
  let end = (slotPages * SLOT_PAGE_SIZE) / BLOCK_SIZE;
  for (const slot of slots) {
    if (slot.blkoff < end) throw new Error(`rpm ndb blob of package ${slot.pkgidx} overlaps another blob`);
    end = slot.blkoff + slot.blkcnt;
  }
}

/** The header blob of one slot, after checking the blob's head and tail (not its adler32, as rpm does on reads). */
function readBlob(buf: Buffer, slot: Slot): Buffer {
  const start = slot.blkoff * BLOCK_SIZE;
  const end = start + slot.blkcnt * BLOCK_SIZE; // within the file: checked by readSlots
  const where = `rpm ndb blob of package ${slot.pkgidx}`;
  if (end - start < BLOB_HEAD_SIZE + BLOB_TAIL_SIZE) throw new Error(`${where} is too small`);
  if (!hasMagic(buf, start, BLOB_HEAD_MAGIC)) throw new Error(`${where} has a bad magic`);
  if (buf.readUInt32LE(start + BLOB_HEAD_PKGIDX) !== slot.pkgidx) throw new Error(`${where} belongs to another package`);
  const length = buf.readUInt32LE(start + BLOB_HEAD_LENGTH);
  if (slot.blkcnt !== Math.ceil((BLOB_HEAD_SIZE + length + BLOB_TAIL_SIZE) / BLOCK_SIZE)) {
    throw new Error(`${where} is ${length} bytes, which does not fit its ${slot.blkcnt} blocks`);
  }
  const tail = end - BLOB_TAIL_SIZE;
  if (!hasMagic(buf, tail + BLOB_TAIL_MAGIC_AT, BLOB_TAIL_MAGIC) || buf.readUInt32LE(tail + BLOB_TAIL_LENGTH) !== length) {
    throw new Error(`${where} has a bad tail`);
  }
  return buf.subarray(start + BLOB_HEAD_SIZE, start + BLOB_HEAD_SIZE + length);
}
