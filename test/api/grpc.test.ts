/**
 * The ancestry API over native gRPC, with a real gRPC client (@grpc/grpc-js) against a running
 * server (startServer), on the API port beside the JSON API: the five methods answer what the
 * JSON routes answer for the same data; errors are status codes with the routes' messages;
 * deadlines stop the work; authentication, health, reflection and TLS (ALPN h2) work.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import pino from 'pino';
import protobuf from 'protobufjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { freshDatabase } from '../helpers/db.js';
import { debian12, dpkgStatus } from '../helpers/dpkg-status.js';
import { startLayerServer, type LayerServer } from '../helpers/layer-server.js';
import { databaseUrl } from '../helpers/process.js';
import { relayedDatabase } from '../helpers/relay.js';
import { gzip, tarball } from '../helpers/tarball.js';
import { whenDone } from '../helpers/when-done.js';

const PROTO = fileURLToPath(new URL('../../proto/ancestry.proto', import.meta.url));
const HEALTH_PROTO = fileURLToPath(new URL('../../node_modules/grpc-health-check/proto/health/v1/health.proto', import.meta.url));
const REFLECTION_PROTO = fileURLToPath(
  new URL('../../node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto', import.meta.url),
);

const load = (file: string) =>
  grpc.loadPackageDefinition(protoLoader.loadSync(file, { keepCase: true, longs: Number, enums: String, defaults: false, arrays: true }));
const clair = (load(PROTO).coreos as grpc.GrpcObject).clair as Record<string, grpc.ServiceClientConstructor>;

type Message = Record<string, any>;

/**
 * GetAncestry as a client of Clair's early v3 messages calls it (with_features and
 * with_vulnerabilities), with the request and answer messages proto/ancestry.proto names for it;
 * a Buffer is sent as it is.
 */
function clairEarlyGetAncestry(target: string): (request: Message | Buffer) => Promise<Message> {
  const root = new protobuf.Root().loadSync(PROTO, { keepCase: true });
  const [request, response] = ['ClairEarlyGetAncestryRequest', 'ClairEarlyGetAncestryResponse'].map((name) =>
    root.lookupType(`coreos.clair.${name}`),
  ) as [protobuf.Type, protobuf.Type];
  const encode = (type: protobuf.Type) => (message: Message) => Buffer.from(type.encode(type.fromObject(message)).finish());
  const decode = (type: protobuf.Type) => (bytes: Buffer) => type.toObject(type.decode(bytes), { longs: Number, arrays: true });
  const Client = grpc.makeGenericClientConstructor(
    {
      GetAncestry: {
        path: '/coreos.clair.AncestryService/GetAncestry',
        requestStream: false,
        responseStream: false,
        requestSerialize: (message: Message | Buffer) => (Buffer.isBuffer(message) ? message : encode(request)(message)),
        requestDeserialize: decode(request),
        responseSerialize: encode(response),
        responseDeserialize: decode(response),
      },
    },
    'AncestryService',
  );
  const client = new Client(target, grpc.credentials.createInsecure());
  whenDone(() => client.close());
  return (message) => call(client, 'GetAncestry', message);
}

type UnaryMethod = (
  request: Message,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, response: Message) => void,
) => void;

/** Calls a unary method; resolves with the response, rejects with the ServiceError. */
function call(
  client: grpc.Client,
  method: string,
  request: Message,
  options: { metadata?: grpc.Metadata; deadline?: Date } = {},
): Promise<Message> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, UnaryMethod>)[method]!.bind(client);
    fn(
      request,
      options.metadata ?? new grpc.Metadata(),
      options.deadline ? { deadline: options.deadline } : {},
      (err: grpc.ServiceError | null, res: Message) => (err ? reject(err) : resolve(res)),
    );
  });
}

async function failure(promise: Promise<unknown>): Promise<grpc.ServiceError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'the call should have failed').toBeDefined();
  return err as grpc.ServiceError;
}

/** A gRPC message in the proto3 JSON shape the JSON routes answer with: defaults left out, Timestamps as RFC 3339. */
function jsonShape(value: unknown, key = ''): unknown {
  if (key === 'last_update_time' && value && typeof value === 'object') {
    const t = value as { seconds: number; nanos?: number };
    return new Date(t.seconds * 1000 + (t.nanos ?? 0) / 1e6).toISOString().replace('.000Z', 'Z');
  }
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map((v) => jsonShape(v));
  if (value && typeof value === 'object') {
    const out: Message = {};
    for (const [k, v] of Object.entries(value)) {
      const shaped = jsonShape(v, k);
      if (shaped !== undefined && shaped !== '' && shaped !== 0 && shaped !== false) out[k] = shaped;
    }
    return Object.keys(out).length === 0 && key !== '' ? undefined : out;
  }
  return value;
}

const BASE = tarball([
  { path: 'etc/os-release', content: debian12 },
  {
    path: 'var/lib/dpkg/status',
    content: dpkgStatus({ name: 'libssl3', version: '3.0.11-1~deb12u2', source: 'openssl' }, { name: 'bash', version: '5.2.15-2+b2' }),
  },
]);
const APP = tarball([{ path: 'srv/app.js', content: '1' }]);
const TOKEN = 'Bearer layer-token';

interface Running extends RunningServer {
  url: string;
  logs: Message[];
  /** Resolves with the first log entry (already written or still to come) that matches. */
  logged(match: (entry: Message) => boolean): Promise<Message>;
}

/** A running server; `api` is YAML under clair.api (indented four spaces). */
async function running(api = '', connection?: Awaited<ReturnType<typeof freshDatabase>>): Promise<Running> {
  const url = databaseUrl(connection ?? (await freshDatabase()));
  const config = parseConfig(
    `clair:\n  database:\n    options:\n      source: "${url}"\n  api:\n    port: 0\n    healthport: 0\n${api}  updater:\n    interval: 0\n`,
  );
  const logs: Message[] = [];
  const waiting: Array<{ match: (entry: Message) => boolean; resolve: (entry: Message) => void }> = [];
  const log = pino(
    { level: 'info' },
    {
      write(line: string) {
        const entry = JSON.parse(line) as Message;
        logs.push(entry);
        for (const w of waiting.filter((w) => w.match(entry))) w.resolve(entry);
      },
    },
  );
  const server = await startServer(config, log);
  whenDone(() => server.stop());
  const logged = (match: (entry: Message) => boolean) =>
    new Promise<Message>((resolve) => {
      const seen = logs.find(match);
      if (seen) resolve(seen);
      else waiting.push({ match, resolve });
    });
  return { ...server, url, logs, logged };
}

describe('gRPC on the API port', () => {
  let server: Running;
  let layers: LayerServer;
  let api: string;
  let ancestries: grpc.Client;
  let notifications: grpc.Client;
  let status: grpc.Client;

  const json = async (path: string, init?: RequestInit) => (await fetch(`${api}${path}`, init)).json() as Promise<Message>;
  const layer = (name: string) => ({ hash: `sha256:${name}`, path: layers.url(`/${name}`), headers: { Authorization: TOKEN } });

  beforeAll(async () => {
    layers = await startLayerServer();
    layers.serve('/base', gzip(BASE), { authorization: TOKEN });
    layers.serve('/app', gzip(APP), { authorization: TOKEN });
    server = await running('');
    api = `http://127.0.0.1:${server.apiPort}`;
    const target = `127.0.0.1:${server.apiPort}`;
    ancestries = new clair.AncestryService!(target, grpc.credentials.createInsecure());
    notifications = new clair.NotificationService!(target, grpc.credentials.createInsecure());
    status = new clair.StatusService!(target, grpc.credentials.createInsecure());
    whenDone(() => [ancestries, notifications, status].forEach((c) => c.close()));
    const vulnerability = { Name: 'CVE-2024-0727', Severity: 'Low', FixedIn: [{ Name: 'openssl', Version: '3.0.14-1~deb12u1' }] };
    await fetch(`${api}/v1/namespaces/debian%3A12/vulnerabilities`, {
      method: 'POST',
      body: JSON.stringify({ Vulnerability: vulnerability }),
    });
  });

  it('answers GetStatus over gRPC and GET /status over HTTP/1.1 on the same port, at the same time, alike', async () => {
    const [viaGrpc, viaJson] = await Promise.all([call(status, 'GetStatus', {}), json('/status')]);
    expect(jsonShape(viaGrpc)).toEqual(viaJson);
    expect(viaGrpc.status.listers).toEqual(['dpkg', 'rpm', 'apk']);
  });

  it('PostAncestry scans the layers; GetAncestry answers what GET /ancestry answers', async () => {
    const posted = await call(ancestries, 'PostAncestry', {
      ancestry_name: 'team/app',
      format: 'Docker',
      layers: [layer('base'), layer('app')],
    });
    // The status carries its time only (Clair v3.0.0-pre1 clients cannot decode the names).
    expect([posted.status.listers, posted.status.detectors]).toEqual([[], []]);
    const { clair_pre1_layers, ...ancestry } = (await call(ancestries, 'GetAncestry', { ancestry_name: 'team/app' })).ancestry;
    const viaGrpc = jsonShape({ ancestry }) as Message;
    const viaJson = await json(`/ancestry/${encodeURIComponent('team/app')}`);
    expect(viaGrpc.ancestry).toEqual(viaJson.ancestry);
    expect(viaJson.status.detectors).toContain('os-release');
    // The same layers in Clair v3.0.0-pre1's shape: the namespace as a message.
    expect(clair_pre1_layers.map((l: Message) => l.layer.hash)).toEqual(['sha256:base', 'sha256:app']);
    expect(clair_pre1_layers[0].detected_features.find((f: Message) => f.name === 'openssl')).toMatchObject({
      namespace: { name: 'debian:12' },
      vulnerabilities: [expect.objectContaining({ name: 'CVE-2024-0727', fixed_by: '3.0.14-1~deb12u1' })],
    });
    const openssl = ancestry.layers[0].detected_features.find((f: Message) => f.name === 'openssl');
    expect(openssl.vulnerabilities).toEqual([
      expect.objectContaining({ name: 'CVE-2024-0727', severity: 'Low', fixed_by: '3.0.14-1~deb12u1', namespace_name: 'debian:12' }),
    ]);
    // Layers were downloaded with the headers the request gave.
    expect(layers.requests.filter((r) => r.path === '/base').map((r) => r.headers.authorization)).toEqual([TOKEN]);
  });

  it("answers a request with Clair's early flags with every feature at field 2 and the layer hashes at 3, beside the contract's fields", async () => {
    const getAncestry = clairEarlyGetAncestry(`127.0.0.1:${server.apiPort}`);
    const early = await getAncestry({ ancestry_name: 'team/app', with_vulnerabilities: true });
    const viaJson = await json(`/ancestry/${encodeURIComponent('team/app')}`);
    const { features, layer_hashes, ...contract } = early.ancestry;
    // The contract's fields (the layers at 6, as in GetAncestryResponse) and, here, the whole status.
    expect(jsonShape({ ancestry: contract, status: early.status })).toEqual(viaJson);
    expect(layer_hashes).toEqual([{ hash: 'sha256:base' }, { hash: 'sha256:app' }]);
    expect(jsonShape(features)).toEqual(viaJson.ancestry.layers.flatMap((l: Message) => l.detected_features ?? []));
    expect(features.find((f: Message) => f.name === 'openssl').vulnerabilities).toEqual([
      expect.objectContaining({ name: 'CVE-2024-0727', fixed_by: '3.0.14-1~deb12u1' }),
    ]);
    // Each call's log line names the client as it names itself.
    const completed = await server.logged((e) => e.msg === 'grpc call completed' && e.method === 'AncestryService/GetAncestry');
    expect(completed.userAgent).toMatch(/^grpc-node-js\/\d/);
    // A request that does not decode (field 5 with wire type 7, which protobuf does not have) is the client's error.
    const undecodable = await failure(getAncestry(Buffer.from([0x2f])));
    expect([undecodable.code, undecodable.details]).toEqual([
      grpc.status.INVALID_ARGUMENT,
      'the request is not a valid coreos.clair.ClairEarlyGetAncestryRequest message: the message at byte 0: field 5 has wire type 7, which does not exist',
    ]);
  });

  it('GetNotification pages each side as GET /notifications does; MarkNotificationAsRead marks it read', async () => {
    await call(ancestries, 'PostAncestry', { ancestry_name: 'team/other', format: 'Docker', layers: [layer('base')] });
    await fetch(`${api}/v1/namespaces/debian%3A12/vulnerabilities/CVE-2024-0727`, {
      method: 'PUT',
      body: JSON.stringify({ Vulnerability: { Severity: 'High' } }),
    });
    const name = await latestNotification();
    const pages = async (via: 'grpc' | 'json') => {
      const seen: Array<{ index: number; name: string }> = [];
      let token = '';
      for (;;) {
        const page =
          via === 'grpc'
            ? await call(notifications, 'GetNotification', { name, limit: 1, new_vulnerability_page: token })
            : await json(`/notifications/${name}?limit=1${token ? `&new_vulnerability_page=${encodeURIComponent(token)}` : ''}`);
        const side = page.notification.new;
        expect(side.vulnerability).toMatchObject({ name: 'CVE-2024-0727', severity: 'High' });
        seen.push(...side.ancestries);
        if (!side.next_page) return seen;
        token = side.next_page;
      }
    };
    const viaGrpc = await pages('grpc');
    expect(viaGrpc.map((a) => a.name)).toEqual(['team/app', 'team/other']);
    expect(viaGrpc).toEqual(await pages('json'));
    expect(viaGrpc[1]!.index).toBeGreaterThan(viaGrpc[0]!.index);
    const whole = await call(notifications, 'GetNotification', { name });
    const { notification } = jsonShape(whole) as Message;
    const viaJson = (await json(`/notifications/${name}`)).notification;
    for (const side of ['old', 'new']) {
      expect({ ...notification[side], current_page: undefined }).toEqual({ ...viaJson[side], current_page: undefined });
    }
    expect(await call(notifications, 'MarkNotificationAsRead', { name })).toEqual({});
    expect((await json(`/notifications/${name}`)).notification.deleted).toMatch(/^\d+$/);
  });

  async function latestNotification(): Promise<string> {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    const { rows } = await client.query('SELECT name FROM notification ORDER BY id DESC LIMIT 1');
    await client.end();
    return rows[0].name as string;
  }

  it('PostAncestry takes a layer named by its uncompressed digest (diff_id), and refuses one named by neither digest', async () => {
    const diffId = `sha256:${createHash('sha256').update(BASE).digest('hex')}`;
    const blobDigest = `sha256:${createHash('sha256').update(gzip(BASE)).digest('hex')}`;
    const byDiffId = { hash: diffId, path: layers.url('/base'), headers: { Authorization: TOKEN } };
    await call(ancestries, 'PostAncestry', { ancestry_name: 'team/by-diff-id', format: 'Docker', layers: [byDiffId] });
    const { ancestry } = await call(ancestries, 'GetAncestry', { ancestry_name: 'team/by-diff-id' });
    expect(ancestry.layers.map((l: Message) => l.layer.hash)).toEqual([diffId]);
    const wrongDigest = `sha256:${'0'.repeat(64)}`;
    const err = await failure(
      call(ancestries, 'PostAncestry', { ancestry_name: 'team/wrong', format: 'Docker', layers: [{ ...byDiffId, hash: wrongDigest }] }),
    );
    expect([err.code, err.details]).toEqual([
      grpc.status.INVALID_ARGUMENT,
      `layers[0] (${wrongDigest}): layer ${wrongDigest}: the bytes received have the digest ${blobDigest}, and uncompressed the digest ${diffId}; nothing was stored`,
    ]);
  });

  it("answers errors as status codes with the JSON routes' messages", async () => {
    const notFound = await failure(call(ancestries, 'GetAncestry', { ancestry_name: 'nope' }));
    expect([notFound.code, notFound.details]).toEqual([grpc.status.NOT_FOUND, "requested ancestry 'nope' is not found"]);
    expect((await json('/ancestry/nope')).message).toBe(notFound.details);
    const noNotification = await failure(call(notifications, 'GetNotification', { name: 'nope' }));
    expect(noNotification.code).toBe(grpc.status.NOT_FOUND);
    for (const [request, message] of [
      [{ format: 'Docker', layers: [layer('base')] }, 'ancestry_name is required'],
      [{ ancestry_name: 'x', format: 'tar', layers: [layer('base')] }, 'format "tar" is not supported: use Docker (or OCI) or ACI'],
      [{ ancestry_name: 'x', format: 'Docker', layers: [] }, "layers is required: list the ancestry's layers, parent first"],
      [
        { ancestry_name: 'x', format: 'Docker', layers: [{ hash: 'h', path: layers.url('/missing') }] },
        /^layers\[0\] \(h\): could not download the layer: .* answered 404/,
      ],
    ] as const) {
      const err = await failure(call(ancestries, 'PostAncestry', request));
      expect(err.code, JSON.stringify(request)).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toMatch(message);
    }
    const badLimit = await failure(call(notifications, 'GetNotification', { name: 'x', limit: 2000 }));
    expect([badLimit.code, badLimit.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'limit must be an integer from 1 to 1000 (got 2000)']);
    const badToken = await failure(call(notifications, 'GetNotification', { name: 'x', old_vulnerability_page: 'garbage' }));
    expect(badToken.code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('serves the standard health service and server reflection', async () => {
    const health = new ((load(HEALTH_PROTO).grpc as any).health.v1.Health as grpc.ServiceClientConstructor)(
      `127.0.0.1:${server.apiPort}`,
      grpc.credentials.createInsecure(),
    );
    whenDone(() => health.close());
    expect(await call(health, 'check', { service: '' })).toEqual({ status: 'SERVING' });
    expect(await call(health, 'check', { service: 'coreos.clair.AncestryService' })).toEqual({ status: 'SERVING' });
    const reflection = new ((load(REFLECTION_PROTO).grpc as any).reflection.v1.ServerReflection as grpc.ServiceClientConstructor)(
      `127.0.0.1:${server.apiPort}`,
      grpc.credentials.createInsecure(),
    );
    whenDone(() => reflection.close());
    const stream = (reflection as any).ServerReflectionInfo();
    const answer = new Promise<Message>((resolve, reject) => stream.once('data', resolve).once('error', reject));
    stream.write({ list_services: '' });
    const listed = (await answer).list_services_response.service.map((s: Message) => s.name);
    stream.end();
    expect(listed).toEqual(
      expect.arrayContaining(['coreos.clair.AncestryService', 'coreos.clair.NotificationService', 'coreos.clair.StatusService']),
    );
  });

  it('answers every request message it cannot decode with INVALID_ARGUMENT and why, on every method', async () => {
    const methods = {
      GetAncestry: '/coreos.clair.AncestryService/GetAncestry',
      PostAncestry: '/coreos.clair.AncestryService/PostAncestry',
      GetNotification: '/coreos.clair.NotificationService/GetNotification',
      MarkNotificationAsRead: '/coreos.clair.NotificationService/MarkNotificationAsRead',
      GetStatus: '/coreos.clair.StatusService/GetStatus',
    };
    const identity = (bytes: Buffer) => bytes;
    const Raw = grpc.makeGenericClientConstructor(
      Object.fromEntries(
        Object.entries(methods).map(([name, path]) => [
          name,
          { path, requestStream: false, responseStream: false, requestSerialize: identity, responseDeserialize: identity },
        ]),
      ) as grpc.ServiceDefinition,
      'Raw',
    );
    const raw = new Raw(`127.0.0.1:${server.apiPort}`, grpc.credentials.createInsecure());
    whenDone(() => raw.close());
    const bytes = (...b: number[]) => Buffer.from(b);
    // Field 15 is no field of any request: these bytes are broken whatever the message.
    const anyMessage: Array<[string, Buffer]> = [
      ['a tag cut short', bytes(0x80)],
      ['a length past the end', bytes(0x0a, 0x05, 0x61, 0x62)],
      ['wire type 6', bytes(0x0e, 0x00)],
      ['wire type 7', bytes(0x0f)],
      ['field number 0', bytes(0x02, 0x00)],
      ['a varint cut short', bytes(0x78, 0xff)],
      ['a varint of 11 bytes', bytes(0x78, ...Array<number>(10).fill(0xff), 0x01)],
      ['a varint over 64 bits', bytes(0x78, ...Array<number>(9).fill(0xff), 0x02)],
      ['a 32-bit value cut short', bytes(0x7d, 0x01, 0x02)],
      ['a 64-bit value cut short', bytes(0x79, 0x01)],
      ['a group that never ends', bytes(0x7b, 0x08, 0x01)],
      ['an end-group without its start', bytes(0x7c)],
    ];
    // Field 1 is a string in every request but GetStatus's.
    const stringAtField1: Array<[string, Buffer]> = [
      ['a string sent as a varint', bytes(0x08, 0x01)],
      ['a string sent as 32 bits', bytes(0x0d, 0x01, 0x02, 0x03, 0x04)],
      ['a string of invalid UTF-8', bytes(0x0a, 0x02, 0xc3, 0x28)],
      ['a string with an overlong encoding', bytes(0x0a, 0x02, 0xc0, 0x80)],
      ['a string with a UTF-16 surrogate', bytes(0x0a, 0x03, 0xed, 0xa0, 0x80)],
    ];
    const cases: Array<[keyof typeof methods, string, Buffer]> = [
      ...Object.keys(methods).flatMap((m) => anyMessage.map(([what, b]) => [m, what, b] as [keyof typeof methods, string, Buffer])),
      ...(['GetAncestry', 'PostAncestry', 'GetNotification', 'MarkNotificationAsRead'] as const).flatMap((m) =>
        stringAtField1.map(([what, b]) => [m, what, b] as [keyof typeof methods, string, Buffer]),
      ),
      ['GetAncestry', 'with_features sent length-delimited', bytes(0x1a, 0x00)],
      ['GetNotification', 'limit sent length-delimited', bytes(0x1a, 0x00)],
      ['GetNotification', 'limit cut short', bytes(0x18, 0x80)],
      ['PostAncestry', 'a layer whose hash is cut short', bytes(0x1a, 0x02, 0x0a, 0x05)],
      ['PostAncestry', 'a layer sent as a varint', bytes(0x18, 0x01)],
      ['PostAncestry', 'a header name of invalid UTF-8', bytes(0x1a, 0x06, 0x1a, 0x04, 0x0a, 0x02, 0xc3, 0x28)],
      ['PostAncestry', 'a header value of invalid UTF-8', bytes(0x1a, 0x05, 0x1a, 0x03, 0x12, 0x01, 0xff)],
    ];
    expect(cases.length).toBeGreaterThan(80);
    for (const [method, what, request] of cases) {
      const err = await failure(call(raw, method, request as unknown as Message));
      expect([err.code, grpc.status[err.code]], `${method}: ${what}`).toEqual([grpc.status.INVALID_ARGUMENT, 'INVALID_ARGUMENT']);
      expect(err.details, `${method}: ${what}`).toMatch(/^the request is not a valid coreos\.clair\.\w+ message: \S/);
    }
    const invalidUtf8 = await failure(call(raw, 'MarkNotificationAsRead', bytes(0x0a, 0x02, 0xc3, 0x28) as unknown as Message));
    expect(invalidUtf8.details).toBe(
      'the request is not a valid coreos.clair.MarkNotificationAsReadRequest message: name is not valid UTF-8',
    );

    // Fields a message does not declare are skipped, as by every protobuf parser: these are well-formed.
    const unknownFields = bytes(0x78, 0x01, 0x7a, 0x01, 0xff, 0x7b, 0x08, 0x01, 0x7c, 0x7d, 1, 2, 3, 4, 0x79, 1, 2, 3, 4, 5, 6, 7, 8);
    await call(raw, 'GetStatus', unknownFields as unknown as Message);
    const named = Buffer.concat([bytes(0x0a, 0x04), Buffer.from('nope'), unknownFields]);
    expect((await failure(call(raw, 'GetAncestry', named as unknown as Message))).code).toBe(grpc.status.NOT_FOUND);
    const metrics = await (await fetch(`${api}/metrics`)).text();
    expect(metrics).toMatch(/tarsier_grpc_requests_total\{method="NotificationService\/GetNotification",code="INVALID_ARGUMENT"\} \d+/);
  });

  it('counts calls by method and code', async () => {
    const metrics = await (await fetch(`${api}/metrics`)).text();
    expect(metrics).toMatch(/tarsier_grpc_requests_total\{method="StatusService\/GetStatus",code="OK"\} \d+/);
    expect(metrics).toMatch(/tarsier_grpc_requests_total\{method="AncestryService\/GetAncestry",code="NOT_FOUND"\} \d+/);
  });
});

/** A socket's whole answer once the server closes it (for requests the HTTP edge refuses). */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => bytes && socket.write(bytes));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
  });
}

describe('gRPC at the edges of the shared port', () => {
  it('needs the API credential in the authorization metadata when api.auth is on; health needs none', async () => {
    const server = await running('    auth:\n      tokens: [grpc-token]\n');
    const target = `127.0.0.1:${server.apiPort}`;
    const status = new clair.StatusService!(target, grpc.credentials.createInsecure());
    whenDone(() => status.close());
    const refused = await failure(call(status, 'GetStatus', {}));
    expect(refused.code).toBe(grpc.status.UNAUTHENTICATED);
    const viaJson = (await (await fetch(`http://${target}/status`)).json()) as Message;
    expect(refused.details).toBe(viaJson.message);
    const wrong = new grpc.Metadata();
    wrong.set('authorization', 'Bearer not-the-token');
    expect((await failure(call(status, 'GetStatus', {}, { metadata: wrong }))).code).toBe(grpc.status.UNAUTHENTICATED);
    const right = new grpc.Metadata();
    right.set('authorization', 'Bearer grpc-token');
    expect((await call(status, 'GetStatus', {}, { metadata: right })).status.listers).toContain('dpkg');
    const health = new ((load(HEALTH_PROTO).grpc as any).health.v1.Health as grpc.ServiceClientConstructor)(
      target,
      grpc.credentials.createInsecure(),
    );
    whenDone(() => health.close());
    expect(await call(health, 'check', { service: '' })).toEqual({ status: 'SERVING' });
  });

  it("stops the scan when the client's deadline passes: the download is closed and nothing is stored", async () => {
    const layers = await startLayerServer();
    layers.serve('/stalled', gzip(BASE), { stall: true });
    const server = await running();
    const ancestries = new clair.AncestryService!(`127.0.0.1:${server.apiPort}`, grpc.credentials.createInsecure());
    whenDone(() => ancestries.close());
    const request = { ancestry_name: 'slow/app', format: 'Docker', layers: [{ hash: 'sha256:stalled', path: layers.url('/stalled') }] };
    const deadline = new Date(Date.now() + 1500);
    const err = await failure(call(ancestries, 'PostAncestry', request, { deadline }));
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    // The server saw the call end, then lets go of the download.
    const completed = await server.logged((e) => e.msg === 'grpc call completed' && e.method === 'AncestryService/PostAncestry');
    expect(completed.code).toBe('CANCELLED');
    expect(layers.requests.map((r) => r.path)).toEqual(['/stalled']);
    await expect.poll(() => layers.connections(), { timeout: 10_000 }).toBe(0);
    expect((await failure(call(ancestries, 'GetAncestry', { ancestry_name: 'slow/app' }))).code).toBe(grpc.status.NOT_FOUND);
  });

  it('stops a call still unfinished after api.timeout with UNAVAILABLE, as the JSON routes answer 503', async () => {
    const layers = await startLayerServer();
    layers.serve('/stalled', gzip(BASE), { stall: true });
    const server = await running('    timeout: 1s\n');
    const ancestries = new clair.AncestryService!(`127.0.0.1:${server.apiPort}`, grpc.credentials.createInsecure());
    whenDone(() => ancestries.close());
    const request = { ancestry_name: 'slow/app', format: 'Docker', layers: [{ hash: 'sha256:stalled', path: layers.url('/stalled') }] };
    const err = await failure(call(ancestries, 'PostAncestry', request));
    expect([err.code, err.details]).toEqual([
      grpc.status.UNAVAILABLE,
      'the server did not finish the request within the configured timeout (clair.api.timeout)',
    ]);
    await expect.poll(() => layers.connections(), { timeout: 10_000 }).toBe(0);
  });

  it('answers UNAVAILABLE while the database is unreachable, INTERNAL for a server fault, and recovers', async () => {
    const database = await freshDatabase();
    const relay = await relayedDatabase(database);
    const server = await running('', relay.connection);
    const ancestries = new clair.AncestryService!(`127.0.0.1:${server.apiPort}`, grpc.credentials.createInsecure());
    whenDone(() => ancestries.close());
    expect((await failure(call(ancestries, 'GetAncestry', { ancestry_name: 'a' }))).code).toBe(grpc.status.NOT_FOUND);

    relay.cut();
    const down = await failure(call(ancestries, 'GetAncestry', { ancestry_name: 'a' }));
    expect([down.code, down.details]).toEqual([grpc.status.UNAVAILABLE, 'the database is unavailable; retry shortly']);
    relay.restore();
    expect((await failure(call(ancestries, 'GetAncestry', { ancestry_name: 'a' }))).code).toBe(grpc.status.NOT_FOUND);

    // A fault of the server's own (its schema broken under it): INTERNAL, without the details.
    const pg = (await import('pg')).default;
    const admin = new pg.Client({ connectionString: databaseUrl(database) });
    await admin.connect();
    whenDone(() => admin.end());
    await admin.query('ALTER TABLE ancestry RENAME TO ancestry_moved');
    const fault = await failure(call(ancestries, 'GetAncestry', { ancestry_name: 'a' }));
    expect([fault.code, fault.details]).toEqual([grpc.status.INTERNAL, 'internal server error; the server log has the details']);
    expect(server.logs.some((e) => e.msg === 'request failed' && JSON.stringify(e.err).includes('ancestry'))).toBe(true);
    await admin.query('ALTER TABLE ancestry_moved RENAME TO ancestry');
    expect((await failure(call(ancestries, 'GetAncestry', { ancestry_name: 'a' }))).code).toBe(grpc.status.NOT_FOUND);
  });

  it('keeps the HTTP header deadline on the shared port, and closes connections that never say what they speak', async () => {
    const server = await running('    headertimeout: 1s\n');
    const slow = await rawExchange(server.apiPort, 'GET /v1/namespaces HTTP/1.1\r\nHost: t\r\nX-Slow: ');
    expect(slow).toMatch(/^HTTP\/1\.1 408 /);
    expect(slow).toContain('the request did not arrive in time');
    expect(await rawExchange(server.apiPort, '')).toBe('');
    // A prefix of the HTTP/2 preface that stops: closed too, with nothing answered.
    expect(await rawExchange(server.apiPort, 'PRI * HTTP/2.0\r\n')).toBe('');
  });

  it('serves gRPC alone on api.grpcport too', async () => {
    const server = await running('    grpcport: 0\n');
    expect(server.grpcPort).toBeGreaterThan(0);
    expect(server.grpcPort).not.toBe(server.apiPort);
    const status = new clair.StatusService!(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure());
    whenDone(() => status.close());
    expect((await call(status, 'GetStatus', {})).status.listers).toContain('dpkg');
  });

  it('stops with gRPC channels and HTTP keep-alive connections open; calls after that fail UNAVAILABLE', async () => {
    const server = await running();
    const status = new clair.StatusService!(`127.0.0.1:${server.apiPort}`, grpc.credentials.createInsecure());
    whenDone(() => status.close());
    await call(status, 'GetStatus', {});
    const agent = new http.Agent({ keepAlive: true });
    whenDone(() => agent.destroy());
    await new Promise<void>((resolve, reject) =>
      http
        .get({ host: '127.0.0.1', port: server.apiPort, path: '/status', agent }, (res) => res.resume().on('end', resolve))
        .on('error', reject),
    );
    await server.stop();
    expect(server.logs.map((e) => e.msg)).toContain('tarsier stopped');
    expect((await failure(call(status, 'GetStatus', {}))).code).toBe(grpc.status.UNAVAILABLE);
  });
});
