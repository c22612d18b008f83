/**
 * Reads the package headers out of a Berkeley DB **hash** database, the format of
 * `var/lib/rpm/Packages` up to rpm 4.15 (RHEL/CentOS ≤ 8, Amazon Linux 2, older SUSE).
 *
 * Layout (Berkeley DB's dbinc/db_page.h): the file is an array of fixed-size pages. Page 0 is the
 * hash metadata page; every other page starts with a 26-byte header {lsn, pgno, prev_pgno,
 * next_pgno, entries, hf_offset, level, type}. Hash pages (type P_HASH) hold an array of
 * `entries` 2-byte item offsets right after the header, alternating key, data, key, data; each
 * item starts with a one-byte item type. rpm keys are 4-byte package numbers and the data is the
 * header blob, which never fits on a hash page, so it is an H_OFFPAGE item pointing at a chain of
 * overflow pages (type P_OVERFLOW) whose payload lengths are in their hf_offset field.
 *
 * All page fields are in the byte order of the machine that wrote the file, which the metadata
 * magic reveals; the header blobs inside are always big-endian.
 */

/** Metadata page (DBMETA in db_page.h): field offsets. */
const META_MAGIC = 12;
const META_VERSION = 16;
const META_PAGE_SIZE = 20;
const META_ENCRYPT_ALG = 24;
const META_TYPE = 25;
const META_FLAGS = 26;
const META_LAST_PGNO = 32;
const META_MIN_SIZE = 36;

const HASH_MAGIC = 0x061561;
const BTREE_MAGIC = 0x053162;
const QUEUE_MAGIC = 0x042253;
/** DBMETA_CHKSUM: pages carry a checksum, which moves the item array (rpm never sets it). */
const META_FLAG_CHECKSUM = 0x01;

/** Page header (PAGE in db_page.h): field offsets and size. */
const PAGE_PGNO = 8;
const PAGE_NEXT_PGNO = 16;
const PAGE_ENTRIES = 20;
const PAGE_HF_OFFSET = 22;
const PAGE_TYPE = 25;
const PAGE_HEADER_SIZE = 26;

/** Page types (db_page.h). */
const P_HASH_UNSORTED = 2; // hash pages written before hash format version 9 (RHEL/CentOS 5)
const P_OVERFLOW = 7;
const P_HASHMETA = 8;
const P_HASH = 13;

/** Hash item types: the first byte of every item on a hash page (db_page.h). */
const H_KEYDATA = 1;
const H_DUPLICATE = 2;
const H_OFFPAGE = 3;
const H_OFFDUP = 4;
/** HOFFPAGE: {u8 type, u8 unused[3], u32 pgno, u32 tlen}. */
const HOFFPAGE_PGNO = 4;
const HOFFPAGE_TLEN = 8;
const HOFFPAGE_SIZE = 12;

const MIN_PAGE_SIZE = 512;
const MAX_PAGE_SIZE = 65536;

/** rpm's Packages keys are 4-byte package numbers; number 0 holds rpm's bookkeeping, not a header. */
const RPM_KEY_SIZE = 4;

/** The header blobs of an rpm Berkeley DB hash database, in page order. */
export function readBerkeleyDb(buf: Buffer): Buffer[] {
  const db = openDb(buf);
  const blobs: Buffer[] = [];
  for (let pgno = 1; pgno <= db.lastPgno; pgno++) {
    const page = db.page(pgno);
    const type = page.readUInt8(PAGE_TYPE);
    // Free and not-yet-used pages are P_INVALID (0); btree or overflow pages are reached from
    // the hash pages that own them.
    if (type !== P_HASH && type !== P_HASH_UNSORTED) continue;
    if (db.u32(page, PAGE_PGNO) !== pgno) throw new Error(`hash page ${pgno} says it is page ${db.u32(page, PAGE_PGNO)}`);
    for (const { key, data } of hashPairs(db, page, pgno)) {
      if (isBookkeepingKey(db, page, key)) continue;
      blobs.push(itemValue(db, page, data, pgno));
    }
  }
  return blobs;
}

interface Db {
  readonly pageSize: number;
  readonly lastPgno: number;
  /** Page numbers already used by an overflow chain: a page belongs to at most one item. */
  readonly claimed: Set<number>;
  page(pgno: number): Buffer;
  u16(b: Buffer, at: number): number;
  u32(b: Buffer, at: number): number;
}

/** An item on a hash page: [start, end) within the page. */
interface Item {
  readonly start: number;
  readonly end: number;
}

function openDb(buf: Buffer): Db {
  if (buf.length < META_MIN_SIZE) throw new Error(`not a Berkeley DB hash database (${buf.length} bytes)`);
  const little = byteOrder(buf);
  const u16 = (b: Buffer, at: number): number => (little ? b.readUInt16LE(at) : b.readUInt16BE(at));
  const u32 = (b: Buffer, at: number): number => (little ? b.readUInt32LE(at) : b.readUInt32BE(at));

  if (buf.readUInt8(META_TYPE) !== P_HASHMETA) {
    throw new Error(`not a Berkeley DB hash database (metadata page type ${buf.readUInt8(META_TYPE)})`);
  }
  const pageSize = u32(buf, META_PAGE_SIZE);
  if (pageSize < MIN_PAGE_SIZE || pageSize > MAX_PAGE_SIZE || (pageSize & (pageSize - 1)) !== 0) {
    throw new Error(`Berkeley DB page size ${pageSize} is invalid`);
  }
  if (buf.readUInt8(META_ENCRYPT_ALG) !== 0) throw new Error('Berkeley DB database is encrypted');
  if ((buf.readUInt8(META_FLAGS) & META_FLAG_CHECKSUM) !== 0) {
    throw new Error(`Berkeley DB database has page checksums (hash version ${u32(buf, META_VERSION)}), which are not supported`);
  }
  const lastPgno = u32(buf, META_LAST_PGNO);
  const pagesInFile = Math.floor(buf.length / pageSize);
  if (lastPgno >= pagesInFile) {
    throw new Error(
      `Berkeley DB database is truncated: its last page is ${lastPgno} but the file holds ${pagesInFile} pages of ${pageSize} bytes`,
    );
  }
  const page = (pgno: number): Buffer => {
    if (!Number.isInteger(pgno) || pgno < 1 || pgno > lastPgno) {
      throw new Error(`Berkeley DB page number ${pgno} is out of range (1-${lastPgno})`);
    }
    return buf.subarray(pgno * pageSize, (pgno + 1) * pageSize);
  };
  return { pageSize, lastPgno, claimed: new Set(), page, u16, u32 };
}

/** true for little-endian files, false for big-endian; throws when the magic is not a hash db's. */
function byteOrder(buf: Buffer): boolean {
  const le = buf.readUInt32LE(META_MAGIC);
  const be = buf.readUInt32BE(META_MAGIC);
  if (le === HASH_MAGIC) return true;
  if (be === HASH_MAGIC) return false;
  if (le === BTREE_MAGIC || be === BTREE_MAGIC) throw new Error('not a Berkeley DB hash database (it is a btree database)');
  if (le === QUEUE_MAGIC || be === QUEUE_MAGIC) throw new Error('not a Berkeley DB hash database (it is a queue database)');
  throw new Error('not a Berkeley DB hash database');
}

/** The key/data item pairs of a hash page, bounds-checked. */
function hashPairs(db: Db, page: Buffer, pgno: number): { key: Item; data: Item }[] {
  const entries = db.u16(page, PAGE_ENTRIES);
  if (entries % 2 !== 0) throw new Error(`hash page ${pgno} has an odd number of items (${entries})`);
  const itemsStart = PAGE_HEADER_SIZE + 2 * entries;
  if (itemsStart > db.pageSize) throw new Error(`hash page ${pgno} claims ${entries} items, more than fit on a page`);
  // Items are packed from the end of the page downwards in index order, so item i ends where
  // item i-1 starts (Berkeley DB's LEN_HITEM).
  const items: Item[] = [];
  let end = db.pageSize;
  for (let i = 0; i < entries; i++) {
    const start = db.u16(page, PAGE_HEADER_SIZE + 2 * i);
    if (start < itemsStart || start >= end) throw new Error(`hash page ${pgno} item ${i} has a bad offset ${start}`);
    items.push({ start, end });
    end = start;
  }
  const pairs: { key: Item; data: Item }[] = [];
  for (let i = 0; i + 1 < items.length; i += 2) pairs.push({ key: items[i]!, data: items[i + 1]! });
  return pairs;
}

/** rpm's record 0 (a counter, not a package): an inline 4-byte key that is zero. */
function isBookkeepingKey(db: Db, page: Buffer, key: Item): boolean {
  if (page.readUInt8(key.start) !== H_KEYDATA || key.end - key.start - 1 !== RPM_KEY_SIZE) return false;
  return db.u32(page, key.start + 1) === 0;
}

/** The bytes of a data item: inline (H_KEYDATA) or gathered from its overflow chain (H_OFFPAGE). */
function itemValue(db: Db, page: Buffer, item: Item, pgno: number): Buffer {
  const type = page.readUInt8(item.start);
  switch (type) {
    case H_KEYDATA:
      return page.subarray(item.start + 1, item.end);
    case H_OFFPAGE: {
      if (item.end - item.start < HOFFPAGE_SIZE) throw new Error(`hash page ${pgno} has a truncated off-page item`);
      return readOverflowChain(db, db.u32(page, item.start + HOFFPAGE_PGNO), db.u32(page, item.start + HOFFPAGE_TLEN));
    }
    case H_DUPLICATE:
    case H_OFFDUP:
      throw new Error(`hash page ${pgno} has duplicate items, which rpm databases never contain`);
    default:
      throw new Error(`hash page ${pgno} has an item of unknown type ${type}`);
  }
}

/** Follows an overflow chain from first, collecting exactly totalLength bytes. */
function readOverflowChain(db: Db, first: number, totalLength: number): Buffer {
  const capacity = (db.lastPgno - db.claimed.size) * (db.pageSize - PAGE_HEADER_SIZE);
  if (totalLength > capacity) throw new Error(`off-page item of ${totalLength} bytes is larger than the database`);
  const chunks: Buffer[] = [];
  let collected = 0;
  let pgno = first;
  while (collected < totalLength) {
    if (pgno === 0) throw new Error(`overflow chain from page ${first} ends after ${collected} of ${totalLength} bytes`);
    // Each page is used once, so a chain that loops (or two items sharing pages) stops here.
    if (db.claimed.has(pgno)) throw new Error(`overflow page ${pgno} is reached twice (the chain from page ${first} loops)`);
    db.claimed.add(pgno);
    const page = db.page(pgno);
    const type = page.readUInt8(PAGE_TYPE);
    if (type !== P_OVERFLOW)
      throw new Error(`page ${pgno} in the overflow chain from page ${first} is not an overflow page (type ${type})`);
    const length = db.u16(page, PAGE_HF_OFFSET); // OV_LEN: payload bytes on this page
    if (PAGE_HEADER_SIZE + length > db.pageSize || collected + length > totalLength) {
      throw new Error(`overflow page ${pgno} claims ${length} bytes, more than fit`);
    }
    chunks.push(page.subarray(PAGE_HEADER_SIZE, PAGE_HEADER_SIZE + length));
    collected += length;
    pgno = db.u32(page, PAGE_NEXT_PGNO);
  }
  return Buffer.concat(chunks, totalLength);
}
