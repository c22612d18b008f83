import { spawn } from 'node:child_process';
import { PassThrough, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { TarsierError, unprocessable } from './errors.js';

/**
 * Decompression of layers and feeds, whatever the compression: sniffed from the first bytes.
 * gzip runs in Node's zlib; zstd (absent from Node 20), bzip2 and xz run as the system's own
 * programs, which are fast and keep the work off the event loop.
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
    // zlib's own errors ("incorrect header check") say nothing of what was being read: corrupt() does.
    const gunzip = createGunzip({ chunkSize: CHUNK });
    const output = new PassThrough({ highWaterMark: CHUNK });
    rest.on('error', (err) => output.destroy(err));
    gunzip.on('error', (err) => output.destroy(corrupt(`gzip data is corrupt or truncated: ${err.message}`)));
    output.once('close', () => {
      rest.destroy();
      gunzip.destroy();
    });
    return rest.pipe(gunzip).pipe(output);
  }
  return spawnDecompressor(rest, compression, corrupt);
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
        ? unprocessable(`the data is ${compression}-compressed, but the ${program.command} program is not installed on the server (Debian package ${program.package})`)
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
