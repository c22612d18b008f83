// Opens a layer location (http(s) URL, file:// URL or absolute path) as a byte stream, with the
// limits a server that downloads URLs chosen by its clients needs: a whole-download timeout, a
// byte cap, local files only under configured roots, and an optional guard against private
// addresses (src/outbound/address-policy.ts). Messages never contain credentials: URLs are shown without userinfo and query
// (presigned blob URLs carry tokens there), and header values are never echoed.

import type { lookup as dnsLookup } from 'node:dns';
import { constants as fsConstants, createReadStream } from 'node:fs';
import { open, realpath, type FileHandle } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { addAbortSignal, Transform, type Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Dispatcher } from 'undici';
import { readsFile } from '../decompress.js';
import { badRequest, TarsierError, unprocessable } from '../errors.js';
import { RefusedAddressError, type Refusal } from '../outbound/address-policy.js';
import { USER_AGENT } from '../version.js';

export interface FetchSettings {
  /** Absolute directories local-file layers may be read from; empty: local files are refused. */
  readonly localRoots: readonly string[];
  /** The whole download, headers to last byte. */
  readonly downloadTimeoutMs: number;
  /** Compressed bytes read from the location. */
  readonly maxLayerBytes: number;
  /** A layer upload that sends no byte for this long while it is being read is cut (request_timeout); unset: never. */
  readonly uploadIdleTimeoutMs?: number;
  /** Refuse http(s) targets that resolve to private or loopback addresses (link-local ones always are). */
  readonly denyPrivate: boolean;
  /** Networks (CIDRs) downloads may reach even when the address rules would refuse them. */
  readonly allowNetworks?: readonly string[];
  /** Default 5. */
  readonly maxRedirects?: number;
  /** @internal Name resolution, replaceable so tests can point names at local servers. */
  readonly lookup?: typeof dnsLookup;
}

export interface OpenedLayer {
  /** The bytes, limited to maxLayerBytes (more errors the stream with a 422 TarsierError). */
  readonly stream: Readable;
  /** A description safe for logs and messages (no userinfo, no query). */
  readonly location: string;
}

const DEFAULT_MAX_REDIRECTS = 5;
const FILE_HIGH_WATER_MARK = 1024 * 1024;
const SCHEME_RE = /^([a-z][a-z0-9+.-]*):/i;

/** Opens `path` for reading. `headers` go with an http(s) GET (they carry Authorization). */
export async function openLayer(
  path: string,
  headers: Readonly<Record<string, string>>,
  settings: FetchSettings,
  signal?: AbortSignal,
): Promise<OpenedLayer> {
  signal?.throwIfAborted();
  const scheme = SCHEME_RE.exec(path)?.[1]?.toLowerCase();
  if (scheme === 'http' || scheme === 'https') return openHttp(path, headers, settings, signal);
  if (scheme === 'file') return openLocal(fileUrlToPath(path), settings, signal);
  if (scheme === undefined) return openLocal(path, settings, signal);
  throw badRequest(
    `layer locations with the scheme "${scheme}:" are not supported: use an http:// or https:// URL, ` +
      'or a file:// URL or absolute path under clair.api.localroots',
  );
}

/**
 * A layer a client sends in its request body, under the same byte limit as a download; signal (the
 * client went away, or the download timeout) ends it, and so does a client that stalls for
 * uploadIdleTimeoutMs. The body itself is left to the HTTP server: it closes the connection once
 * the answer (Connection: close) is sent, where destroying it here would take the answer with it.
 */
export function readUpload(body: Readable, settings: FetchSettings, signal?: AbortSignal): Readable {
  const stream = capBytes(body, settings.maxLayerBytes, (err) =>
    err instanceof TarsierError ? err : badRequest(`the layer upload failed: ${(err as Error).message}`, err),
  );
  if (settings.uploadIdleTimeoutMs !== undefined) cutWhenStalled(body, stream, settings.uploadIdleTimeoutMs);
  if (signal) addAbortSignal(signal, stream);
  return stream;
}

/**
 * Ends an upload whose client has stalled: no byte for idleMs while the reader waited for one. A
 * large layer may take long; bytes received and not read yet (the scan is the slower side) are
 * progress, not a stall.
 */
function cutWhenStalled(body: Readable, counted: Transform, idleMs: number): void {
  const check = (): void => {
    if (body.readableLength > 0 || counted.writableLength > 0) {
      timer.refresh();
      return;
    }
    counted.destroy(
      new TarsierError('request_timeout', `the layer upload sent no bytes for ${idleMs / 1000} s (clair.api.uploadidletimeout)`),
    );
  };
  const timer = setTimeout(check, idleMs);
  const progress = (): void => void timer.refresh();
  const stop = (): void => {
    clearTimeout(timer);
    body.off('data', progress);
  };
  body.on('data', progress).once('end', stop);
  counted.once('close', stop);
}

/** `path` without userinfo, query or fragment: safe to show in messages and logs. */
export function redactLocation(path: string): string {
  if (!SCHEME_RE.test(path)) return path;
  try {
    const url = new URL(path);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.href;
  } catch {
    // Not a parseable URL: cut what could be userinfo, query or fragment by hand.
    return path.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1').replace(/[?#].*$/s, '');
  }
}

// ---------------------------------------------------------------------------------------------
// http(s)

async function openHttp(
  path: string,
  headers: Readonly<Record<string, string>>,
  settings: FetchSettings,
  signal: AbortSignal | undefined,
): Promise<OpenedLayer> {
  const url = parseHttpUrl(path);
  const location = redactLocation(url.href);
  const timeout = AbortSignal.timeout(settings.downloadTimeoutMs);
  const failure = (err: unknown): Error => downloadFailure(err, { location, settings, timeout, signal });
  const [dispatcher, { request }] = await Promise.all([createDispatcher(settings), import('undici')]);
  const release = (): void => void dispatcher.destroy().catch(() => undefined);

  let response: Dispatcher.ResponseData;
  try {
    response = await request(withoutCredentials(url), {
      method: 'GET',
      headers: requestHeaders(url, headers),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      dispatcher,
    });
  } catch (err) {
    release();
    throw failure(err);
  }
  try {
    checkResponse(response, location, settings);
  } catch (err) {
    // Destroying an unread undici body emits an AbortError; nobody reads it any more.
    response.body.on('error', () => undefined).destroy();
    release();
    throw err;
  }
  const stream = limitBytes(response.body, settings.maxLayerBytes, failure);
  stream.once('close', release);
  if (signal) addAbortSignal(signal, stream);
  return { stream, location };
}

function parseHttpUrl(path: string): URL {
  try {
    return new URL(path);
  } catch {
    throw badRequest(`layer location ${redactLocation(path)} is not a valid URL: check the layer Path`);
  }
}

/**
 * One Agent per download: its sockets die with the stream (no idle connection outlives the layer),
 * and its connector carries the address guard, which must see every hop of a redirect. The
 * registry client uses the same for manifests and tokens: a registry host is chosen by clients too.
 * The HTTP client is loaded here, at the first download: reading a local or uploaded layer (a
 * standalone scan of an archive) needs none, and loading it was a third of such a scan's start-up.
 */
export async function createDispatcher(settings: FetchSettings): Promise<Dispatcher> {
  const { outboundDispatcher } = await import('../outbound/dispatcher.js');
  const timeoutMs = settings.downloadTimeoutMs;
  return outboundDispatcher({
    connectTimeoutMs: timeoutMs,
    headersTimeoutMs: timeoutMs,
    bodyTimeoutMs: timeoutMs,
    maxRedirects: settings.maxRedirects ?? DEFAULT_MAX_REDIRECTS,
    addresses: { denyPrivate: settings.denyPrivate, allowNetworks: settings.allowNetworks, lookup: settings.lookup },
  });
}

/** The URL undici is given: credentials travel as a header (see requestHeaders), not in the URL. */
function withoutCredentials(url: URL): string {
  const bare = new URL(url.href);
  bare.username = '';
  bare.password = '';
  bare.hash = '';
  return bare.href;
}

/**
 * Headers that describe one connection, not the download: the HTTP client sets them itself.
 * Harbor sends `Connection: close` with every layer; undici refuses these as request headers.
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'upgrade',
  'host',
  'content-length',
  'expect',
  'trailer',
]);

/**
 * The client's headers with lower-cased names (last one wins, like Go's Header.Set in Clair),
 * without hop-by-hop headers and without empty values (klar sends `"Authorization": ""` for
 * anonymous pulls; an empty credential is no credential). Userinfo in the URL becomes Basic
 * authentication, as Go's client did, unless an Authorization header was given.
 */
function requestHeaders(url: URL, headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = { 'user-agent': USER_AGENT };
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (HOP_BY_HOP.has(key)) continue;
    if (value.trim() === '') delete out[key];
    else out[key] = value;
  }
  if ((url.username !== '' || url.password !== '') && out.authorization === undefined) {
    const userinfo = `${decodeUserinfo(url.username)}:${decodeUserinfo(url.password)}`;
    out.authorization = `Basic ${Buffer.from(userinfo).toString('base64')}`;
  }
  return out;
}

/** Percent-decoded userinfo; a malformed escape ("%zz") is sent as written rather than crash. */
function decodeUserinfo(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** Throws when the final answer is not a usable 2xx, before any of the body is read. */
function checkResponse(response: Dispatcher.ResponseData, location: string, settings: FetchSettings): void {
  const { statusCode, headers } = response;
  if (statusCode >= 300 && statusCode < 400 && headers.location !== undefined) {
    const max = settings.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    throw badRequest(`could not download the layer: ${location} redirected more than ${max} times`);
  }
  if (statusCode < 200 || statusCode >= 300) {
    throw badRequest(`could not download the layer: ${location} answered ${statusCode}${statusHint(statusCode)}`);
  }
  const announced = Number(headers['content-length']);
  if (Number.isFinite(announced) && announced > settings.maxLayerBytes) throw tooLarge(settings.maxLayerBytes);
}

function statusHint(statusCode: number): string {
  if (statusCode === 401 || statusCode === 403) return ': check the Authorization/Headers of the request';
  if (statusCode === 404) return ': check the layer Path';
  return '';
}

interface FailureContext {
  readonly location: string;
  readonly settings: FetchSettings;
  readonly timeout: AbortSignal;
  readonly signal: AbortSignal | undefined;
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/** Turns whatever the download threw into the error the caller sees. */
function downloadFailure(err: unknown, { location, settings, timeout, signal }: FailureContext): Error {
  if (err instanceof TarsierError) return err;
  // The caller gave up (its client went away): nobody reads a message, keep its reason.
  if (signal?.aborted) return signal.reason instanceof Error ? signal.reason : new Error('the download was aborted');
  if (timeout.aborted || TIMEOUT_CODES.has(errorCode(err) ?? '')) {
    return badRequest(
      `could not download the layer: ${location} did not finish within clair.indexer.downloadtimeout ` +
        `(${formatMs(settings.downloadTimeoutMs)})`,
      err,
    );
  }
  if (err instanceof RefusedAddressError) {
    return badRequest(`could not download the layer: ${location}: ${err.address} ${REFUSAL_REASONS[err.refusal]}`, err);
  }
  if (err instanceof Error && /redirect loop/i.test(err.message)) {
    return badRequest(`could not download the layer: ${location} redirects in a loop: check the layer Path`, err);
  }
  return badRequest(`could not download the layer: ${location}: ${networkReason(err)}`, err);
}

const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed, try again',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed by the server',
};

/** Why a connection failed, for a message: a refused address or a network reason. */
export function connectionFailureReason(err: unknown): string {
  if (err instanceof RefusedAddressError) return `${err.address} ${REFUSAL_REASONS[err.refusal]}`;
  return networkReason(err);
}

/** A short reason a person can act on; any URL inside an error text is redacted. */
function networkReason(err: unknown): string {
  const code = errorCode(err);
  if (code !== undefined && REASONS[code] !== undefined) return REASONS[code];
  const message = err instanceof Error ? err.message : String(err);
  const reason = code !== undefined && /CERT|TLS|SSL|SELF_SIGNED|UNABLE_TO/.test(code) ? `TLS failure: ${message}` : message;
  return reason.replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, (url) => redactLocation(url));
}

/** The Node/undici error code of err or of its cause (undici wraps socket errors). */
function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** Go-style duration, matching how clair.indexer.downloadtimeout is written ("15m", "300ms"). */
function formatMs(ms: number): string {
  if (ms % 1000 !== 0) return `${ms}ms`;
  const units: Array<[string, number]> = [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  let rest = ms;
  let text = '';
  for (const [unit, size] of units) {
    const count = Math.floor(rest / size);
    if (count > 0) text += `${count}${unit}`;
    rest -= count * size;
  }
  return text || '0s';
}

// ---------------------------------------------------------------------------------------------
// Refused addresses

const REFUSAL_REASONS: Readonly<Record<Refusal, string>> = {
  'link-local':
    'is a link-local or cloud metadata address, which layer downloads never reach: ' +
    'list its network in clair.indexer.allownetworks if a layer really is served there',
  private:
    'is a private, loopback or link-local address and clair.indexer.denyprivate is on: serve the layer from a public address, ' +
    'list its network in clair.indexer.allownetworks, or turn clair.indexer.denyprivate off',
  'not-an-address': 'is not an IP address',
};

// ---------------------------------------------------------------------------------------------
// Local files

const REFUSED_LOCAL = 'local layer paths are refused: add the directory to clair.api.localroots to allow them';

function fileUrlToPath(path: string): string {
  try {
    return fileURLToPath(path);
  } catch {
    throw badRequest(`layer location ${redactLocation(path)} is not a local file URL: use file:///absolute/path`);
  }
}

async function openLocal(path: string, settings: FetchSettings, signal: AbortSignal | undefined): Promise<OpenedLayer> {
  if (settings.localRoots.length === 0) throw badRequest(REFUSED_LOCAL);
  if (!isAbsolute(path)) {
    throw badRequest(`local layer path ${path} is relative: give an absolute path under clair.api.localroots`);
  }
  const real = await resolveInsideRoots(path, settings.localRoots);
  const { handle, size } = await openRegularFile(real, path);
  if (size > settings.maxLayerBytes) {
    await handle.close();
    throw tooLarge(settings.maxLayerBytes);
  }
  // start: 0 makes the reads positional, so a decompressor program given the same descriptor
  // (readsFile) reads the file from its start whatever this stream has read.
  const file = createReadStream(real, { fd: handle, start: 0, highWaterMark: FILE_HIGH_WATER_MARK });
  const stream = limitBytes(file, settings.maxLayerBytes, (err) =>
    badRequest(`could not read the layer: ${path}: ${err instanceof Error ? err.message : String(err)}`, err),
  );
  if (signal) addAbortSignal(signal, stream);
  return { stream: readsFile(stream, handle), location: path };
}

/**
 * The real path of `path` (symlinks resolved, so none can lead out), when it is inside a real
 * root. A missing file is reported as missing only when its path lies inside a root, so the API
 * cannot be used to probe which files exist elsewhere on the host.
 */
async function resolveInsideRoots(path: string, localRoots: readonly string[]): Promise<string> {
  const roots = await Promise.all(localRoots.map(realRoot));
  const outside = badRequest(`local layer path ${path} is outside clair.api.localroots: move the layer under one of them`);
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    if (!isInsideAny(resolve(path), [...localRoots, ...roots])) throw outside;
    if (errorCode(err) === 'ENOENT') throw badRequest(`could not open the layer: ${path} does not exist`);
    throw badRequest(`could not open the layer: ${path}: ${errorCode(err) ?? String(err)}`, err);
  }
  if (!isInsideAny(real, roots)) throw outside;
  return real;
}

/** A root's real path; a root that does not exist (yet) is kept as written. */
async function realRoot(root: string): Promise<string> {
  try {
    return await realpath(root);
  } catch {
    return resolve(root);
  }
}

function isInsideAny(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => {
    const rel = relative(root, path);
    return rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
  });
}

/**
 * Opens a regular file for reading. O_NONBLOCK: opening a FIFO must not hang the request.
 * O_NOFOLLOW: the path was just resolved, a symlink swapped in since is refused.
 */
async function openRegularFile(real: string, shown: string): Promise<{ handle: FileHandle; size: number }> {
  let handle: FileHandle;
  try {
    handle = await open(real, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (err) {
    throw badRequest(`could not open the layer: ${shown}: ${errorCode(err) ?? String(err)}`, err);
  }
  const stats = await handle.stat().catch(async (err: unknown) => {
    await handle.close();
    throw badRequest(`could not open the layer: ${shown}: ${errorCode(err) ?? String(err)}`, err);
  });
  if (!stats.isFile()) {
    await handle.close();
    throw badRequest(`could not open the layer: ${shown} is not a regular file: give the path of the layer archive`);
  }
  return { handle, size: stats.size };
}

// ---------------------------------------------------------------------------------------------
// Byte limit

function tooLarge(maxBytes: number): TarsierError {
  return unprocessable(`layer is larger than clair.indexer.maxlayerbytes (${maxBytes} bytes)`);
}

/**
 * `source` as a stream that errors with a 422 once more than `maxBytes` have passed. Errors of
 * the source go through `translate`; destroying the result (limit, abort, consumer) destroys the
 * source, which closes its socket or file descriptor.
 */
function limitBytes(source: Readable, maxBytes: number, translate: (err: unknown) => Error): Readable {
  const limited = capBytes(source, maxBytes, translate);
  limited.once('close', () => source.destroy());
  return limited;
}

/** source's bytes, at most maxBytes; source's errors become translate's. */
function capBytes(source: Readable, maxBytes: number, translate: (err: unknown) => Error): Transform {
  let seen = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > maxBytes) callback(tooLarge(maxBytes));
      else callback(null, chunk);
    },
  });
  // `on`, not `once`: a source destroyed by us may still emit an error, which must not go unheard.
  source.on('error', (err) => limited.destroy(translate(err)));
  return source.pipe(limited);
}
