import { execFile, spawn } from 'node:child_process';
import { randomUUID, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { SignJWT } from 'jose';
import { stringify } from 'yaml';

/**
 * A real Docker registry (Debian's docker-registry, distribution 2.8) on 127.0.0.1, with its
 * storage, configuration and (for token auth) its token server in a temporary directory, for tests
 * that push real images with skopeo (see oci-image.ts) and let Tarsier pull them.
 */

const run = promisify(execFile);

/** The programs the registry tests run; CI installs them (docker-registry, skopeo, apache2-utils). */
const PROGRAMS = ['docker-registry', 'skopeo', 'htpasswd', 'openssl'] as const;

const onPath = (program: string): boolean =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, program)));

/** The registry programs not installed here: a test file skips itself (describe.skipIf) when any is. */
export function missingRegistryPrograms(): string[] {
  return PROGRAMS.filter((program) => !onPath(program));
}

export type RegistryAuth = 'none' | 'basic' | 'token';

export interface RegistryOptions {
  /** none (default): anyone may push and pull; basic: htpasswd; token: the Docker token flow. */
  auth?: RegistryAuth;
  /** A webhook the registry posts its events to (pushes and pulls of manifests and blobs). */
  notifications?: { url: string; headers?: Record<string, string[]> };
  /**
   * The URL the registry names itself by (distribution's http.host), e.g. a proxy in front of it:
   * the URLs of its push events point there, so a webhook's scans pull through it.
   */
  publicUrl?: string;
}

/** One `access` entry of a registry token. */
export interface TokenAccess {
  type: string;
  name: string;
  actions: string[];
}

/** A request the token server received. */
export interface TokenRequest {
  service: string | null;
  /** The scope parameters as sent, e.g. repository:team/app:pull,push. */
  scopes: string[];
  /** The user of the Basic credentials sent; null when the request was anonymous. */
  username: string | null;
  /** 200 with a token, 401 when the credentials were wrong. */
  status: number;
  /** What the token granted (empty for anonymous requests). */
  granted: TokenAccess[];
}

export interface Registry {
  readonly auth: RegistryAuth;
  /** 127.0.0.1:PORT, as image references name the registry. */
  readonly host: string;
  /** http://127.0.0.1:PORT */
  readonly url: string;
  /** The one account of a basic or token registry (an open registry ignores credentials). */
  readonly username: string;
  readonly password: string;
  /** Token auth only: every request to the token server, in order. */
  readonly tokenRequests: TokenRequest[];
  /** The registry's log so far (its stdout and stderr), for failure messages. */
  logs(): string;
  /** Kills the registry, closes the token server and removes the temporary directory. */
  stop(): Promise<void>;
}

const USERNAME = 'tarsier';
const PASSWORD = 'registry-test-password';
/** The token service and issuer names: the registry accepts tokens only for these. */
const SERVICE = 'tarsier-test-registry';
const ISSUER = 'tarsier-test-token-issuer';
/**
 * Runs the registry until it exits or this process's end of the wrapper's standard input closes:
 * stop() closes it, and so does this process ending in any way (vitest ends its workers with
 * SIGTERM, and ignores an afterAll registered inside a hook or a test, so stop() may never run).
 * No registry outlives the test process that started it.
 */
const REGISTRY_WRAPPER = `
exec 3<&0
docker-registry serve "$1" 3<&- &
registry=$!
{ cat <&3 >/dev/null; kill -9 "$registry"; } >/dev/null 2>&1 &
exec 3<&-
wait "$registry"
`;

/** Long enough for a slow CI machine to exec the binary and open its storage. */
const START_TIMEOUT_MS = 20_000;

/**
 * Starts a registry. It listens on a port the kernel picks: distribution accepts
 * `http.addr: 127.0.0.1:0` and logs the address it bound ("listening on 127.0.0.1:PORT"), so no port
 * is chosen beforehand and no other process can take it in between.
 */
export async function startRegistry(options: RegistryOptions = {}): Promise<Registry> {
  const auth = options.auth ?? 'none';
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-registry-'));
  const tokenRequests: TokenRequest[] = [];
  let tokenServer: Server | undefined;
  let output = '';
  let child: ReturnType<typeof spawn> | undefined;
  let exited: Promise<void> = Promise.resolve();

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      if (child && child.exitCode === null && child.signalCode === null) {
        // Its standard input closed, the wrapper kills the registry (keeping nothing a test needs,
        // it is not given a graceful shutdown) and exits with it.
        child.stdin?.end();
        await exited;
      }
      if (tokenServer) {
        const server = tokenServer;
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      await rm(dir, { recursive: true, force: true });
    })());

  try {
    let authConfig: Record<string, unknown> | undefined;
    if (auth === 'basic') {
      // distribution reads only bcrypt entries (-B).
      const { stdout } = await run('htpasswd', ['-Bbn', USERNAME, PASSWORD]);
      await writeFile(join(dir, 'htpasswd'), stdout);
      authConfig = { htpasswd: { realm: 'tarsier-test', path: join(dir, 'htpasswd') } };
    } else if (auth === 'token') {
      const issuer = await tokenIssuer(dir);
      tokenServer = createServer((req, res) => {
        const query = new URL(req.url ?? '/', 'http://token').searchParams;
        const request = { service: query.get('service'), scopes: query.getAll('scope') };
        answerTokenRequest(issuer, request, req.headers.authorization).then(
          ({ status, body, granted, username }) => {
            tokenRequests.push({ ...request, username, status, granted });
            res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
          },
          // A token that cannot be signed is a harness bug: answer it rather than leave the client hanging.
          (error: unknown) => res.writeHead(500).end(String(error)),
        );
      });
      const server = tokenServer;
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      authConfig = {
        token: {
          realm: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`,
          service: SERVICE,
          issuer: ISSUER,
          rootcertbundle: issuer.certificatePath,
        },
      };
    }

    await mkdir(join(dir, 'storage'));
    const config = {
      version: 0.1,
      log: { level: 'info', formatter: 'text', accesslog: { disabled: true } },
      // Deletes allowed so tests can take an image away again.
      storage: { filesystem: { rootdirectory: join(dir, 'storage') }, delete: { enabled: true } },
      // A fixed secret only silences the warning about a generated one.
      http: { addr: '127.0.0.1:0', secret: 'tarsier-test-secret', ...(options.publicUrl ? { host: options.publicUrl } : {}) },
      ...(authConfig ? { auth: authConfig } : {}),
      ...(options.notifications
        ? {
            notifications: {
              events: { includereferences: true },
              endpoints: [
                {
                  name: 'tarsier-test',
                  url: options.notifications.url,
                  headers: options.notifications.headers ?? {},
                  // A refused or slow delivery is retried soon, so a test is not held up by one.
                  timeout: '1s',
                  threshold: 5,
                  backoff: '200ms',
                },
              ],
            },
          }
        : {}),
    };
    const configPath = join(dir, 'config.yml');
    await writeFile(configPath, stringify(config));

    const registry = spawn('sh', ['-c', REGISTRY_WRAPPER, 'sh', configPath], { stdio: ['pipe', 'pipe', 'pipe'] });
    child = registry;
    exited = new Promise<void>((resolve) => registry.once('exit', () => resolve()));
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`docker-registry did not listen within ${START_TIMEOUT_MS} ms:\n${output}`)),
        START_TIMEOUT_MS,
      );
      const collect = (data: Buffer) => {
        output += data.toString();
        const listening = /listening on (127\.0\.0\.1:\d+)/.exec(output);
        if (listening) {
          clearTimeout(timer);
          resolve(listening[1]!);
        }
      };
      registry.stdout.on('data', collect);
      registry.stderr.on('data', collect);
      registry.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      registry.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`docker-registry exited (${code ?? signal}) before listening:\n${output}`));
      });
    });

    const url = `http://127.0.0.1:${address.split(':')[1]}`;
    // The log line comes after the socket is bound, so this first request is answered; it checks
    // that what listens is the registry's API, open (200) or asking for credentials (401).
    const check = await fetch(`${url}/v2/`);
    if (check.status !== 200 && check.status !== 401) {
      throw new Error(`GET ${url}/v2/ answered ${check.status}:\n${output}`);
    }

    return { auth, host: address, url, username: USERNAME, password: PASSWORD, tokenRequests, logs: () => output, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

interface TokenIssuer {
  key: KeyObject;
  /** The certificate, base64 DER, for the token's x5c header. */
  certificateDer: string;
  /** The certificate as PEM on disk: the registry's rootcertbundle. */
  certificatePath: string;
}

/**
 * A self-signed P-256 certificate and key, made with openssl in dir. distribution 2.8 takes the
 * token's signing key from the x5c header and trusts it when that chain verifies against
 * rootcertbundle, so the certificate is both the chain and the bundle.
 */
async function tokenIssuer(dir: string): Promise<TokenIssuer> {
  const keyPath = join(dir, 'token-issuer.key');
  const certificatePath = join(dir, 'token-issuer.pem');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyPath,
    '-out',
    certificatePath,
    '-days',
    '1',
    '-subj',
    `/CN=${ISSUER}`,
  ]);
  const certificate = new X509Certificate(await readFile(certificatePath));
  return { key: createPrivateKey(await readFile(keyPath)), certificateDer: certificate.raw.toString('base64'), certificatePath };
}

/** A scope parameter, type:name:actions; the name may itself hold colons (a host:port prefix). */
function parseScope(scope: string): TokenAccess | undefined {
  const first = scope.indexOf(':');
  const last = scope.lastIndexOf(':');
  if (first < 0 || last === first) return undefined;
  return {
    type: scope.slice(0, first),
    name: scope.slice(first + 1, last),
    actions: scope
      .slice(last + 1)
      .split(',')
      .filter(Boolean),
  };
}

/** The user of a Basic Authorization header; undefined when there is none, null when it is wrong. */
function basicUser(authorization: string | undefined): string | null | undefined {
  if (!authorization) return undefined;
  const match = /^Basic (.+)$/i.exec(authorization);
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString();
  return decoded === `${USERNAME}:${PASSWORD}` ? USERNAME : null;
}

/**
 * The Docker token endpoint: the account gets every action it asks for, an anonymous client a
 * token that grants nothing (so the registry refuses it with 401 insufficient_scope), wrong
 * credentials a 401.
 */
async function answerTokenRequest(
  issuer: TokenIssuer,
  request: { service: string | null; scopes: string[] },
  authorization: string | undefined,
): Promise<{ status: number; body: unknown; granted: TokenAccess[]; username: string | null }> {
  const user = basicUser(authorization);
  if (user === null) return { status: 401, body: { details: 'incorrect username or password' }, granted: [], username: null };
  const granted = user ? request.scopes.map(parseScope).filter((access) => access !== undefined) : [];
  const issuedAt = Math.floor(Date.now() / 1000);
  const expiresIn = 300;
  const token = await new SignJWT({ access: granted })
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT', x5c: [issuer.certificateDer] })
    .setIssuer(ISSUER)
    .setSubject(user ?? '')
    .setAudience(request.service ?? SERVICE)
    .setIssuedAt(issuedAt)
    .setNotBefore(issuedAt)
    .setExpirationTime(issuedAt + expiresIn)
    .setJti(randomUUID())
    .sign(issuer.key);
  return {
    status: 200,
    body: { token, access_token: token, expires_in: expiresIn, issued_at: new Date(issuedAt * 1000).toISOString() },
    granted,
    username: user ?? null,
  };
}

/** A blob GET the proxy saw: the digest asked for. */
export interface ProxiedBlob {
  repository: string;
  digest: string;
}

export interface RegistryProxy {
  /** 127.0.0.1:PORT: reference images through it (and configure clair.registries for it). */
  readonly host: string;
  readonly url: string;
  /** Every blob GET forwarded, in order. */
  readonly blobGets: ProxiedBlob[];
  /** How many GETs of this blob went through. */
  blobGetsOf(digest: string): number;
  close(): Promise<void>;
}

export interface RegistryProxyOptions {
  /**
   * Sees each blob the registry answers a GET with (successful answers only) and returns what the
   * client gets instead (same length or not); may hold the answer by returning a pending promise.
   */
  blob?: (blob: ProxiedBlob, body: Buffer) => Buffer | Promise<Buffer>;
}

const BLOB_PATH = /^\/v2\/(.+)\/blobs\/(sha256:[a-f0-9]{64})$/;

/**
 * A plain HTTP proxy in front of a registry (node:http, one upstream request per request), to count
 * the blob downloads a client makes and to play a registry whose storage or network alters or holds
 * a blob. Everything else passes unchanged, including auth challenges. The registry's URL is read
 * at each request, so the proxy may start first (and the registry name it as its publicUrl).
 */
export async function startRegistryProxy(registry: Pick<Registry, 'url'>, options: RegistryProxyOptions = {}): Promise<RegistryProxy> {
  const blobGets: ProxiedBlob[] = [];
  const server = createServer((req, res) => {
    const upstream = new URL(registry.url);
    const path = req.url ?? '/';
    const match = req.method === 'GET' ? BLOB_PATH.exec(path.split('?')[0]!) : null;
    const blob = match ? { repository: match[1]!, digest: match[2]! } : undefined;
    if (blob) blobGets.push(blob);
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        if (!blob || !options.blob || answer.statusCode !== 200) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          void Promise.resolve(options.blob!(blob, Buffer.concat(chunks))).then(
            (body) => {
              if (res.destroyed) return;
              res.writeHead(200, { ...answer.headers, 'content-length': String(body.length) }).end(body);
            },
            (error: unknown) => res.writeHead(500).end(String(error)),
          );
        });
      },
    );
    forward.on('error', (error) => (res.headersSent ? res.destroy() : res.writeHead(502).end(String(error))));
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    host: `127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}`,
    blobGets,
    blobGetsOf: (digest) => blobGets.filter((b) => b.digest === digest).length,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A Docker Distribution notification of a manifest push, as the registry sends it (its URL on registry, plain HTTP). */
export function distributionPushEvent(registry: string, repository: string, digest: string, tag: string) {
  return {
    events: [
      {
        id: 'event-1',
        timestamp: new Date().toISOString(),
        action: 'push',
        target: {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest,
          repository,
          url: `http://${registry}/v2/${repository}/manifests/${digest}`,
          tag,
        },
        request: { host: registry, method: 'PUT' },
      },
    ],
  };
}
