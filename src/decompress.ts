import { spawn } from 'node:child_process';
import { PassThrough, Readable, type Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import { crc32, createInflateRaw } from 'node:zlib';
import { TarsierError, unprocessable } from './errors.js';

/**
 * Decompression of layers and feeds, whatever the compression: sniffed from the first bytes.
 * gzip runs in Node's zlib, and zstd too where Node has it (22.15+, 24); bzip2 and xz, and zstd
 * on Node 20, run as the system's own programs, which are fast and keep the work off the event loop.
 */
export type Compression = 'gzip' | 'zstd' | 'bzip2' | 'xz' | 'none';

/** Chunks handed downstream: large enough that per-chunk overhead vanishes. */
const CHUNK = 256 * 1024;

export function sniffCompression(head: Buffer): Compression {
  if (head.length < 4) return 'none';
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head.readUInt32LE(0) === 0xfd2fb528) return 'zstd';
  if (head.subarray(0, 3).toString('latin1') === 'BZh') return 'bzip2';
  if (head.subarray(0, 6).equals(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]))) return 'xz';
  return 'none';
}

const PROGRAMS: Record<Exclude<Compression, 'gzip' | 'none'>, { command: string; package: string }> = {
  zstd: { command: 'zstd', package: 'zstd' },
  bzip2: { command: 'bzip2', package: 'bzip2' },
  xz: { command: 'xz', package: 'xz-utils' },
};

/**
 * The decompressed byte stream of source. corrupt(detail) makes the error for a corrupt stream
 * (its caller knows whether it reads a layer or a feed); a missing program is a 422 that names
 * the package to install.
 */
export async function decompressed(source: Readable, corrupt: (detail: string) => TarsierError): Promise<Readable> {
  const iterator = source[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let length = 0;
  while (length < 6) {
    const next = await iterator.next();
    if (next.done) break;
    chunks.push(next.value as Buffer);
    length += (next.value as Buffer).length;
  }
  const head = Buffer.concat(chunks);
  // Put the sniffed bytes back in front of the rest of the stream.
  const rest = Readable.from(
    (async function* () {
      if (head.length > 0) yield head;
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        yield next.value as Buffer;
      }
    })(),
    { objectMode: false },
  );
  const compression = sniffCompression(head);
  if (compression === 'none') return rest;
  if (compression === 'gzip') {
    const output = Readable.from(gzipMembers(rest, corrupt), { objectMode: false, highWaterMark: CHUNK });
    output.once('close', () => rest.destroy());
    return output;
  }
  if (compression === 'zstd' && createZstdDecompress) {
    const zstd = createZstdDecompress({ chunkSize: CHUNK });
    const output = new PassThrough({ highWaterMark: CHUNK });
    rest.on('error', (err) => output.destroy(err));
    zstd.on('error', (err) => output.destroy(corrupt(`zstd data is corrupt or truncated: ${err.message}`)));
    output.once('close', () => {
      rest.destroy();
      zstd.destroy();
    });
    return rest.pipe(zstd).pipe(output);
  }
  return spawnDecompressor(rest, compression, corrupt);
}

/** Node's own zstd (Node 22.15+, 24): in the thread pool, no process to spawn. The zstd program serves older runtimes. */
const createZstdDecompress = (zlib as { createZstdDecompress?: (options: { chunkSize: number }) => Transform }).createZstdDecompress;

// ---------------------------------------------------------------------------------------------
// gzip

const FLAG = { HCRC: 2, EXTRA: 4, NAME: 8, COMMENT: 16, RESERVED: 0xe0 } as const;
/**
 * Compressed bytes handed to the inflater at a time. Deflate expands up to ~1032×, so a slice is
 * shrunk while the data expands a lot, keeping what one write makes near OUTPUT_PER_WRITE
 * (a decompression bomb costs time, never memory).
 */
const MAX_SLICE = 64 * 1024;
const MIN_SLICE = 4 * 1024;
const OUTPUT_PER_WRITE = 16 * 1024 * 1024;

/**
 * The length of the gzip member header at the start of data (RFC 1952 §2.3), undefined when more
 * bytes are needed to tell, or 'not-gzip' when data does not start a member.
 */
function gzipHeaderLength(data: Buffer, corrupt: (detail: string) => TarsierError): number | 'not-gzip' | undefined {
  if (data.length < 2) return data.length === 1 && data[0] !== 0x1f ? 'not-gzip' : undefined;
  if (data[0] !== 0x1f || data[1] !== 0x8b) return 'not-gzip';
  if (data.length < 10) return undefined;
  if (data[2] !== 8) throw corrupt(`gzip data is corrupt or truncated: unknown compression method ${data[2]}`);
  const flags = data[3]!;
  if (flags & FLAG.RESERVED) throw corrupt('gzip data is corrupt or truncated: reserved header flags are set');
  let at = 10;
  if (flags & FLAG.EXTRA) {
    if (data.length < at + 2) return undefined;
    at += 2 + data.readUInt16LE(at);
  }
  for (const flag of [FLAG.NAME, FLAG.COMMENT]) {
    if (!(flags & flag)) continue;
    const end = data.indexOf(0, at);
    if (end < 0) return undefined;
    at = end + 1;
  }
  if (flags & FLAG.HCRC) at += 2;
  return data.length >= at ? at : undefined;
}

/** Resolves once zlib has taken chunk in, or has failed on it (a failed write never calls back). */
function inflated(inflate: ReturnType<typeof createInflateRaw>, chunk: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      inflate.off('error', done);
      resolve();
    };
    inflate.once('error', done);
    inflate.write(chunk, done);
  });
}

/**
 * gzip data, member after member, as GNU gzip reads it: a concatenation of members is one
 * stream; each member's CRC-32 and length are checked; and bytes after a complete member that do
 * not start another one (zero padding, a registry's trailing garbage) end the data instead of
 * failing it ("trailing garbage ignored"). zlib's gunzip stream fails on those bytes and loses
 * the output of the chunk they arrive in, which holds the tar end-of-archive marker. Headers and
 * trailers are read here; zlib's raw inflater inflates each member's deflate data, and says
 * where it ended (bytesWritten).
 */
async function* gzipMembers(source: Readable, corrupt: (detail: string) => TarsierError): AsyncGenerator<Buffer> {
  const input = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let pending: Buffer = Buffer.alloc(0);
  let exhausted = false;
  const readMore = async (): Promise<boolean> => {
    if (exhausted) return false;
    const next = await input.next();
    if (next.done) {
      exhausted = true;
      return false;
    }
    pending = pending.length === 0 ? next.value : Buffer.concat([pending, next.value]);
    return true;
  };
  try {
    for (let member = 0; ; member++) {
      let header = gzipHeaderLength(pending, corrupt);
      while (header === undefined && (await readMore())) header = gzipHeaderLength(pending, corrupt);
      if (header === undefined || header === 'not-gzip') {
        if (member > 0) return; // the end, or trailing bytes after the last member: ignored, as gzip does
        throw corrupt(
          header === undefined
            ? 'gzip data is corrupt or truncated: unexpected end of file'
            : 'gzip data is corrupt or truncated: no gzip header',
        );
      }
      pending = pending.subarray(header);
      const inflate = createInflateRaw({ chunkSize: CHUNK });
      const produced: Buffer[] = [];
      let failure: Error | undefined;
      let crc = 0;
      let size = 0;
      inflate.on('data', (chunk: Buffer) => {
        crc = crc32(chunk, crc);
        size = (size + chunk.length) >>> 0;
        produced.push(chunk);
      });
      inflate.once('error', (err) => (failure = corrupt(`gzip data is corrupt or truncated: ${err.message}`)));
      let written = 0;
      let lastSlice = pending.subarray(0, 0);
      let sliceSize = MAX_SLICE;
      try {
        // The member's deflate data ends where the inflater stops taking bytes (zlib ends a raw
        // stream at its final block and leaves the rest of the input unused).
        while (inflate.bytesWritten === written) {
          if (pending.length === 0 && !(await readMore())) throw corrupt('gzip data is corrupt or truncated: unexpected end of file');
          lastSlice = pending.subarray(0, sliceSize);
          pending = pending.subarray(lastSlice.length);
          written += lastSlice.length;
          await inflated(inflate, lastSlice);
          if (failure) throw failure;
          const out = produced.splice(0);
          const ratio = out.reduce((sum, chunk) => sum + chunk.length, 0) / lastSlice.length;
          sliceSize = Math.max(MIN_SLICE, Math.min(MAX_SLICE, Math.floor(OUTPUT_PER_WRITE / Math.max(ratio, 1))));
          for (const chunk of out) yield chunk;
        }
      } finally {
        inflate.destroy();
      }
      // The bytes of the last slice the inflater did not use: the trailer and what follows it.
      const unused = written - inflate.bytesWritten;
      pending = Buffer.concat([lastSlice.subarray(lastSlice.length - unused), pending]);
      while (pending.length < 8 && (await readMore()));
      if (pending.length < 8) throw corrupt('gzip data is corrupt or truncated: unexpected end of file');
      if (pending.readUInt32LE(0) !== crc >>> 0 || pending.readUInt32LE(4) !== size) {
        throw corrupt('gzip data is corrupt or truncated: its CRC-32 or length does not match');
      }
      pending = pending.subarray(8);
    }
  } finally {
    await input.return?.();
  }
}

function spawnDecompressor(
  input: Readable,
  compression: Exclude<Compression, 'gzip' | 'none'>,
  corrupt: (detail: string) => TarsierError,
): Readable {
  const program = PROGRAMS[compression];
  const child = spawn(program.command, ['-dc'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-500)));
  const output = child.stdout;
  child.on('error', (err: NodeJS.ErrnoException) => {
    output.destroy(
      err.code === 'ENOENT'
        ? unprocessable(
            `the data is ${compression}-compressed, but the ${program.command} program is not installed on the server (Debian package ${program.package})`,
          )
        : err,
    );
  });
  child.on('close', (code) => {
    if (code !== 0 && code !== null) output.destroy(corrupt(`${compression} data is corrupt or truncated: ${stderr.trim()}`));
  });
  input.on('error', (err) => {
    child.kill();
    output.destroy(err);
  });
  // The child may exit early (corrupt input); its closed stdin must not crash the process.
  child.stdin.on('error', () => undefined);
  input.pipe(child.stdin);
  output.once('close', () => {
    if (child.exitCode === null) child.kill();
  });
  return output;
}
