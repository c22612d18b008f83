/**
 * The world a client replay runs in: Tarsier listening on loopback (a real HTTP server, so paths,
 * query strings and headers arrive exactly as a client writes them), a registry serving a real
 * 3-layer Debian image, vulnerability data that affects it, and, on request, the notifier
 * delivering webhooks to a receiver the test owns. Every JSON answer is checked against the
 * response schema the OpenAPI document declares for its route and status, so a replay also shows
 * that the document says what the server sends.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type pg from 'pg';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { request } from 'undici';
import { afterAll, expect } from 'vitest';
import { Notifier } from '../../src/notifier/notifier.js';
import { createPool } from '../../src/store/pool.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { freshDatabase, silentLog } from '../helpers/db.js';
import { debian12, dpkgStatus, type InstalledPackage } from '../helpers/dpkg-status.js';
import { startLayerServer, type LayerServer } from '../helpers/layer-server.js';
import { gzip, tarball } from '../helpers/tarball.js';

export interface Answer {
  status: number;
  statusText: string;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body, when it is JSON. */
  json: any;
}

export interface ImageLayer {
  /** sha256:<hex> of the compressed blob, as a manifest lists it. */
  readonly digest: string;
  readonly hex: string;
  readonly blob: Buffer;
}

export interface Image {
  /** The repository, as registries name it (team/app). */
  readonly repository: string;
  /** sha256:<hex> of the image config. */
  readonly configDigest: string;
  /** Base first. */
  readonly layers: readonly ImageLayer[];
  /** The registry's pull token: layer downloads without it are refused (401). */
  readonly authorization: string;
}

const basePackages: InstalledPackage[] = [
  { name: 'libssl3', version: '3.0.11-1~deb12u2', source: 'openssl' },
  { name: 'openssl', version: '3.0.11-1~deb12u2' },
  { name: 'zlib1g', version: '1:1.2.13.dfsg-1', source: 'zlib' },
  { name: 'bash', version: '5.2.15-2+b2' },
];

/** The image: Debian 12 (openssl 3.0.11, zlib, bash); an application layer; an upgrade to openssl 3.0.13 that adds curl. */
const LAYER_TARS = [
  tarball([
    { path: 'etc/os-release', content: debian12 },
    { path: 'var/lib/dpkg/status', content: dpkgStatus(...basePackages) },
  ]),
  tarball([{ path: 'srv/app/server.js', content: 'require("http").createServer().listen(8080)' }]),
  tarball([
    {
      path: 'var/lib/dpkg/status',
      content: dpkgStatus(
        { name: 'libssl3', version: '3.0.13-1~deb12u1', source: 'openssl' },
        { name: 'openssl', version: '3.0.13-1~deb12u1' },
        ...basePackages.slice(2),
        { name: 'libcurl4', version: '7.88.1-10', source: 'curl' },
      ),
    },
  ]),
];

/** The vulnerability data, written through the v1 API as an operator's script would. */
export const VULNERABILITIES = [
  {
    Name: 'CVE-2023-5678',
    Severity: 'Medium',
    Link: 'https://security-tracker.debian.org/tracker/CVE-2023-5678',
    Description: 'Generating excessively long X9.42 DH keys or checking them may be very slow.',
    FixedIn: [{ Name: 'openssl', Version: '3.0.13-1~deb12u1' }],
  },
  {
    Name: 'CVE-2024-0727',
    Severity: 'Low',
    Link: 'https://security-tracker.debian.org/tracker/CVE-2024-0727',
    Description: 'Processing a maliciously formatted PKCS12 file may lead OpenSSL to crash.',
    Metadata: { NVD: { CVSSv3: { Score: 5.5, Vectors: 'CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:H' } } },
    FixedIn: [{ Name: 'openssl', Version: '3.0.14-1~deb12u1' }],
  },
  {
    Name: 'CVE-2023-45853',
    Severity: 'Critical',
    Link: 'https://security-tracker.debian.org/tracker/CVE-2023-45853',
    Description: 'MiniZip in zlib through 1.3 has an integer overflow.',
    FixedIn: [{ Name: 'zlib', Version: 'None' }],
  },
  {
    Name: 'CVE-2023-38545',
    Severity: 'High',
    Link: 'https://security-tracker.debian.org/tracker/CVE-2023-38545',
    Description: 'SOCKS5 heap buffer overflow.',
    FixedIn: [{ Name: 'curl', Version: '7.88.1-10+deb12u4' }],
  },
];

/** What the top layer's report must say: per package, its version and each affecting vulnerability with its fix (null: none). */
export const TOP_LAYER_FINDINGS: Record<string, { version: string; vulnerabilities: Record<string, string | null> }> = {
  openssl: { version: '3.0.13-1~deb12u1', vulnerabilities: { 'CVE-2024-0727': '3.0.14-1~deb12u1' } },
  zlib: { version: '1:1.2.13.dfsg-1', vulnerabilities: { 'CVE-2023-45853': null } },
  bash: { version: '5.2.15-2+b2', vulnerabilities: {} },
  curl: { version: '7.88.1-10', vulnerabilities: { 'CVE-2023-38545': '7.88.1-10+deb12u4' } },
};

/** The same in the ancestry API's view: features by the layer (index, base 0) that introduced them. */
export const INTRODUCED_BY_LAYER: Record<string, number> = { openssl: 2, zlib: 0, bash: 0, curl: 2 };

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

export interface World {
  readonly t: TestApp;
  /** http://127.0.0.1:PORT, no trailing slash. */
  readonly server: string;
  /** 127.0.0.1:PORT, the same port, where gRPC clients dial. */
  readonly grpcTarget: string;
  readonly registry: LayerServer;
  readonly image: Image;
  /** The registry URL of a layer blob (as registries and clients write it). */
  blobUrl(layer: ImageLayer): string;
  /** Sends a request as a client writes it (path and query untouched) and checks the answer against the OpenAPI document. */
  http(method: string, path: string, options?: { headers?: Record<string, string>; body?: string }): Promise<Answer>;
  /** Webhook deliveries received, once startNotifier() has run. */
  readonly deliveries: string[];
  /** Starts the notifier, delivering to a receiver of this world. */
  startNotifier(): Promise<void>;
  /** Resolves with the name of the next notification delivered to the receiver. */
  nextDelivery(): Promise<string>;
}

/** Builds the world: server, registry, image and vulnerability data. */
export async function world(): Promise<World> {
  const connection: pg.PoolConfig = await freshDatabase();
  const pool = createPool(connection, 10, silentLog);
  afterAll(() => pool.end());
  const t = await testApp({ pool, grpc: true });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const grpcTarget = `127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const server = `http://${grpcTarget}`;

  const registry = await startLayerServer();
  const authorization = 'Bearer registry-pull-token';
  const layers = LAYER_TARS.map((tar) => {
    const blob = gzip(tar);
    const hex = sha256(blob);
    return { digest: `sha256:${hex}`, hex, blob };
  });
  const image: Image = {
    repository: 'team/app',
    configDigest: `sha256:${sha256(JSON.stringify({ rootfs: { diff_ids: LAYER_TARS.map((tar) => `sha256:${sha256(tar)}`) } }))}`,
    layers,
    authorization,
  };
  const blobUrl = (layer: ImageLayer): string => registry.url(`/v2/${image.repository}/blobs/${layer.digest}`);
  for (const layer of layers) registry.serve(`/v2/${image.repository}/blobs/${layer.digest}`, layer.blob, { authorization });

  const validators = await responseValidators(server);
  const http: World['http'] = async (method, path, options = {}) => {
    const res = await request(`${server}${path}`, { method: method as 'GET', headers: options.headers ?? {}, body: options.body });
    const text = await res.body.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    validators.check(method, path, res.statusCode, parsed);
    return { status: res.statusCode, statusText: res.statusText ?? '', headers: res.headers, text, json: parsed };
  };

  for (const Vulnerability of VULNERABILITIES) {
    const res = await http('POST', '/v1/namespaces/debian%3A12/vulnerabilities', { body: JSON.stringify({ Vulnerability }) });
    expect(res.status, res.text).toBe(201);
  }
  // The data's own notifications are read: a replay's notifications are the ones its changes make.
  for (const { name } of (await pool.query<{ name: string }>('SELECT name FROM notification')).rows) {
    expect((await http('DELETE', `/v1/notifications/${name}`)).status).toBe(200);
  }

  const deliveries: string[] = [];
  const waiting: Array<(name: string) => void> = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      res.writeHead(200).end();
      const name = (JSON.parse(body) as { Notification: { Name: string } }).Notification.Name;
      deliveries.push(name);
      waiting.shift()?.(name);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  let delivered = 0;

  return {
    t,
    server,
    grpcTarget,
    registry,
    image,
    blobUrl,
    http,
    deliveries,
    async startNotifier() {
      const notifier = new Notifier({
        pool,
        connection,
        settings: {
          endpoints: [`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/service/notifications/clair`],
          attempts: 3,
          renotifyIntervalMs: 3600_000,
          secret: '',
          retentionMs: 3600_000,
        },
        log: silentLog,
        metrics: t.metrics,
      });
      await notifier.start();
      afterAll(() => notifier.stop());
    },
    nextDelivery() {
      const index = delivered++;
      if (deliveries[index] !== undefined) return Promise.resolve(deliveries[index]);
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
}

/**
 * Checks answers against the OpenAPI document served by the same server: the response schema of
 * the operation (path template and method) for the status (exact, or its NXX range).
 */
async function responseValidators(server: string) {
  const document = (await (await request(`${server}/docs/json`)).body.json()) as {
    paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
  };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const templates = Object.keys(document.paths).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
  }));
  const compiled = new Map<string, ValidateFunction>();
  return {
    check(method: string, path: string, status: number, body: unknown): void {
      const bare = (path.split('?', 1)[0] ?? '').replace(/\/{2,}/g, '/');
      const match = templates.find((t) => t.pattern.test(bare));
      if (!match) return; // no route: the edge's 404 or 405
      const responses = document.paths[match.template]?.[method.toLowerCase()]?.responses;
      if (!responses) return;
      const key = [String(status), `${String(status)[0]}XX`].find((k) => responses[k]);
      expect(key, `${method} ${match.template} answered ${status}, which its document does not list`).toBeDefined();
      const schema = responses[key!]!.content?.['application/json']?.schema;
      if (!schema) {
        expect(body, `${method} ${match.template} ${status} is documented without a body`).toBeUndefined();
        return;
      }
      const id = `${method} ${match.template} ${key}`;
      let validate = compiled.get(id);
      if (!validate) compiled.set(id, (validate = ajv.compile(schema)));
      expect(validate(body), `${id}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    },
  };
}

/** The top layer's findings as a report lists them, for comparison with TOP_LAYER_FINDINGS. */
export function findingsOf(
  features: ReadonlyArray<{ Name: string; Version: string; Vulnerabilities?: Array<{ Name: string; FixedBy?: string }> }>,
) {
  return Object.fromEntries(
    features.map((f) => [
      f.Name,
      { version: f.Version, vulnerabilities: Object.fromEntries((f.Vulnerabilities ?? []).map((v) => [v.Name, v.FixedBy ?? null])) },
    ]),
  );
}

/** A PostAncestryRequest as Clair v3 clients build it (the same in every v3 proto). */
export interface PostAncestryRequest {
  ancestry_name: string;
  format: string;
  layers: Array<{ hash: string; path: string; headers: Record<string, string> }>;
}

/** A vulnerability of a feature, as a Clair v3.0.0-pre1 client decodes it. */
export interface Pre1Vulnerability {
  name: string;
  namespace_name: string;
  description: string;
  link: string;
  severity: string;
  metadata: string;
  fixed_by: string;
}

export interface Pre1Feature {
  name: string;
  namespace: { name: string } | null;
  version: string;
  version_format: string;
  vulnerabilities: Pre1Vulnerability[];
}

export interface Pre1Ancestry {
  name: string;
  layers: Array<{ layer: { hash: string }; detected_features: Pre1Feature[] }>;
}

/**
 * Calls to an AncestryService compiled from a client's own proto file (next to this one): answers
 * are decoded as that client decodes them (proto3 defaults filled in), and a call fails, as it does
 * for the client, when an answer does not decode.
 */
function ancestryServiceCalls(protoFile: string, target: string) {
  const file = fileURLToPath(new URL(protoFile, import.meta.url));
  const definition = protoLoader.loadSync(file, { keepCase: true, longs: Number, enums: String, defaults: true, arrays: true });
  const clair = (grpc.loadPackageDefinition(definition).coreos as grpc.GrpcObject).clair as grpc.GrpcObject;
  const client = new (clair.AncestryService as grpc.ServiceClientConstructor)(target, grpc.credentials.createInsecure());
  afterAll(() => client.close());
  type Unary = (request: object, callback: (err: grpc.ServiceError | null, response: Record<string, unknown>) => void) => void;
  return (method: string, request: object) =>
    new Promise<Record<string, unknown>>((resolve, reject) =>
      (client as unknown as Record<string, Unary>)[method]!.call(client, request, (err, response) =>
        err ? reject(err) : resolve(response),
      ),
    );
}

/** An AncestryService client compiled from Clair v3.0.0-pre1's messages, which genuinetools/reg and klar builds on pre1 use. */
export function clairPre1Client(target: string) {
  const call = ancestryServiceCalls('./clair-v3.0.0-pre1.proto', target);
  return {
    postAncestry: (request: PostAncestryRequest) => call('PostAncestry', request),
    getAncestry: async (name: string) => (await call('GetAncestry', { ancestry_name: name })).ancestry as Pre1Ancestry,
  };
}

/** A feature of an ancestry, as a client of Clair's early v3 messages decodes it. */
export interface EarlyFeature {
  name: string;
  namespace_name: string;
  version: string;
  version_format: string;
  vulnerabilities: Pre1Vulnerability[];
}

/** GetAncestryResponse as a client of Clair's early v3 messages decodes it. */
export interface EarlyGetAncestryResponse {
  ancestry: {
    name: string;
    features: EarlyFeature[];
    layers: Array<{ hash: string }>;
    scanned_listers: string[];
    scanned_detectors: string[];
  } | null;
  status: { listers: string[]; detectors: string[]; last_update_time: { seconds: number; nanos: number } | null } | null;
}

/**
 * An AncestryService client compiled from the early v3 messages released klar vendors (quay/clair
 * at b1cd0923), which read every feature of the ancestry at field 2 of its Ancestry.
 */
export function clairEarlyClient(target: string) {
  const call = ancestryServiceCalls('./clair-v3-b1cd0923.proto', target);
  return {
    postAncestry: (request: PostAncestryRequest) => call('PostAncestry', request),
    getAncestry: async (request: { ancestry_name: string; with_features?: boolean; with_vulnerabilities?: boolean }) =>
      (await call('GetAncestry', request)) as unknown as EarlyGetAncestryResponse,
  };
}

/** What a Clair v3 client's walk over every layer's features finds, in findingsOf's shape. */
export function findingsOfAncestry(ancestry: Pre1Ancestry) {
  return Object.fromEntries(
    ancestry.layers.flatMap((l) =>
      l.detected_features.map((f) => [
        f.name,
        { version: f.version, vulnerabilities: Object.fromEntries(f.vulnerabilities.map((v) => [v.name, v.fixed_by || null])) },
      ]),
    ),
  );
}
