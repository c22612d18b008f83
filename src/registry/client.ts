// A Docker Registry HTTP API v2 client for what a scanner needs: manifests by tag or digest, and
// the address and credentials of each layer blob (the indexer downloads blobs itself, with its
// limits, and verifies their digests). Authentication as Docker's own client does it: the request
// goes out with what the session holds, and a 401's WWW-Authenticate challenge says what to do
// next — fetch a Bearer token from the realm it names (with Basic credentials when configured), or
// send Basic credentials.

import { createHash } from 'node:crypto';
import { request, type Dispatcher } from 'undici';
import { TarsierError } from '../errors.js';
import { connectionFailureReason, createDispatcher, type FetchSettings } from '../indexer/fetch.js';
import { USER_AGENT } from '../version.js';
import { MANIFEST_ACCEPT, parseManifest, type Descriptor, type ImageIndex, type ImageManifest } from './manifest.js';
import { isDigest, registryApiHost, type ImageReference } from './reference.js';

/** Credentials and transport for one registry host (config `clair.registries."host:port"`). */
export interface RegistryHostSettings {
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** A Bearer token sent as is (a registry's personal access token). */
  readonly token?: string | undefined;
  /** Plain HTTP instead of HTTPS; the only way credentials go to the registry without TLS. */
  readonly insecure: boolean;
}

/** What one request brings: credentials for this pull only, never stored (Harbor's scan request, the CI scanner). */
export interface RegistryAccess {
  /** A whole Authorization header value: `Basic …` (credentials) or `Bearer …` (a token for the registry). */
  readonly authorization?: string | undefined;
  /**
   * Plain HTTP for this pull (a request's `insecure: true`, a webhook's or Harbor's http: URL): without
   * credentials only, unless the host is configured insecure (see {@link RegistryClient.cleartextProblem}).
   */
  readonly insecure?: boolean | undefined;
}

export interface RegistryClientSettings {
  /** Timeouts, the address guard and redirects, shared with layer downloads. */
  readonly fetch: FetchSettings;
  /** The configured settings of a registry host (as written in references: `localhost:5000`, `docker.io`). */
  readonly hosts: (registry: string) => RegistryHostSettings | undefined;
  /**
   * A request's insecure counts as the host's configuration: for the CI scanner pulling by itself,
   * whose command line (--insecure) is its operator's own. Servers leave it off.
   */
  readonly requestsConfigure?: boolean;
}

/** Per-request settings. */
export interface RequestOptions {
  /** Instead of the indexer's download timeout: a lookup made while others wait for it. */
  readonly timeoutMs?: number | undefined;
}

export interface FetchedManifest {
  /** sha256 of the manifest's bytes: the image's (or index's) identity. */
  readonly digest: string;
  readonly mediaType: string;
  readonly manifest: ImageManifest | ImageIndex;
}

/** What the indexer needs to download a blob: its URL and the headers that authorize it. */
export interface BlobLocation {
  readonly path: string;
  readonly headers: Record<string, string>;
}

/**
 * A registry refused or failed a request. retryable: the registry or the network may do better
 * later (5xx, 429, connection failures); otherwise the request must change (a missing manifest,
 * refused credentials).
 */
export class RegistryError extends TarsierError {
  constructor(
    message: string,
    readonly retryable: boolean,
    cause?: unknown,
  ) {
    super('unprocessable', message, { cause });
    this.name = 'RegistryError';
  }
}

/**
 * The registry says it has no such manifest: a 404 whose error code is the distribution spec's
 * MANIFEST_UNKNOWN, or Harbor's NOT_FOUND. Nothing else counts (a bare 404, NAME_UNKNOWN: some
 * registries hide what a client may not read behind those), so a misconfigured credential never
 * makes an image look deleted.
 */
export class ManifestUnknown extends RegistryError {
  constructor(message: string) {
    super(message, false);
    this.name = 'ManifestUnknown';
  }
}

/** Error codes with which registries say a manifest (by tag or digest) does not exist. */
const MANIFEST_UNKNOWN_CODES = new Set(['MANIFEST_UNKNOWN', 'NOT_FOUND']);
/** An error body is read this far, for its code. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** The distribution spec lets registries refuse manifests over 4 MiB; nothing larger is read. */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
const MAX_TOKEN_RESPONSE_BYTES = 1024 * 1024;
/** The token lifetime the token spec says to assume when the response gives none. */
const DEFAULT_TOKEN_SECONDS = 60;
/** A token this close to expiry is renewed before a blob download starts with it. */
const TOKEN_RENEW_MARGIN_MS = 30_000;

type Credentials = { kind: 'basic'; username: string; password: string } | { kind: 'bearer'; token: string } | { kind: 'none' };

interface BearerChallenge {
  realm: string;
  service?: string | undefined;
}

export class RegistryClient {
  readonly #settings: RegistryClientSettings;

  constructor(settings: RegistryClientSettings) {
    this.#settings = settings;
  }

  /**
   * Why this pull may not happen as asked, or undefined when it may: credentials (configured, or
   * given with the request) travel only over TLS unless the configuration marks the host insecure,
   * so a request, a webhook or a Harbor call asking for plain HTTP cannot have them sent in clear.
   * Throws a RegistryError for an authorization that is neither Basic nor Bearer.
   */
  cleartextProblem(registry: string, access: RegistryAccess = {}): string | undefined {
    return cleartextProblem(registry, access, this.#plan(registry, access));
  }

  /** A session for one repository: it keeps the token the registry hands out for it. */
  repository(reference: Pick<ImageReference, 'registry' | 'repository'>, access: RegistryAccess = {}): RegistryRepository {
    const plan = this.#plan(reference.registry, access);
    const problem = cleartextProblem(reference.registry, access, plan);
    if (problem) throw new RegistryError(problem, false);
    const { credentials, insecure, insecureAllowed } = plan;
    return new RegistryRepository({
      baseUrl: `${insecure ? 'http' : 'https'}://${registryApiHost(reference.registry)}`,
      registry: reference.registry,
      repository: reference.repository,
      credentials,
      insecureAllowed,
      fetch: this.#settings.fetch,
    });
  }

  /** The credentials of a pull, whether it goes over plain HTTP, and whether credentials may. */
  #plan(registry: string, access: RegistryAccess): PullPlan {
    const host = this.#settings.hosts(registry);
    const insecure = access.insecure ?? host?.insecure ?? false;
    const insecureAllowed = (host?.insecure ?? false) || (this.#settings.requestsConfigure === true && insecure);
    return { credentials: credentialsFrom(access, host), insecure, insecureAllowed };
  }
}

interface PullPlan {
  credentials: Credentials;
  /** Plain HTTP. */
  insecure: boolean;
  /** Credentials may go over plain HTTP. */
  insecureAllowed: boolean;
}

function cleartextProblem(registry: string, access: RegistryAccess, plan: PullPlan): string | undefined {
  if (!plan.insecure || plan.insecureAllowed || plan.credentials.kind === 'none') return undefined;
  const whose = access.authorization?.trim() ? 'the credentials given with the request' : 'the credentials configured in clair.registries';
  return (
    `plain HTTP to the registry ${registry} was asked for, but ${whose} are sent only over TLS: pull over HTTPS, or mark the ` +
    `registry insecure in the server's configuration (clair.registries."${registry}".insecure)`
  );
}

/** A request's own authorization wins over the configured credentials of the host. */
function credentialsFrom(access: RegistryAccess, host: RegistryHostSettings | undefined): Credentials {
  const given = access.authorization?.trim();
  if (given) {
    const [scheme, value = ''] = given.split(/\s+/, 2);
    if (scheme?.toLowerCase() === 'bearer' && value !== '') return { kind: 'bearer', token: value };
    if (scheme?.toLowerCase() === 'basic' && value !== '') {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon > 0) return { kind: 'basic', username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
    }
    throw new RegistryError('the registry authorization must be "Basic <base64 user:password>" or "Bearer <token>"', false);
  }
  if (host?.token) return { kind: 'bearer', token: host.token };
  if (host?.username !== undefined && host.username !== '') {
    return { kind: 'basic', username: host.username, password: host.password ?? '' };
  }
  return { kind: 'none' };
}

export class RegistryRepository {
  readonly #baseUrl: string;
  readonly #registry: string;
  readonly #repository: string;
  readonly #credentials: Credentials;
  /** Credentials may go over plain HTTP (the host is configured insecure). */
  readonly #insecureAllowed: boolean;
  readonly #fetch: FetchSettings;
  /** The Authorization header the registry accepted last (or will be tried first). */
  #authorization: string | undefined;
  #tokenExpiresAt = Infinity;
  #challenge: BearerChallenge | undefined;

  constructor(deps: {
    baseUrl: string;
    registry: string;
    repository: string;
    credentials: Credentials;
    insecureAllowed: boolean;
    fetch: FetchSettings;
  }) {
    this.#baseUrl = deps.baseUrl;
    this.#registry = deps.registry;
    this.#repository = deps.repository;
    this.#credentials = deps.credentials;
    this.#insecureAllowed = deps.insecureAllowed;
    this.#fetch = deps.fetch;
    // A token given as such is sent from the first request; credentials wait for the challenge
    // (the registry may want a token from a realm instead).
    if (deps.credentials.kind === 'bearer') this.#authorization = `Bearer ${deps.credentials.token}`;
  }

  /**
   * The manifest a tag or digest names, its bytes checked against the digest. ManifestUnknown when
   * the registry says there is none.
   */
  async manifest(tagOrDigest: string, signal?: AbortSignal, options: RequestOptions = {}): Promise<FetchedManifest> {
    const what = this.#manifestName(tagOrDigest);
    const response = await this.#get(this.#manifestUrl(tagOrDigest), { accept: MANIFEST_ACCEPT }, `manifest ${what}`, signal, {
      ...options,
      manifest: true,
    });
    const body = await readLimited(response, MAX_MANIFEST_BYTES, `the manifest of ${what}`);
    const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    if (tagOrDigest.includes(':') && tagOrDigest !== digest) {
      throw new RegistryError(`the registry sent a manifest for ${what} whose bytes have the digest ${digest}`, false);
    }
    const announced = header(response, 'docker-content-digest');
    if (announced !== undefined && announced.startsWith('sha256:') && announced !== digest) {
      throw new RegistryError(`the registry announced the digest ${announced} for ${what}, but its bytes have the digest ${digest}`, false);
    }
    const contentType = header(response, 'content-type');
    let manifest: ImageManifest | ImageIndex;
    try {
      manifest = parseManifest(body.toString('utf8'), contentType);
    } catch (err) {
      throw new RegistryError(`the manifest of ${what} cannot be read: ${(err as Error).message}`, false, err);
    }
    return { digest, mediaType: manifest.mediaType, manifest };
  }

  /**
   * The digest a tag or digest names now, or undefined when the registry says it has no such
   * manifest (deleted, or never pushed). Asked with HEAD, which Docker Hub does not count as a
   * pull; with GET when the HEAD answer names no digest or is not a success (a HEAD answer has no
   * body to say why).
   */
  async resolve(tagOrDigest: string, signal?: AbortSignal, options: RequestOptions = {}): Promise<string | undefined> {
    const what = `manifest ${this.#manifestName(tagOrDigest)}`;
    const head = await this.#request('HEAD', this.#manifestUrl(tagOrDigest), { accept: MANIFEST_ACCEPT }, what, signal, options);
    await discard(head);
    const announced = header(head, 'docker-content-digest');
    if (head.statusCode >= 200 && head.statusCode < 300 && announced !== undefined && isDigest(announced)) return announced;
    try {
      return (await this.manifest(tagOrDigest, signal, options)).digest;
    } catch (err) {
      if (err instanceof ManifestUnknown) return undefined;
      throw err;
    }
  }

  #manifestName(tagOrDigest: string): string {
    return `${this.#registry}/${this.#repository}${tagOrDigest.includes(':') ? '@' : ':'}${tagOrDigest}`;
  }

  #manifestUrl(tagOrDigest: string): string {
    return `${this.#baseUrl}/v2/${this.#repository}/manifests/${encodeURIComponent(tagOrDigest)}`;
  }

  /** The image config blob (small JSON: platform, history), its bytes checked against its digest. */
  async config(descriptor: Descriptor, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const what = `config ${this.#registry}/${this.#repository}@${descriptor.digest}`;
    const url = `${this.#baseUrl}/v2/${this.#repository}/blobs/${descriptor.digest}`;
    const body = await readLimited(await this.#get(url, {}, what, signal), MAX_MANIFEST_BYTES, `the ${what}`);
    const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    if (digest !== descriptor.digest) throw new RegistryError(`the registry sent a ${what} whose bytes have the digest ${digest}`, false);
    try {
      const config = JSON.parse(body.toString('utf8')) as unknown;
      if (config !== null && typeof config === 'object' && !Array.isArray(config)) return config as Record<string, unknown>;
    } catch {
      // reported below
    }
    throw new RegistryError(`the ${what} is not a JSON object`, false);
  }

  /**
   * Where the indexer downloads a layer blob, with a current authorization. A foreign layer is
   * downloaded from the URL its descriptor names, without the registry's credentials.
   */
  async blob(layer: Descriptor, signal?: AbortSignal): Promise<BlobLocation> {
    if (layer.urls?.[0]) return { path: layer.urls[0], headers: {} };
    if (this.#challenge && Date.now() > this.#tokenExpiresAt - TOKEN_RENEW_MARGIN_MS) await this.#fetchToken(this.#challenge, signal);
    const headers: Record<string, string> = this.#authorization ? { authorization: this.#authorization } : {};
    return { path: `${this.#baseUrl}/v2/${this.#repository}/blobs/${layer.digest}`, headers };
  }

  /**
   * GET with the session's authorization, answered with success: anything else throws. A
   * manifest's 404 is read for its error code (ManifestUnknown).
   */
  async #get(
    url: string,
    headers: Record<string, string>,
    what: string,
    signal?: AbortSignal,
    options: RequestOptions & { manifest?: boolean } = {},
  ): Promise<Dispatcher.ResponseData> {
    const response = await this.#request('GET', url, headers, what, signal, options);
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    if (response.statusCode === 404 && options.manifest) {
      const codes = await errorCodes(response);
      if (codes.some((code) => MANIFEST_UNKNOWN_CODES.has(code)))
        throw new ManifestUnknown(`the registry ${this.#registry} has no ${what}`);
    } else {
      await discard(response);
    }
    if (response.statusCode === 401 || response.statusCode === 403) throw this.#refused(response.statusCode, what);
    if (response.statusCode === 404) throw new RegistryError(`the registry ${this.#registry} has no ${what}`, false);
    const retryable = response.statusCode === 429 || response.statusCode >= 500;
    throw new RegistryError(`the registry ${this.#registry} answered ${response.statusCode} for ${what}`, retryable);
  }

  /** A request with the session's authorization; one 401 is answered by following its challenge, then retried. */
  async #request(
    method: 'GET' | 'HEAD',
    url: string,
    headers: Record<string, string>,
    what: string,
    signal?: AbortSignal,
    options: RequestOptions = {},
  ): Promise<Dispatcher.ResponseData> {
    let response = await this.#send(url, headers, signal, { method, timeoutMs: options.timeoutMs });
    if (response.statusCode === 401) {
      const challenge = header(response, 'www-authenticate');
      await discard(response);
      if (!(await this.#answer(challenge, signal))) throw this.#refused(401, what);
      response = await this.#send(url, headers, signal, { method, timeoutMs: options.timeoutMs });
    }
    return response;
  }

  #refused(status: number, what: string): RegistryError {
    const how =
      this.#credentials.kind === 'none'
        ? `it needs credentials: configure clair.registries."${this.#registry}" (username and password, or token)`
        : 'check the credentials configured in clair.registries or given with the request';
    return new RegistryError(`the registry ${this.#registry} refused access to ${what} (${status}): ${how}`, false);
  }

  /** Follows a WWW-Authenticate challenge; false when there is nothing more to try. */
  async #answer(challenge: string | undefined, signal?: AbortSignal): Promise<boolean> {
    const parsed = challenge === undefined ? undefined : parseChallenge(challenge);
    if (parsed?.scheme === 'bearer' && parsed.params.realm) {
      // A token the request gave was refused: getting another one is not ours to do.
      if (this.#credentials.kind === 'bearer') return false;
      this.#challenge = { realm: parsed.params.realm, service: parsed.params.service };
      await this.#fetchToken(this.#challenge, signal);
      return true;
    }
    if (parsed?.scheme === 'basic' && this.#credentials.kind === 'basic') {
      if (this.#authorization?.startsWith('Basic ')) return false;
      this.#authorization = basicHeader(this.#credentials);
      return true;
    }
    return false;
  }

  /** A pull token for the repository from the challenge's realm (Docker's token authentication spec). */
  async #fetchToken(challenge: BearerChallenge, signal?: AbortSignal): Promise<void> {
    const url = new URL(challenge.realm);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new RegistryError(`the registry ${this.#registry} names a token realm that is not an http(s) URL`, false);
    }
    // The realm gets the credentials: over TLS like the registry itself, whatever URL the registry names.
    if (url.protocol === 'http:' && this.#credentials.kind === 'basic' && !this.#insecureAllowed) {
      throw new RegistryError(
        `the registry ${this.#registry} names a token service over plain HTTP (${url.origin}), but credentials are sent only over ` +
          `TLS: serve the token service over HTTPS, or mark the registry insecure in the server's configuration ` +
          `(clair.registries."${this.#registry}".insecure)`,
        false,
      );
    }
    if (challenge.service !== undefined) url.searchParams.set('service', challenge.service);
    url.searchParams.set('scope', `repository:${this.#repository}:pull`);
    const headers: Record<string, string> = this.#credentials.kind === 'basic' ? { authorization: basicHeader(this.#credentials) } : {};
    const what = `a token from ${url.origin}${url.pathname}`;
    const response = await this.#send(url.href, headers, signal, { withSession: false });
    if (response.statusCode !== 200) {
      await discard(response);
      const refused = response.statusCode === 401 || response.statusCode === 403;
      throw new RegistryError(
        `the registry ${this.#registry}'s token service answered ${response.statusCode}` +
          (refused ? ': check the credentials configured in clair.registries or given with the request' : ''),
        !refused && (response.statusCode === 429 || response.statusCode >= 500),
      );
    }
    let body: { token?: unknown; access_token?: unknown; expires_in?: unknown };
    try {
      body = JSON.parse((await readLimited(response, MAX_TOKEN_RESPONSE_BYTES, what)).toString('utf8')) as typeof body;
    } catch (err) {
      if (err instanceof TarsierError) throw err;
      throw new RegistryError(`the registry ${this.#registry}'s token service sent something that is not JSON`, false, err);
    }
    const token = typeof body.token === 'string' && body.token !== '' ? body.token : body.access_token;
    if (typeof token !== 'string' || token === '') {
      throw new RegistryError(`the registry ${this.#registry}'s token service sent no token`, false);
    }
    const seconds = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : DEFAULT_TOKEN_SECONDS;
    this.#authorization = `Bearer ${token}`;
    this.#tokenExpiresAt = Date.now() + seconds * 1000;
  }

  /**
   * withSession: false for the token request, which carries its own credentials (or none) and never
   * the session's token. timeoutMs: instead of the download timeout.
   */
  async #send(
    url: string,
    headers: Record<string, string>,
    signal?: AbortSignal,
    {
      withSession = true,
      method = 'GET',
      timeoutMs,
    }: { withSession?: boolean; method?: 'GET' | 'HEAD'; timeoutMs?: number | undefined } = {},
  ): Promise<Dispatcher.ResponseData> {
    const timeout = AbortSignal.timeout(timeoutMs ?? this.#fetch.downloadTimeoutMs);
    const dispatcher = await createDispatcher(this.#fetch);
    const all: Record<string, string> = { 'user-agent': USER_AGENT, ...headers };
    if (withSession && all.authorization === undefined && this.#authorization !== undefined) all.authorization = this.#authorization;
    try {
      const response = await request(url, {
        method,
        headers: all,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        dispatcher,
      });
      response.body.once('close', () => void dispatcher.destroy().catch(() => undefined));
      return response;
    } catch (err) {
      void dispatcher.destroy().catch(() => undefined);
      if (signal?.aborted) throw signal.reason;
      const origin = new URL(url).host;
      const reason = connectionFailureReason(err);
      // A TLS failure does not go away by itself (a plain-HTTP registry, an unknown CA).
      const tls = reason.startsWith('TLS failure');
      const hint =
        tls && url.startsWith('https:') ? `; if the registry serves plain HTTP, set clair.registries."${this.#registry}".insecure` : '';
      throw new RegistryError(`could not reach the registry at ${origin}: ${reason}${hint}`, !tls, err);
    }
  }
}

function basicHeader(credentials: { username: string; password: string }): string {
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
}

function header(response: Dispatcher.ResponseData, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function discard(response: Dispatcher.ResponseData): Promise<void> {
  await response.body.dump().catch(() => undefined);
}

/** The error codes of a registry's error body ({"errors": [{"code": …}]}); none when it is not one. */
async function errorCodes(response: Dispatcher.ResponseData): Promise<string[]> {
  try {
    const body = JSON.parse((await readLimited(response, MAX_ERROR_BODY_BYTES, 'an error answer')).toString('utf8')) as {
      errors?: Array<{ code?: unknown }>;
    };
    return Array.isArray(body.errors) ? body.errors.map((e) => e?.code).filter((c): c is string => typeof c === 'string') : [];
  } catch {
    return [];
  }
}

async function readLimited(response: Dispatcher.ResponseData, maxBytes: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      response.body.destroy();
      throw new RegistryError(`${what} is larger than ${maxBytes} bytes`, false);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * A WWW-Authenticate value: `Bearer realm="…",service="…",scope="…"` or `Basic realm="…"` (RFC
 * 7235 auth-params; quoted strings may hold commas and escaped quotes).
 */
export function parseChallenge(value: string): { scheme: string; params: Record<string, string> } | undefined {
  const match = /^\s*([A-Za-z][A-Za-z0-9_-]*)\s*(.*)$/s.exec(value);
  if (!match) return undefined;
  const params: Record<string, string> = {};
  const param = /\s*([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))\s*,?/gy;
  const rest = match[2]!;
  for (let m = param.exec(rest); m; m = param.exec(rest)) {
    params[m[1]!.toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!;
    if (param.lastIndex >= rest.length) break;
  }
  return { scheme: match[1]!.toLowerCase(), params };
}
