import { createReadStream } from 'node:fs';
import { mkdtemp, open, readFile, realpath, rm, stat, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Header, Pax, x as extractTar, type HeaderData } from 'tar';
import { decompressed, sniffCompression } from '../decompress.js';
import { unprocessable } from '../errors.js';
import { normalizeEntryPath, resolveLinkTarget } from '../indexer/archive.js';

/**
 * The files of a local image — a `docker save` archive, an OCI image layout directory, or either
 * written to a tar — by name, without unpacking: a plain tar is indexed once by walking its headers
 * (a docker save archive holds a few dozen entries), and each layer is then read straight from its
 * byte range. A compressed archive (`docker save | gzip`) cannot be read in place; it is unpacked
 * into a temporary directory first.
 */
export interface ImageFiles {
  /** A small file (manifest, config, index) read whole; undefined when missing. */
  read(name: string): Promise<Buffer | undefined>;
  /** A file to stream (a layer): its size and a stream of its bytes; undefined when missing. */
  open(name: string): Promise<{ size: number; stream(): Readable } | undefined>;
  close(): Promise<void>;
}

/** The largest metadata file (manifest.json, index.json, a manifest or config) read whole. */
const MAX_METADATA_BYTES = 8 * 1024 * 1024;
const BLOCK = 512;
/** How many links are followed from one name before giving up (a symlink loop). */
const MAX_LINKS = 16;

export class ImageArchiveError extends Error {}

/** The files at path: a directory, a plain tar, or a compressed tar (unpacked into a temporary directory). */
export async function openImageFiles(path: string): Promise<ImageFiles> {
  const info = await stat(path).catch((err: NodeJS.ErrnoException) => {
    throw new ImageArchiveError(err.code === 'ENOENT' ? `${path} does not exist` : `${path}: ${err.message}`);
  });
  if (info.isDirectory()) return new DirectoryFiles(path);
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(6);
    await file.read(head, 0, head.length, 0);
    if (sniffCompression(head) === 'none') return await TarFiles.index(file, path);
  } catch (err) {
    await file.close();
    throw err;
  }
  await file.close();
  return unpackCompressed(path);
}

/** A name inside the image as a relative POSIX path ("./manifest.json" and "manifest.json" alike), as layers' names are read; undefined for the root or a name leaving it. */
const normalized = (name: string): string | undefined => normalizeEntryPath(name) || undefined;

class DirectoryFiles implements ImageFiles {
  readonly #root: string;
  readonly #cleanup: (() => Promise<void>) | undefined;

  constructor(root: string, cleanup?: () => Promise<void>) {
    this.#root = root;
    this.#cleanup = cleanup;
  }

  /** The file's real path when it is a regular file inside the root (symlinks may not lead out of it). */
  async #resolve(name: string): Promise<string | undefined> {
    const path = normalized(name);
    if (path === undefined) return undefined;
    try {
      const [root, real] = await Promise.all([realpath(this.#root), realpath(join(this.#root, ...path.split('/')))]);
      const inside = relative(root, real);
      if (inside === '' || inside.startsWith('..') || inside.startsWith(sep)) return undefined;
      return (await stat(real)).isFile() ? real : undefined;
    } catch {
      return undefined;
    }
  }

  async read(name: string): Promise<Buffer | undefined> {
    const real = await this.#resolve(name);
    if (real === undefined) return undefined;
    if ((await stat(real)).size > MAX_METADATA_BYTES) throw new ImageArchiveError(`${name} is larger than ${MAX_METADATA_BYTES} bytes`);
    return readFile(real);
  }

  async open(name: string): Promise<{ size: number; stream(): Readable } | undefined> {
    const real = await this.#resolve(name);
    if (real === undefined) return undefined;
    const { size } = await stat(real);
    return { size, stream: () => createReadStream(real, { highWaterMark: 256 * 1024 }) };
  }

  async close(): Promise<void> {
    await this.#cleanup?.();
  }
}

interface TarEntry {
  /** Where the entry's content starts in the archive. */
  offset: number;
  size: number;
  /** For a symbolic or hard link: the name it points at (resolved from the archive root). */
  link?: string;
}

class TarFiles implements ImageFiles {
  readonly #file: FileHandle;
  readonly #path: string;
  readonly #entries: Map<string, TarEntry>;

  private constructor(file: FileHandle, path: string, entries: Map<string, TarEntry>) {
    this.#file = file;
    this.#path = path;
    this.#entries = entries;
  }

  /** Walks the archive's headers once (pax and GNU long names included), skipping contents. */
  static async index(file: FileHandle, path: string): Promise<TarFiles> {
    const entries = new Map<string, TarEntry>();
    const { size: archiveSize } = await file.stat();
    const block = Buffer.alloc(BLOCK);
    let position = 0;
    let extended: HeaderData | undefined;
    let global: HeaderData | undefined;
    let longName: string | undefined;
    let longLink: string | undefined;
    const content = async (offset: number, size: number): Promise<string> => {
      if (size > MAX_METADATA_BYTES) throw new ImageArchiveError(`${path}: a tar header extension is too large`);
      const buffer = Buffer.alloc(size);
      await file.read(buffer, 0, size, offset);
      return buffer.toString('utf8');
    };
    for (;;) {
      const { bytesRead } = await file.read(block, 0, BLOCK, position);
      if (bytesRead < BLOCK) {
        if (position === archiveSize && entries.size > 0) break; // no end-of-archive blocks: accepted as GNU tar does
        throw new ImageArchiveError(`${path} is not a tar archive, or is truncated`);
      }
      if (block.every((b) => b === 0)) break;
      const header = new Header(block, 0, extended, global);
      if (!header.cksumValid) throw new ImageArchiveError(`${path} is not a tar archive (bad header at byte ${position})`);
      const size = header.size ?? 0;
      const offset = position + BLOCK;
      position = offset + Math.ceil(size / BLOCK) * BLOCK;
      if (position > archiveSize) throw new ImageArchiveError(`${path} is truncated`);
      switch (header.type) {
        case 'ExtendedHeader':
        case 'OldExtendedHeader':
          extended = Pax.parse(await content(offset, size), extended, false);
          continue;
        case 'GlobalExtendedHeader':
          global = Pax.parse(await content(offset, size), global, true);
          continue;
        case 'NextFileHasLongPath':
        case 'OldGnuLongPath':
          longName = (await content(offset, size)).replace(/\0.*$/s, '');
          continue;
        case 'NextFileHasLongLinkpath':
          longLink = (await content(offset, size)).replace(/\0.*$/s, '');
          continue;
      }
      const name = normalized(longName ?? header.path ?? '');
      const linkTarget = longLink ?? header.linkpath;
      extended = undefined;
      longName = undefined;
      longLink = undefined;
      if (name === undefined) continue;
      if (header.type === 'File' || header.type === 'OldFile' || header.type === 'ContiguousFile') {
        entries.set(name, { offset, size });
      } else if (header.type === 'SymbolicLink' && linkTarget) {
        // docker save links a layer that appears twice to its first copy: "../<id>/layer.tar".
        const target = normalized(resolveLinkTarget(name, linkTarget));
        if (target !== undefined) entries.set(name, { offset: 0, size: 0, link: target });
      } else if (header.type === 'Link' && linkTarget) {
        const target = normalized(linkTarget);
        if (target !== undefined) entries.set(name, { offset: 0, size: 0, link: target });
      }
    }
    return new TarFiles(file, path, entries);
  }

  #entry(name: string): TarEntry | undefined {
    let path = normalized(name);
    for (let hops = 0; path !== undefined && hops <= MAX_LINKS; hops++) {
      const entry = this.#entries.get(path);
      if (!entry?.link) return entry;
      path = entry.link;
    }
    return undefined;
  }

  async read(name: string): Promise<Buffer | undefined> {
    const entry = this.#entry(name);
    if (!entry) return undefined;
    if (entry.size > MAX_METADATA_BYTES) throw new ImageArchiveError(`${name} is larger than ${MAX_METADATA_BYTES} bytes`);
    const buffer = Buffer.alloc(entry.size);
    await this.#file.read(buffer, 0, entry.size, entry.offset);
    return buffer;
  }

  async open(name: string): Promise<{ size: number; stream(): Readable } | undefined> {
    const entry = this.#entry(name);
    if (!entry) return undefined;
    const { offset, size } = entry;
    return {
      size,
      // A stream of its own per read (end is inclusive; an empty entry reads nothing).
      stream: () => createReadStream(this.#path, { start: offset, end: offset + size - 1, highWaterMark: 256 * 1024 }),
    };
  }

  async close(): Promise<void> {
    await this.#file.close();
  }
}

/** A compressed archive unpacked into a temporary directory, removed on close. */
async function unpackCompressed(path: string): Promise<ImageFiles> {
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-scan-'));
  const cleanup = () => rm(dir, { recursive: true, force: true });
  try {
    const tarStream = await decompressed(createReadStream(path), (detail) => unprocessable(`${path} is corrupt: ${detail}`));
    // node-tar keeps entries inside dir (preservePaths: false); DirectoryFiles follows only links that stay inside it.
    await pipeline(tarStream, extractTar({ cwd: dir, strict: true, preservePaths: false }));
  } catch (err) {
    await cleanup();
    throw new ImageArchiveError(`${path} could not be unpacked: ${(err as Error).message}`);
  }
  return new DirectoryFiles(dir, cleanup);
}
