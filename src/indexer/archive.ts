import { createHash, type Hash } from 'node:crypto';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { Parser, type ReadEntry } from 'tar';
import { decompressed, DEFAULT_DECODERS, type Decoders } from '../decompress.js';
import { unprocessable, TarsierError } from '../errors.js';
import type { ApplicationFindings, FileLister, UnreadableManifest } from '../model/indexing.js';
import type { Whiteouts } from '../model/layer.js';

/**
 * Reads a layer archive in one streaming pass: sniffs the compression, decompresses, walks the
 * tar entries, buffers only the files someone wants (each under a size cap), records whiteouts,
 * and resolves links to wanted files within the layer. Memory stays independent of layer size.
 */

export type LayerFormat = 'docker' | 'aci';

/** Layer format names as clients send them, in any case: Docker and OCI layers are read alike. */
const LAYER_FORMATS: Readonly<Record<string, LayerFormat>> = { docker: 'docker', oci: 'docker', aci: 'aci' };

export function layerFormatNamed(name: string): LayerFormat | undefined {
  return LAYER_FORMATS[name.trim().toLowerCase()];
}

export interface ArchiveLimits {
  /** Uncompressed bytes the walk may read (decompression bombs stop here). */
  readonly maxExpandedBytes: number;
  /** Size of one wanted file. */
  readonly maxFileBytes: number;
}

export interface LayerContents {
  readonly files: Map<string, Buffer>;
  readonly whiteouts: Whiteouts;
  /**
   * `sha256:<hex>` of the whole decompressed stream (the tar an image config's rootfs.diff_ids
   * names), when asked for; absent when the bytes after the end-of-archive marker would have
   * taken it past maxExpandedBytes.
   */
  readonly uncompressedDigest?: string;
  /** What the file listers found in the programs and archives the walk handed them, in archive order. */
  readonly applicationsInFiles?: ApplicationFindings;
}

export interface ReadOptions {
  /** Listers each file the walk passes may go to (programs, Java archives): see FileLister. */
  readonly fileListers?: readonly FileLister[];
  /** Which decompressor reads what (tests choose; the server keeps the measured defaults). */
  readonly decoders?: Decoders;
  /** Compute uncompressedDigest. */
  readonly uncompressedDigest?: boolean;
}

const BLOCK = 512;
/** The wanted files of one layer together may hold this many times maxFileBytes in memory. */
const BUFFERED_FILES_FACTOR = 2;
/** Symlink chains longer than this are loops (Linux's own limit is 40). */
const MAX_LINK_HOPS = 40;
const WHITEOUT_PREFIX = '.wh.';
const OPAQUE_MARKER = '.wh..wh..opq';

/**
 * Normalises an archive path: strips `./` and `/` prefixes and resolves `.` and `..`. Returns
 * undefined for a path that climbs out of the layer root (a hostile entry).
 */
export function normalizeEntryPath(raw: string): string | undefined {
  const out: string[] = [];
  for (const part of raw.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length === 0) return undefined;
      out.pop();
    } else {
      out.push(part);
    }
  }
  return out.join('/');
}

/** Where a symlink at `from` pointing to `target` leads, inside the layer (chroot semantics: `/..` is `/`). */
export function resolveLinkTarget(from: string, target: string): string {
  const base = target.startsWith('/') ? [] : from.split('/').slice(0, -1);
  for (const part of target.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') base.pop();
    else base.push(part);
  }
  return base.join('/');
}

const notAnArchive = (detail: string, cause?: unknown): TarsierError =>
  unprocessable(`the layer is not a readable tar archive (${detail})`, cause);

interface Walk {
  readonly format: LayerFormat;
  readonly wants: (path: string) => boolean;
  readonly limits: ArchiveLimits;
  readonly files: Map<string, Buffer>;
  /** Bytes of wanted files buffered so far (a file read twice counts twice: memory, not content). */
  buffered: number;
  readonly deleted: Set<string>;
  readonly opaque: Set<string>;
  /** Wanted symlinks: path → resolved target. */
  readonly symlinks: Map<string, string>;
  /** Targets of wanted symlinks, buffered when they appear later in the archive. */
  readonly linkTargets: Set<string>;
  /** The entry whose body is being read; still set at the end means the archive was cut short. */
  open: string | undefined;
  /** Whether the parser recognised at least one entry (else the input is not a tar at all). */
  sawEntry: boolean;
  /** Whether the end-of-archive marker (two zero blocks) has been read: nothing after it counts. */
  ended: boolean;
  failure: Error | undefined;
  readonly fileListers: readonly FileLister[];
  /** Entries seen so far: numbers each entry, so that a file listed twice counts only as its last entry. */
  entries: number;
  /** Paths handed to file listers → the number of the last entry at that path. */
  readonly listedPaths: Map<string, number>;
  /** What file listers found, with the entry each came from. */
  readonly listings: { readonly entry: number; readonly path: string; readonly found: ApplicationFindings }[];
  /** The file listers' work on the last file handed over (one file at a time is held: the walk waits for it). */
  listing: Promise<void>;
}

/** The layer path of an archive entry, or undefined when the entry is outside the layer's files. */
function layerPath(walk: Walk, raw: string): string | undefined {
  const path = normalizeEntryPath(raw);
  if (path === undefined || path === '') return undefined;
  if (walk.format === 'docker') return path;
  // ACI images keep the filesystem under rootfs/; the manifest beside it is not part of it.
  return path.startsWith('rootfs/') ? path.slice('rootfs/'.length) : undefined;
}

function recordWhiteout(walk: Walk, path: string): boolean {
  const slash = path.lastIndexOf('/');
  const name = path.slice(slash + 1);
  if (!name.startsWith(WHITEOUT_PREFIX)) return false;
  const dir = slash < 0 ? '' : path.slice(0, slash);
  if (name === OPAQUE_MARKER) walk.opaque.add(dir);
  else walk.deleted.add(dir === '' ? name.slice(WHITEOUT_PREFIX.length) : `${dir}/${name.slice(WHITEOUT_PREFIX.length)}`);
  return true;
}

function onEntry(walk: Walk, entry: ReadEntry): void {
  walk.sawEntry = true;
  walk.entries += 1;
  const path = layerPath(walk, entry.path);
  if (path === undefined || recordWhiteout(walk, path)) return void entry.resume();
  // A later entry at a path replaces the file: what was listed from the earlier one goes.
  if (walk.listedPaths.has(path)) walk.listedPaths.set(path, walk.entries);
  const wanted = walk.wants(path) || walk.linkTargets.has(path);
  switch (entry.type) {
    case 'File':
    case 'OldFile':
    case 'ContiguousFile': {
      if (wanted) return bufferFile(walk, path, entry);
      const listers = walk.fileListers.filter((l) => l.considers(path, entry.mode ?? 0));
      if (listers.length > 0) return readForListers(walk, path, entry, listers);
      break;
    }
    case 'SymbolicLink':
      if (wanted && entry.linkpath !== undefined) {
        const target = resolveLinkTarget(path, entry.linkpath);
        walk.symlinks.set(path, target);
        walk.linkTargets.add(target);
        walk.files.delete(path);
      }
      break;
    case 'Link': {
      // A hard link names an earlier entry of the same archive: copy it if we kept it.
      const target = entry.linkpath === undefined ? undefined : layerPath(walk, entry.linkpath);
      const content = target === undefined ? undefined : walk.files.get(target);
      if (wanted && content) walk.files.set(path, content);
      break;
    }
    default:
      break;
  }
  entry.resume();
}

function bufferFile(walk: Walk, path: string, entry: ReadEntry): void {
  const limit = walk.limits.maxFileBytes;
  if (entry.size > limit) {
    walk.failure ??= unprocessable(`${path} in the layer is ${entry.size} bytes, over clair.indexer.maxfilebytes (${limit} bytes)`);
    return void entry.resume();
  }
  // Many wanted files (distroless status.d/*) must not add up past what one layer may hold in memory.
  walk.buffered += entry.size;
  if (walk.buffered > limit * BUFFERED_FILES_FACTOR) {
    walk.failure ??= unprocessable(
      `the package databases and release files of the layer add up to more than ${BUFFERED_FILES_FACTOR} × clair.indexer.maxfilebytes (${limit * BUFFERED_FILES_FACTOR} bytes)`,
    );
    return void entry.resume();
  }
  const chunks: Buffer[] = [];
  walk.open = path;
  entry.on('data', (chunk: Buffer) => chunks.push(chunk));
  entry.on('end', () => {
    walk.open = undefined;
    walk.symlinks.delete(path);
    walk.files.set(path, Buffer.concat(chunks));
  });
}

/**
 * Reads a file the listers consider: its first bytes decide which of them select it; a selected
 * file is read whole (within maxFileBytes, else reported unread) and handed to them once read.
 */
function readForListers(walk: Walk, path: string, entry: ReadEntry, considering: readonly FileLister[]): void {
  const headBytes = Math.max(...considering.map((l) => l.headBytes));
  const chunks: Buffer[] = [];
  let read = 0;
  let selected: readonly FileLister[] | undefined;
  // One listener throughout, ignoring what is not kept: a ReadEntry stops flowing when its last
  // 'data' listener goes, which would stall the walk.
  entry.on('data', (chunk: Buffer) => {
    if (selected?.length === 0) return;
    chunks.push(chunk);
    read += chunk.length;
    if (selected !== undefined || (read < headBytes && read < entry.size)) return;
    const head = chunks.length === 1 ? chunk : Buffer.concat(chunks);
    selected = considering.filter((l) => l.selects(head.subarray(0, l.headBytes)));
    if (selected.length > 0 && entry.size > walk.limits.maxFileBytes) {
      const why = `${entry.size} bytes, over clair.indexer.maxfilebytes (${walk.limits.maxFileBytes} bytes): not read`;
      recordListing(walk, path, { packages: [], unreadable: [{ location: path, why }] });
      selected = [];
    }
    if (selected.length === 0) chunks.length = 0;
  });
  walk.open = path;
  entry.on('end', () => {
    walk.open = undefined;
    if (selected === undefined && entry.size === 0) selected = considering.filter((l) => l.selects(Buffer.alloc(0)));
    if (!selected?.length) return;
    const listers = selected;
    const content = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    const number = walk.entries;
    walk.listedPaths.set(path, number);
    walk.listing = walk.listing.then(() => listFile(walk, number, path, content, listers));
  });
}

function recordListing(walk: Walk, path: string, found: ApplicationFindings): void {
  walk.listedPaths.set(path, walk.entries);
  walk.listings.push({ entry: walk.entries, path, found });
}

/** Hands one file to the listers that selected it; a lister that fails is reported against the file, not the layer. */
async function listFile(walk: Walk, entry: number, path: string, content: Buffer, listers: readonly FileLister[]): Promise<void> {
  for (const lister of listers) {
    let found: ApplicationFindings;
    try {
      found = await lister.list(path, content);
    } catch (err) {
      found = { packages: [], unreadable: [{ location: path, why: `${lister.name}: ${(err as Error).message}` }] };
    }
    walk.listings.push({ entry, path, found });
  }
}

/** What the file listers found in the files as the layer finally holds them. */
function applicationsInFiles(walk: Walk): ApplicationFindings {
  const found: ApplicationFindings = { packages: [], unreadable: [] };
  for (const listing of walk.listings) {
    if (walk.listedPaths.get(listing.path) !== listing.entry) continue;
    found.packages.push(...listing.found.packages);
    found.unreadable.push(...(listing.found.unreadable as UnreadableManifest[]));
  }
  return found;
}

/** Resolves wanted symlinks to the buffered files they lead to (following chains, stopping at loops). */
function resolveSymlinks(walk: Walk): void {
  for (const [path, first] of walk.symlinks) {
    let target = first;
    for (let hops = 0; hops < MAX_LINK_HOPS; hops++) {
      const content = walk.files.get(target);
      if (content) {
        walk.files.set(path, content);
        break;
      }
      const next = walk.symlinks.get(target);
      if (next === undefined) break;
      target = next;
    }
  }
}

/**
 * Walks a layer archive. wants(path) selects the files to buffer (normalised paths; for ACI
 * layers relative to rootfs/). Rejects with a 422 TarsierError when the archive is unreadable,
 * truncated, expands past maxExpandedBytes or holds a wanted file over maxFileBytes.
 */
export async function readLayerArchive(
  source: Readable,
  format: LayerFormat,
  wants: (path: string) => boolean,
  limits: ArchiveLimits,
  options: ReadOptions = {},
): Promise<LayerContents> {
  const walk: Walk = {
    format,
    wants,
    limits,
    files: new Map(),
    buffered: 0,
    deleted: new Set(),
    opaque: new Set(),
    symlinks: new Map(),
    linkTargets: new Set(),
    open: undefined,
    sawEntry: false,
    ended: false,
    failure: undefined,
    fileListers: options.fileListers ?? [],
    entries: 0,
    listedPaths: new Map(),
    listings: [],
    listing: Promise.resolve(),
  };
  const parser = new Parser({ strict: true, onReadEntry: (entry) => onEntry(walk, entry) });
  parser.on('error', (err: Error & { code?: string }) => {
    // An archive of nothing but the end-of-archive marker is a valid empty layer (Docker's
    // "empty layer" blob is one); node-tar reports it as unrecognised.
    if (err.code === 'TAR_BAD_ARCHIVE' && walk.ended) return;
    walk.failure ??= notAnArchive(err.message, err);
  });
  parser.on('eof', () => (walk.ended = true));
  // Not events.once: it would reject on the parser's 'error' events, which are recorded above.
  const closed = new Promise<void>((resolve) => parser.once('close', () => resolve()));

  const stream = await decompressed(source, (detail) => notAnArchive(detail), options.decoders ?? DEFAULT_DECODERS).catch(
    (err: unknown) => {
      source.destroy(); // a missing decompressor program: the download or file is not needed any more
      throw err;
    },
  );
  const blocksOf = wholeBlocks();
  let total = 0;
  /** Bytes since the last non-zero byte, to see the end-of-archive zero block. */
  let trailingZeros = 0;
  const uncompressed = options.uncompressedDigest ? createHash('sha256') : undefined;
  let uncompressedDigest: string | undefined;
  const chunks = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  try {
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      const chunk = next.value;
      total += chunk.length;
      if (total > limits.maxExpandedBytes) {
        throw unprocessable(
          `the layer expands to more than clair.indexer.maxexpandedbytes (${limits.maxExpandedBytes} bytes); it may be a decompression bomb`,
        );
      }
      uncompressed?.update(chunk);
      trailingZeros = countTrailingZeros(chunk, trailingZeros);
      for (const blocks of blocksOf(chunk)) if (!parser.write(blocks)) await once(parser, 'drain');
      await walk.listing;
      if (walk.failure) throw walk.failure;
      // Past the end-of-archive marker is padding or junk (gzip's trailing garbage, a stream of
      // zeros): stop there, as tar does, instead of decompressing and scanning the rest.
      if (walk.ended) break;
    }
    if (uncompressed) {
      uncompressedDigest = walk.ended ? await digestOfRest(chunks, uncompressed, limits.maxExpandedBytes - total) : digestOf(uncompressed);
    }
    if (walk.ended) {
      stream.destroy();
      source.destroy();
    }
  } catch (err) {
    stream.destroy();
    source.destroy();
    parser.abort(err as Error);
    if (err instanceof TarsierError) throw err;
    throw notAnArchive(`decompression failed: ${(err as Error).message}`, err);
  }
  if (!walk.ended && blocksOf.rest) parser.write(blocksOf.rest);
  parser.end();
  await closed;
  await walk.listing;
  // Our own diagnoses first: they say more than the parser's codes.
  if (total === 0) throw notAnArchive('it is empty');
  const truncated = !walk.ended && (walk.open !== undefined || total % BLOCK !== 0 || trailingZeros < BLOCK);
  if (truncated && walk.sawEntry) throw notAnArchive('it is truncated: the end-of-archive marker is missing');
  if (walk.failure) throw walk.failure;
  if (truncated) throw notAnArchive('no tar entries found');
  resolveSymlinks(walk);
  for (const path of walk.files.keys()) if (!wants(path)) walk.files.delete(path);
  return {
    files: walk.files,
    whiteouts: { deleted: walk.deleted, opaque: walk.opaque },
    ...(uncompressedDigest ? { uncompressedDigest } : {}),
    ...(walk.fileListers.length > 0 ? { applicationsInFiles: applicationsInFiles(walk) } : {}),
  };
}

function digestOf(hash: Hash): string {
  return `sha256:${hash.digest('hex')}`;
}

/**
 * The digest of the whole decompressed stream, hash having taken in everything up to the
 * end-of-archive marker: the rest is read only for it (never parsed). Undefined when the rest
 * holds more than budget bytes (a stream of zeros after the marker) or cannot be decompressed (a
 * corrupt tail): the layer read is still good, only this digest is unknown.
 */
async function digestOfRest(chunks: AsyncIterator<Buffer>, hash: Hash, budget: number): Promise<string | undefined> {
  try {
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      budget -= next.value.length;
      if (budget < 0) return undefined;
      hash.update(next.value);
    }
  } catch {
    return undefined;
  }
  return digestOf(hash);
}

/**
 * Cuts a byte stream into runs of whole 512-byte blocks. node-tar keeps a partial block at the end
 * of a chunk and Buffer.concat()s the whole next chunk onto it (a copy of every chunk that follows
 * a cut header); here only the cut block is copied. rest: the bytes of a last, partial block.
 */
function wholeBlocks(): ((chunk: Buffer) => Buffer[]) & { rest: Buffer | undefined } {
  const split = (chunk: Buffer): Buffer[] => {
    const out: Buffer[] = [];
    let at = 0;
    if (split.rest) {
      const need = BLOCK - split.rest.length;
      if (chunk.length < need) {
        split.rest = Buffer.concat([split.rest, chunk]);
        return out;
      }
      out.push(Buffer.concat([split.rest, chunk.subarray(0, need)]));
      split.rest = undefined;
      at = need;
    }
    const end = at + Math.floor((chunk.length - at) / BLOCK) * BLOCK;
    if (end > at) out.push(chunk.subarray(at, end));
    if (end < chunk.length) split.rest = chunk.subarray(end);
    return out;
  };
  split.rest = undefined as Buffer | undefined;
  return split;
}

/**
 * The zero bytes the stream ends with so far, counted only up to BLOCK: the truncation check needs
 * no more, and counting every zero of a chunk cost a second per GiB of a zero-filled file.
 */
function countTrailingZeros(chunk: Buffer, previous: number): number {
  const stop = Math.max(0, chunk.length - BLOCK);
  let i = chunk.length - 1;
  while (i >= stop && chunk[i] === 0) i--;
  if (i >= stop) return chunk.length - 1 - i;
  return Math.min(BLOCK, chunk.length >= BLOCK ? BLOCK : previous + chunk.length);
}
