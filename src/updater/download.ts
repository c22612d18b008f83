import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { request, type Dispatcher } from 'undici';
import { outboundDispatcher } from '../outbound/dispatcher.js';
import { USER_AGENT } from '../version.js';

/**
 * Conditional downloads of upstream feeds (http(s) and file://). What a previous run saw is kept
 * as validators: ETag and Last-Modified for conditional requests, and the content's SHA-256 for
 * servers (and files) that have neither, so an unchanged feed is never parsed again.
 */
export interface Validators {
  readonly etag?: string;
  readonly lastModified?: string;
  /** A local file's size and modification time: when both are as before, it is not read again. */
  readonly file?: string;
  readonly sha256: string;
}

export type DownloadResult =
  | { readonly status: 'unchanged' }
  | { readonly status: 'missing' }
  | { readonly status: 'downloaded'; readonly path: string; readonly temporary: boolean; readonly validators: Validators };

const MAX_REDIRECTS = 5;

export class Downloader {
  readonly #dir: string;
  readonly #timeoutMs: number;
  readonly #agent: Dispatcher;

  /** dir: where downloads go (removed by release()); timeoutMs: per request, headers to last byte. */
  constructor(dir: string, timeoutMs: number) {
    this.#dir = dir;
    this.#timeoutMs = timeoutMs;
    this.#agent = outboundDispatcher({
      connectTimeoutMs: timeoutMs,
      headersTimeoutMs: timeoutMs,
      bodyTimeoutMs: timeoutMs,
      maxRedirects: MAX_REDIRECTS,
    });
  }

  /** Downloads url unless it is unchanged since previous; a 404 (or a missing file) is 'missing'. */
  async download(url: string, previous?: Validators): Promise<DownloadResult> {
    if (url.startsWith('file:')) return this.#local(fileURLToPath(url), previous);
    const headers: Record<string, string> = { 'user-agent': USER_AGENT };
    if (previous?.etag) headers['if-none-match'] = previous.etag;
    if (previous?.lastModified) headers['if-modified-since'] = previous.lastModified;
    const res = await request(url, { dispatcher: this.#agent, headers, signal: AbortSignal.timeout(this.#timeoutMs) });
    if (res.statusCode === 304) {
      await res.body.dump();
      return { status: 'unchanged' };
    }
    if (res.statusCode === 404) {
      await res.body.dump();
      return { status: 'missing' };
    }
    if (res.statusCode < 200 || res.statusCode > 299) {
      await res.body.dump();
      throw new Error(`GET ${url} answered ${res.statusCode}`);
    }
    const path = join(this.#dir, `download-${randomBytes(8).toString('hex')}`);
    const hash = createHash('sha256');
    await pipeline(
      res.body,
      new Transform({
        transform(chunk: Buffer, _encoding, done) {
          hash.update(chunk);
          done(null, chunk);
        },
      }),
      createWriteStream(path),
    );
    const sha256 = hash.digest('hex');
    if (previous && previous.sha256 === sha256) {
      await rm(path, { force: true });
      return { status: 'unchanged' };
    }
    const header = (name: string) => {
      const value = res.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const etag = header('etag');
    const lastModified = header('last-modified');
    return {
      status: 'downloaded',
      path,
      temporary: true,
      validators: { sha256, ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) },
    };
  }

  /** A small text document (an index, a mirror list). A local directory reads as a listing of links. */
  async text(url: string): Promise<string> {
    if (url.startsWith('file:')) {
      const path = fileURLToPath(url);
      if ((await stat(path)).isDirectory()) {
        const entries = await readdir(path, { withFileTypes: true });
        return entries.map((e) => `<a href="${e.name}${e.isDirectory() ? '/' : ''}">${e.name}</a>`).join('\n');
      }
      return readFile(path, 'utf8');
    }
    const res = await request(url, {
      dispatcher: this.#agent,
      headers: { 'user-agent': USER_AGENT },
      signal: AbortSignal.timeout(this.#timeoutMs),
    });
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`GET ${url} answered ${res.statusCode}`);
    return text;
  }

  async #local(path: string, previous?: Validators): Promise<DownloadResult> {
    try {
      // Hashing a 60 MB feed took most of an unchanged run: size and mtime answer first, as
      // Last-Modified does over HTTP.
      const info = await stat(path);
      if (info.isDirectory()) return await this.#localDirectory(path, previous);
      const file = `${info.size} ${info.mtimeMs}`;
      if (previous?.file === file) return { status: 'unchanged' };
      const hash = createHash('sha256');
      await pipeline(createReadStream(path), hash);
      const sha256 = hash.digest('hex');
      if (previous && previous.sha256 === sha256) return { status: 'unchanged' };
      return { status: 'downloaded', path, temporary: false, validators: { sha256, file } };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { status: 'missing' };
      throw err;
    }
  }

  /**
   * A local directory (a mirror of records, one file each): changed when any file's path, size or
   * modification time is, as a file's size and mtime answer for it.
   */
  async #localDirectory(path: string, previous?: Validators): Promise<DownloadResult> {
    const files: string[] = [];
    for (const entry of await readdir(path, { withFileTypes: true, recursive: true })) {
      if (!entry.isFile()) continue;
      const at = join(entry.parentPath, entry.name);
      const { size, mtimeMs } = await stat(at);
      files.push(`${relative(path, at)}\0${size}\0${mtimeMs}`);
    }
    const sha256 = createHash('sha256').update(files.sort().join('\n')).digest('hex');
    const file = `tree ${sha256}`;
    if (previous?.file === file) return { status: 'unchanged' };
    return { status: 'downloaded', path, temporary: false, validators: { sha256, file } };
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}
