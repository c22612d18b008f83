/**
 * A small read-only reader for SQLite database files, enough to pull the header blobs out of
 * rpm's SQLite backend (`rpmdb.sqlite`, rpm ≥ 4.16: Fedora ≥ 33, RHEL/Rocky/Alma 9, Amazon Linux
 * 2023). Node 20 has no `node:sqlite` and a native module would be a build-time dependency for
 * one table, so this walks the pages itself, following https://www.sqlite.org/fileformat2.html.
 *
 * rpm's schema: CREATE TABLE 'Packages' (hnum INTEGER PRIMARY KEY AUTOINCREMENT, blob BLOB NOT NULL).
 * hnum is the rowid (stored as NULL in the record), so each row's record is [NULL, blob].
 *
 * Only the main database file is read; `rpmdb.sqlite-wal` is not needed. rpm opens its database
 * in WAL mode, but SQLite checkpoints the WAL into the main file and deletes it when rpm closes
 * the database, so images ship checkpointed databases (a `-wal` left in a layer would belong to a
 * process killed mid-transaction).
 */

/** The 100-byte database header: field offsets. */
const HEADER_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const FILE_HEADER_SIZE = 100;
const HDR_PAGE_SIZE = 16; // u16; 1 means 65536
const HDR_WRITE_VERSION = 18;
const HDR_READ_VERSION = 19;
const HDR_RESERVED = 20; // bytes reserved at the end of each page (e.g. for encryption)
const HDR_MAX_PAYLOAD_FRACTION = 21; // must be 64
const HDR_MIN_PAYLOAD_FRACTION = 22; // must be 32
const HDR_LEAF_PAYLOAD_FRACTION = 23; // must be 32
const HDR_CHANGE_COUNTER = 24;
const HDR_PAGE_COUNT = 28;
const HDR_TEXT_ENCODING = 56;
const HDR_VERSION_VALID_FOR = 92;

/** File format read/write versions: 1 = rollback journal, 2 = WAL. */
const MAX_FORMAT_VERSION = 2;
const PAGE_SIZE_65536 = 1;
const MIN_USABLE_SIZE = 480;

const ENCODING_UTF8 = 1;
const ENCODING_UTF16LE = 2;
const ENCODING_UTF16BE = 3;

/** B-tree page header. */
const BTREE_TYPE = 0;
const BTREE_CELL_COUNT = 3; // u16
const BTREE_RIGHT_CHILD = 8; // u32, interior pages only
const LEAF_HEADER_SIZE = 8;
const INTERIOR_HEADER_SIZE = 12;
const INTERIOR_INDEX = 0x02;
const INTERIOR_TABLE = 0x05;
const LEAF_INDEX = 0x0a;
const LEAF_TABLE = 0x0d;

/** sqlite_schema: page 1 is its root; columns (type, name, tbl_name, rootpage, sql). */
const SCHEMA_ROOT = 1;
const SCHEMA_TYPE = 0;
const SCHEMA_NAME = 1;
const SCHEMA_ROOTPAGE = 3;

const RPM_TABLE = 'Packages';
/** Column of `blob` in rpm's Packages table (hnum, blob). */
const RPM_BLOB_COLUMN = 1;

type Value = null | number | bigint | string | Buffer;

interface Db {
  readonly buf: Buffer;
  readonly pageSize: number;
  /** Usable bytes per page: the page size minus the reserved bytes. */
  readonly usable: number;
  readonly pageCount: number;
  readonly encoding: number;
  /** Pages already read as b-tree or overflow pages: each belongs to one place, so a repeat is a loop. */
  readonly claimed: Set<number>;
}

/** The `blob` column of every row of rpm's Packages table, in rowid (hnum) order. */
export function readSqliteRpmdb(buf: Buffer): Buffer[] {
  const db = openDb(buf);
  const root = tableRoot(db, RPM_TABLE);
  const blobs: Buffer[] = [];
  walkTable(db, root, (payload, rowid) => {
    const blob = decodeRecord(db, payload)[RPM_BLOB_COLUMN];
    if (!Buffer.isBuffer(blob)) throw new Error(`${RPM_TABLE} row ${rowid} has no blob`);
    blobs.push(blob);
  });
  return blobs;
}

function openDb(buf: Buffer): Db {
  if (buf.length < FILE_HEADER_SIZE || !buf.subarray(0, HEADER_MAGIC.length).equals(HEADER_MAGIC)) {
    throw new Error('not an SQLite database');
  }
  const rawPageSize = buf.readUInt16BE(HDR_PAGE_SIZE);
  const pageSize = rawPageSize === PAGE_SIZE_65536 ? 65536 : rawPageSize;
  if (pageSize < 512 || (pageSize & (pageSize - 1)) !== 0) throw new Error(`SQLite page size ${rawPageSize} is invalid`);
  const readVersion = buf.readUInt8(HDR_READ_VERSION);
  if (buf.readUInt8(HDR_WRITE_VERSION) > MAX_FORMAT_VERSION || readVersion > MAX_FORMAT_VERSION) {
    throw new Error(`SQLite file format version ${readVersion} is not supported`);
  }
  const fractions = [HDR_MAX_PAYLOAD_FRACTION, HDR_MIN_PAYLOAD_FRACTION, HDR_LEAF_PAYLOAD_FRACTION].map((at) => buf.readUInt8(at));
  if (fractions.join() !== '64,32,32') throw new Error('SQLite header has invalid payload fractions');
  const usable = pageSize - buf.readUInt8(HDR_RESERVED);
  if (usable < MIN_USABLE_SIZE) throw new Error(`SQLite usable page size ${usable} is too small`);
  const encoding = buf.readUInt32BE(HDR_TEXT_ENCODING) || ENCODING_UTF8; // 0: no text written yet
  if (encoding > ENCODING_UTF16BE) throw new Error(`SQLite text encoding ${encoding} is invalid`);
  return { buf, pageSize, usable, pageCount: pageCount(buf, pageSize), encoding, claimed: new Set() };
}

/** Pages in the database: the header's count when it is valid (it may be stale otherwise). */
function pageCount(buf: Buffer, pageSize: number): number {
  if (buf.length % pageSize !== 0) {
    throw new Error(`SQLite database is truncated: ${buf.length} bytes is not a whole number of ${pageSize}-byte pages`);
  }
  const inFile = buf.length / pageSize;
  const inHeader = buf.readUInt32BE(HDR_PAGE_COUNT);
  // The header's count is only trustworthy when it was written by the same change as the rest.
  const current = buf.readUInt32BE(HDR_CHANGE_COUNTER) === buf.readUInt32BE(HDR_VERSION_VALID_FOR);
  if (inHeader === 0 || !current) return inFile;
  if (inHeader > inFile) throw new Error(`SQLite database is truncated: its header says ${inHeader} pages, the file holds ${inFile}`);
  return inHeader;
}

function page(db: Db, pgno: number): Buffer {
  if (pgno < 1 || pgno > db.pageCount) throw new Error(`SQLite page number ${pgno} is out of range (1-${db.pageCount})`);
  return db.buf.subarray((pgno - 1) * db.pageSize, (pgno - 1) * db.pageSize + db.usable);
}

function claim(db: Db, pgno: number, what: string): Buffer {
  const p = page(db, pgno);
  if (db.claimed.has(pgno)) throw new Error(`SQLite page ${pgno} is reached twice (${what} loops or overlaps)`);
  db.claimed.add(pgno);
  return p;
}

/** The root page of the table called name (compared ASCII-case-insensitively, as SQLite does). */
function tableRoot(db: Db, name: string): number {
  let root: number | undefined;
  walkTable(db, SCHEMA_ROOT, (payload) => {
    const row = decodeRecord(db, payload);
    const rowName = row[SCHEMA_NAME];
    if (row[SCHEMA_TYPE] !== 'table' || typeof rowName !== 'string' || rowName.toLowerCase() !== name.toLowerCase()) return;
    const rootpage = row[SCHEMA_ROOTPAGE];
    if (typeof rootpage !== 'number') throw new Error(`SQLite schema gives table ${name} no root page`);
    root = rootpage;
  });
  if (root === undefined) throw new Error(`SQLite database has no ${name} table`);
  return root;
}

/** Visits the payload of every row of the table b-tree rooted at root, in rowid order. */
function walkTable(db: Db, root: number, visit: (payload: Buffer, rowid: number) => void): void {
  const stack = [root];
  while (stack.length > 0) {
    const pgno = stack.pop()!;
    const p = claim(db, pgno, `the b-tree of root page ${root}`);
    const headerAt = pgno === 1 ? FILE_HEADER_SIZE : 0;
    const type = p.readUInt8(headerAt + BTREE_TYPE);
    if (type === INTERIOR_TABLE) {
      // Children are visited left to right, so they go on the stack right to left.
      const children = interiorChildren(db, p, pgno, headerAt);
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
    } else if (type === LEAF_TABLE) {
      for (const at of cellOffsets(db, p, pgno, headerAt, LEAF_HEADER_SIZE)) {
        const { payload, rowid } = leafCell(db, p, pgno, at);
        visit(payload, rowid);
      }
    } else if (type === INTERIOR_INDEX || type === LEAF_INDEX) {
      throw new Error(`SQLite page ${pgno} is an index page inside the table b-tree of root page ${root}`);
    } else {
      throw new Error(`SQLite page ${pgno} is not a b-tree page (type ${type})`);
    }
  }
}

/** The cell pointer array of a b-tree page, bounds-checked. */
function cellOffsets(db: Db, p: Buffer, pgno: number, headerAt: number, headerSize: number): number[] {
  const count = p.readUInt16BE(headerAt + BTREE_CELL_COUNT);
  const arrayStart = headerAt + headerSize;
  if (arrayStart + 2 * count > db.usable) throw new Error(`SQLite page ${pgno} claims ${count} cells, more than fit`);
  const offsets: number[] = [];
  for (let i = 0; i < count; i++) {
    const at = p.readUInt16BE(arrayStart + 2 * i);
    if (at < arrayStart + 2 * count || at >= db.usable) throw new Error(`SQLite page ${pgno} cell ${i} has a bad offset ${at}`);
    offsets.push(at);
  }
  return offsets;
}

/** Child page numbers of an interior table page: each cell's left child, then the right-most child. */
function interiorChildren(db: Db, p: Buffer, pgno: number, headerAt: number): number[] {
  const children = cellOffsets(db, p, pgno, headerAt, INTERIOR_HEADER_SIZE).map((at) => {
    if (at + 4 > db.usable) throw new Error(`SQLite page ${pgno} has a truncated cell at ${at}`);
    return p.readUInt32BE(at);
  });
  children.push(p.readUInt32BE(headerAt + BTREE_RIGHT_CHILD));
  return children;
}

/** A table leaf cell: varint payload size, varint rowid, local payload, [u32 first overflow page]. */
function leafCell(db: Db, p: Buffer, pgno: number, at: number): { payload: Buffer; rowid: number } {
  const size = readVarint(p, at, db.usable, `page ${pgno}`);
  const rowid = readVarint(p, size.next, db.usable, `page ${pgno}`);
  return { payload: readPayload(db, p, pgno, rowid.next, size.value), rowid: rowid.value };
}

/**
 * The local part of a table leaf payload of total bytes, per the file format's formula: the
 * rest spills to overflow pages so that the local part is between M and X bytes.
 */
function localPayloadSize(usable: number, total: number): number {
  const maxLocal = usable - 35; // X
  if (total <= maxLocal) return total;
  const minLocal = Math.floor(((usable - 12) * 32) / 255) - 23; // M
  const k = minLocal + ((total - minLocal) % (usable - 4));
  return k <= maxLocal ? k : minLocal;
}

/** Assembles a payload of total bytes starting at `at` on page p, following its overflow chain. */
function readPayload(db: Db, p: Buffer, pgno: number, at: number, total: number): Buffer {
  const local = localPayloadSize(db.usable, total);
  const hasOverflow = local < total;
  if (at + local + (hasOverflow ? 4 : 0) > db.usable) throw new Error(`SQLite page ${pgno} has a cell that runs off the page`);
  const head = p.subarray(at, at + local);
  if (!hasOverflow) return head;

  const perPage = db.usable - 4; // an overflow page: u32 next page, then content
  const pagesLeft = db.pageCount - db.claimed.size;
  if (total - local > pagesLeft * perPage) {
    throw new Error(`SQLite page ${pgno} has a cell of ${total} bytes, larger than the database`);
  }
  const chunks = [head];
  let remaining = total - local;
  let next = p.readUInt32BE(at + local);
  while (remaining > 0) {
    if (next === 0) throw new Error(`SQLite overflow chain from page ${pgno} ends ${remaining} bytes early`);
    const overflow = claim(db, next, `an overflow chain from page ${pgno}`);
    const n = Math.min(remaining, perPage);
    chunks.push(overflow.subarray(4, 4 + n));
    remaining -= n;
    next = overflow.readUInt32BE(0);
  }
  return Buffer.concat(chunks, total);
}

/** SQLite's big-endian base-128 varint (1-9 bytes, the ninth contributing all 8 bits). */
function readVarint(b: Buffer, at: number, limit: number, where: string): { value: number; next: number } {
  let value = 0;
  for (let i = 0; i < 9; i++) {
    if (at + i >= limit) throw new Error(`SQLite ${where} has a varint that runs off its end`);
    const byte = b.readUInt8(at + i);
    if (i === 8) return { value: value * 256 + byte, next: at + 9 };
    value = value * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) return { value, next: at + i + 1 };
  }
  throw new Error('unreachable');
}

/** Decodes a record: varint header size, serial types, then the values they describe. */
function decodeRecord(db: Db, payload: Buffer): Value[] {
  const headerSize = readVarint(payload, 0, payload.length, 'record');
  if (headerSize.value < headerSize.next || headerSize.value > payload.length) {
    throw new Error(`SQLite record header size ${headerSize.value} is invalid`);
  }
  const values: Value[] = [];
  let typeAt = headerSize.next;
  let bodyAt = headerSize.value;
  while (typeAt < headerSize.value) {
    const serial = readVarint(payload, typeAt, headerSize.value, 'record header');
    typeAt = serial.next;
    const size = serialTypeSize(serial.value);
    if (bodyAt + size > payload.length) throw new Error('SQLite record is shorter than its header says');
    values.push(decodeValue(db, serial.value, payload.subarray(bodyAt, bodyAt + size)));
    bodyAt += size;
  }
  return values;
}

/** Bytes taken by a value of a serial type (https://www.sqlite.org/fileformat2.html#record_format). */
function serialTypeSize(serial: number): number {
  const fixed = [0, 1, 2, 3, 4, 6, 8, 8, 0, 0];
  if (serial < fixed.length) return fixed[serial]!;
  if (serial < 12) throw new Error(`SQLite record uses reserved serial type ${serial}`);
  return Math.floor((serial - 12) / 2); // blob: (N-12)/2, text: (N-13)/2
}

function decodeValue(db: Db, serial: number, bytes: Buffer): Value {
  switch (serial) {
    case 0:
      return null;
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
      return bytes.readIntBE(0, bytes.length);
    case 6: {
      const big = bytes.readBigInt64BE(0);
      return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
    }
    case 7:
      return bytes.readDoubleBE(0);
    case 8:
      return 0;
    case 9:
      return 1;
    default:
      return serial % 2 === 0 ? bytes : decodeText(db.encoding, bytes);
  }
}

function decodeText(encoding: number, bytes: Buffer): string {
  if (encoding === ENCODING_UTF8) return bytes.toString('utf8');
  if (bytes.length % 2 !== 0) throw new Error('SQLite UTF-16 text has an odd number of bytes');
  if (encoding === ENCODING_UTF16LE) return bytes.toString('utf16le');
  return Buffer.from(bytes).swap16().toString('utf16le');
}
