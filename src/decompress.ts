import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { FileHandle } from 'node:fs/promises';
import { PassThrough, Readable, Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import { crc32, createInflateRaw } from 'node:zlib';
import { TarsierError, unprocessable } from './errors.js';

/**
 * Decompression of layers and feeds, whatever the compression: sniffed from the first bytes.
 * gzip runs in Node's zlib, and zstd too where Node has it (22.15+, 24); bzip2 and xz, and zstd
 * on Node 20, run as the system's own programs, which are fast and keep the work off the event loop.
 * A local file (marked with readsFile) is read by those programs themselves, through its open
 * descriptor, and gzip by a faster inflater program when one is installed (see Decoders).
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

/** Which decoder reads what; the defaults are what measured fastest (docs/benchmarks.md, "Layer indexing"). */
export interface Decoders {
  /**
   * gzip inflater programs, tried in order; the first installed one is used, and Node's zlib when
   * none is. igzip (Debian package isal) inflates about 4× as fast as zlib, in a process of its
   * own beside the tar walk.
   */
  readonly gzipPrograms: readonly string[];
  /**
   * Whether gzip piped through Node (downloads) goes to those programs too. Off: a download is
   * bound by the network, and the program's pipes read ahead of the walk (a stream of zeros is cut
   * later); for a local file piped through Node, igzip took 0.8 × zlib's time.
   */
  readonly gzipProgramsForStreams: boolean;
  /**
   * Where Node has zstd (22.15+, 24): whether it decompresses local files / piped streams instead
   * of the zstd program. On Node 24, a 1.8 GB layer: the program given the file took 0.8 × the time
   * of Node's zstd; piped through Node, the two were within 5 % (Node's needs no process).
   */
  readonly nodeZstd: { readonly files: boolean; readonly streams: boolean };
}

export const DEFAULT_DECODERS: Decoders = {
  gzipPrograms: ['igzip'],
  gzipProgramsForStreams: false,
  nodeZstd: { files: false, streams: true },
};

/**
 * Streams that read a local file, with the file's open handle: decompressor programs are given
 * the descriptor as their standard input and read the file themselves, instead of Node reading it
 * and piping it to them (two copies fewer). The descriptor, not the path: the path was checked
 * when it was opened, and a symlink swapped in since cannot redirect the program.
 */
const FILES = new WeakMap<Readable, FileHandle>();

/**
 * Marks stream as reading file from its start with positional reads (createReadStream with
 * start: 0), so a program reading the same descriptor sees the whole file. Returns stream.
 */
export function readsFile(stream: Readable, file: FileHandle): Readable {
  FILES.set(stream, file);
  return stream;
}

/**
 * The decompressed byte stream of source. corrupt(detail) makes the error for a corrupt stream
 * (its caller knows whether it reads a layer or a feed); a missing program is a 422 that names
 * the package to install. Destroying the result stops the decompression (a program is killed).
 */
export async function decompressed(
  source: Readable,
  corrupt: (detail: string) => TarsierError,
  decoders: Decoders = DEFAULT_DECODERS,
): Promise<Readable> {
  const file = FILES.get(source);
  const { head, input } = file ? { head: await fileHead(file), input: source } : await peek(source);
  const compression = sniffCompression(head);
  if (compression === 'none') return input;
  if (compression === 'gzip') {
    const programs = file || decoders.gzipProgramsForStreams ? decoders.gzipPrograms : [];
    return (await installedProgram(programs, compression, input, corrupt, file?.fd)) ?? gunzipInNode(input, corrupt);
  }
  if (compression === 'zstd' && createZstdDecompress) {
    // The program when it measured faster and is installed (a Docker image may lack it), else Node's own.
    const programs = (file ? decoders.nodeZstd.files : decoders.nodeZstd.streams) ? [] : [PROGRAMS.zstd.command];
    return (await installedProgram(programs, compression, input, corrupt, file?.fd)) ?? zstdInNode(input, corrupt);
  }
  return programOutput(compression, input, corrupt, file?.fd);
}

/** The output of the first of these optional programs that is installed; undefined when none is. */
async function installedProgram(
  commands: readonly string[],
  compression: Exclude<Compression, 'none'>,
  input: Readable,
  corrupt: (detail: string) => TarsierError,
  fd: number | undefined,
): Promise<Readable | undefined> {
  for (const command of commands) {
    if (MISSING_PROGRAMS.has(command)) continue;
    const output = await spawnDecompressor(command, compression, input, corrupt, fd).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      MISSING_PROGRAMS.add(command);
      return undefined;
    });
    if (output) return output;
  }
  return undefined;
}

/** The first bytes of a file, read in place: the descriptor's offset stays at the start for a program reading it. */
async function fileHead(file: FileHandle): Promise<Buffer> {
  const head = Buffer.alloc(6);
  const { bytesRead } = await file.read(head, 0, head.length, 0);
  return head.subarray(0, bytesRead);
}

/** The first bytes of source, and a stream of all of it (the sniffed bytes put back in front). */
async function peek(source: Readable): Promise<{ head: Buffer; input: Readable }> {
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
  const input = Readable.from(
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
  return { head, input };
}

/** Optional decompressor programs found missing once: not looked for again until restart. */
const MISSING_PROGRAMS = new Set<string>();

/** The output of the program that compression needs; a 422 naming its package when it is not installed. */
function programOutput(
  compression: Exclude<Compression, 'gzip' | 'none'>,
  input: Readable,
  corrupt: (detail: string) => TarsierError,
  fd?: number,
): Promise<Readable> {
  const program = PROGRAMS[compression];
  return spawnDecompressor(program.command, compression, input, corrupt, fd).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw unprocessable(
      `the data is ${compression}-compressed, but the ${program.command} program is not installed on the server (Debian package ${program.package})`,
    );
  });
}

function gunzipInNode(source: Readable, corrupt: (detail: string) => TarsierError): Readable {
  const output = Readable.from(gzipMembers(source, corrupt), { objectMode: false, highWaterMark: CHUNK });
  output.once('close', () => source.destroy());
  return output;
}

function zstdInNode(source: Readable, corrupt: (detail: string) => TarsierError): Readable {
  const zstd = createZstdDecompress!({ chunkSize: CHUNK });
  const output = new PassThrough({ highWaterMark: CHUNK });
  source.on('error', (err) => output.destroy(err));
  zstd.on('error', (err) => output.destroy(corrupt(`zstd data is corrupt or truncated: ${err.message}`)));
  output.once('close', () => {
    source.destroy();
    zstd.destroy();
  });
  return source.pipe(zstd).pipe(output);
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

/**
 * The output of `command -dc`, reading input piped through Node, or the file descriptor fd
 * directly when given (input is then only watched: its errors, an abort among them, end the
 * program). Rejects with the spawn error (ENOENT: not installed) before anything is read.
 */
async function spawnDecompressor(
  command: string,
  compression: Exclude<Compression, 'none'>,
  input: Readable,
  corrupt: (detail: string) => TarsierError,
  fd?: number,
): Promise<Readable> {
  const child = spawn(command, ['-dc'], { stdio: [fd ?? 'pipe', 'pipe', 'pipe'] });
  await once(child, 'spawn');
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-500)));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  // The output ends once the program has said how it went: a corrupt stream fails, rather than
  // looking merely short to the reader.
  const output = new Transform({
    readableHighWaterMark: CHUNK,
    transform: (chunk: Buffer, _encoding, callback) => callback(null, chunk),
    flush: (callback) =>
      void exited.then((code) => callback(code === 0 ? null : corrupt(`${compression} data is corrupt or truncated: ${stderr.trim()}`))),
  });
  child.on('error', (err) => output.destroy(err));
  child.stdout!.on('error', (err) => output.destroy(err));
  child.stdout!.pipe(output);
  input.on('error', (err) => {
    child.kill();
    output.destroy(err);
  });
  if (fd === undefined) {
    // The child may exit early (corrupt input); its closed stdin must not crash the process.
    child.stdin!.on('error', () => undefined);
    input.pipe(child.stdin!);
  }
  output.once('close', () => {
    if (child.exitCode === null) child.kill();
    child.stdout!.destroy();
    input.destroy();
  });
  return output;
}
