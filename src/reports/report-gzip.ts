import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { constants, crc32, deflateRaw as deflateRawCallback } from 'node:zlib';
import type { ByteRange, CachedReport, ReportCache } from './report-cache.js';

/**
 * Layer reports gzip-compressed from kept parts. Compressing a large report whole costs
 * milliseconds per MiB each time it is rebuilt, though a change touches one feature of hundreds. So
 * a report's features are compressed in chunks (runs of whole features, ~64 KiB and more), each a
 * raw deflate stream ended by a sync flush (byte-aligned, not final), kept by the SHA-256 of its
 * bytes: kept by content, a compressed chunk cannot go stale, so no change has to drop it. The gzip
 * member is a header, the few bytes around the features as stored blocks, the chunks in order, and
 * a trailer with the CRC-32 of the whole body. A rebuild compresses only the chunks whose bytes
 * changed, and images that share a run of packages share its chunks.
 *
 * Measured on the layer-report benchmark's report (1 MiB, 563 features) and on the same report
 * with prose for descriptions, per rebuild: compressing the whole report took 5 and 19 CPU-ms at
 * level 6, 2.3 and 10 at level 1 (1.35 and 1.16 times level 6's size), these chunks 1.8 and 3.4
 * (1.17 and 1.07 times: the window of deflate is 32 KiB, so little is lost past it). A gzip member
 * per fragment would need no chunks, but fragments compressed apart are 7.7 times the size (each
 * restarts without the keys and text the others repeat), and curl (7.88) reads only the first
 * member of a response and then fails.
 */

/** A chunk ends once it holds this much, at the next feature version picked by its id... */
const CHUNK_MIN_BYTES = 64 * 1024;
/** ...one in 2^CHUNK_PICK_BITS... */
const CHUNK_PICK_BITS = 2;
/** ...or after the feature that brings it to this, whatever the id. */
const CHUNK_MAX_BYTES = 256 * 1024;

/** Whether a chunk may end after this feature version: the top bits of a multiplicative hash of its id. */
const picked = (featureVersionId: number): boolean => Math.imul(featureVersionId, 0x9e3779b1) >>> (32 - CHUNK_PICK_BITS) === 0;

/**
 * The chunks of a report whose features' bytes begin at start, one feature after another. Ending at
 * picked feature versions rather than at a byte count keeps the other boundaries where they were
 * when a fragment grows or shrinks, and puts them at the same feature versions in reports that list
 * the same run of them, so those chunks are the same bytes.
 */
export function gzipChunks(featureVersionIds: readonly number[], featureLengths: readonly number[], start: number): ByteRange[] {
  const chunks: ByteRange[] = [];
  let chunkStart = start;
  let end = start;
  featureVersionIds.forEach((id, i) => {
    end += featureLengths[i]!;
    const bytes = end - chunkStart;
    if ((bytes >= CHUNK_MIN_BYTES && picked(id)) || bytes >= CHUNK_MAX_BYTES || i === featureVersionIds.length - 1) {
      chunks.push({ start: chunkStart, end });
      chunkStart = end;
    }
  });
  return chunks;
}

const deflateRaw = promisify(deflateRawCallback);

/** RFC 1952's header without name, time or flags, as zlib writes it (OS: Unix). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03]);
const STORED_BLOCK_MAX = 0xffff;

/** bytes as deflate stored blocks (RFC 1951 3.2.4), the last one final when last is set (then there is one, if empty). */
function storedBlocks(bytes: Buffer, last: boolean): Buffer[] {
  const blocks: Buffer[] = [];
  if (bytes.length === 0 && !last) return blocks;
  let offset = 0;
  do {
    const length = Math.min(STORED_BLOCK_MAX, bytes.length - offset);
    const header = Buffer.alloc(5);
    header[0] = last && offset + length === bytes.length ? 1 : 0;
    header.writeUInt16LE(length, 1);
    header.writeUInt16LE(~length & 0xffff, 3);
    blocks.push(header, bytes.subarray(offset, offset + length));
    offset += length;
  } while (offset < bytes.length);
  return blocks;
}

/** A chunk's raw deflate stream, kept or made (in the thread pool) and kept. */
async function deflatedChunk(bytes: Buffer, cache: ReportCache): Promise<Buffer> {
  const digest = createHash('sha256').update(bytes).digest('base64');
  const kept = cache.gzipChunk(digest);
  if (kept) return kept;
  const made = await deflateRaw(bytes, { finishFlush: constants.Z_SYNC_FLUSH });
  cache.keepGzipChunk(digest, made);
  return made;
}

/** The report's body as one gzip member, its chunks compressed once (a report without chunks is one). */
export async function gzipReport(report: Pick<CachedReport, 'body' | 'chunks'>, cache: ReportCache): Promise<Buffer> {
  const { body } = report;
  const chunks = report.chunks.length > 0 ? report.chunks : [{ start: 0, end: body.length }];
  const deflated = await Promise.all(chunks.map(({ start, end }) => deflatedChunk(body.subarray(start, end), cache)));
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc32(body), 0);
  trailer.writeUInt32LE(body.length % 2 ** 32, 4);
  return Buffer.concat([
    GZIP_HEADER,
    ...storedBlocks(body.subarray(0, chunks[0]!.start), false),
    ...deflated,
    ...storedBlocks(body.subarray(chunks.at(-1)!.end), true),
    trailer,
  ]);
}
