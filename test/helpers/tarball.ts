import { execFileSync } from 'node:child_process';
import { gzipSync } from 'node:zlib';

/**
 * Builds tar archives in memory, entry by entry, so tests can make exactly the layers they need,
 * including ones no well-behaved tool would write (absolute paths, `..`, lying sizes).
 */
export type TarEntry =
  | { path: string; content: string | Buffer; mode?: number }
  | { path: string; type: 'dir' }
  | { path: string; type: 'symlink' | 'hardlink'; target: string }
  /** A regular file header that claims size bytes; the body written is content (may be shorter). */
  | { path: string; type: 'raw'; size: number; content: Buffer };

const BLOCK = 512;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

/** A PAX extended header carrying a path too long for the ustar fields (as GNU tar and Go write). */
function paxPath(path: string): Buffer {
  const record = (len: number) => `${len} path=${path}\n`;
  let length = Buffer.byteLength(record(0));
  while (Buffer.byteLength(record(length)) !== length) length = Buffer.byteLength(record(length));
  const body = Buffer.from(record(length));
  return Buffer.concat([ustarHeader('PaxHeader', 'x', body.length), padded(body)]);
}

function header(path: string, typeflag: string, size: number, linkpath = '', mode = 0o644): Buffer {
  const cut = path.lastIndexOf('/', 155);
  const fits = Buffer.byteLength(path) <= 100 || (cut > 0 && cut <= 155 && Buffer.byteLength(path) - cut - 1 <= 100);
  if (!fits) return Buffer.concat([paxPath(path), ustarHeader(path.slice(-100), typeflag, size, linkpath, mode)]);
  return ustarHeader(path, typeflag, size, linkpath, mode);
}

function ustarHeader(path: string, typeflag: string, size: number, linkpath = '', mode = 0o644): Buffer {
  const h = Buffer.alloc(BLOCK);
  let name = path;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = path.lastIndexOf('/', 155);
    prefix = path.slice(0, cut);
    name = path.slice(cut + 1);
  }
  h.write(name, 0, 100, 'utf8');
  h.write(octal(mode, 8), 100, 'latin1');
  h.write(octal(0, 8), 108, 'latin1');
  h.write(octal(0, 8), 116, 'latin1');
  h.write(octal(size, 12), 124, 'latin1');
  h.write(octal(1_700_000_000, 12), 136, 'latin1');
  h.write('        ', 148, 'latin1');
  h.write(typeflag, 156, 'latin1');
  h.write(linkpath, 157, 100, 'utf8');
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(octal(sum, 7) + ' ', 148, 'latin1');
  return h;
}

function padded(body: Buffer): Buffer {
  const rest = body.length % BLOCK;
  return rest === 0 ? body : Buffer.concat([body, Buffer.alloc(BLOCK - rest)]);
}

/** A tar archive of entries; eof: false leaves out the end-of-archive blocks. */
export function tarball(entries: readonly TarEntry[], options: { eof?: boolean } = {}): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if ('type' in e && e.type === 'dir') parts.push(header(e.path, '5', 0, '', 0o755));
    else if ('type' in e && e.type === 'symlink') parts.push(header(e.path, '2', 0, e.target, 0o777));
    else if ('type' in e && e.type === 'hardlink') parts.push(header(e.path, '1', 0, e.target));
    else if ('type' in e && e.type === 'raw') parts.push(header(e.path, '0', e.size), padded(e.content));
    else {
      const body = Buffer.from((e as { content: string | Buffer }).content);
      parts.push(header(e.path, '0', body.length, '', (e as { mode?: number }).mode), padded(body));
    }
  }
  if (options.eof !== false) parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}

export const gzip = (tar: Buffer): Buffer => gzipSync(tar);

/** Compresses with a system program (zstd, bzip2, xz), as registries' tools do. */
export function compressWith(program: 'zstd' | 'bzip2' | 'xz', data: Buffer): Buffer {
  return execFileSync(program, ['-c'], { input: data, maxBuffer: 1 << 30 });
}
