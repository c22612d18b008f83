/**
 * The HTTP edge, through a real server on loopback: what real clients send (long names, raw
 * bytes Node's parser refuses, bodies that never arrive) is answered in the envelope of the route
 * the URL belongs to, with the request id, logged once and counted.
 */
import { createHash } from 'node:crypto';
import net from 'node:net';
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { debian12, dpkgStatus } from '../helpers/dpkg-status.js';
import { debianLayer } from '../helpers/oci-image.js';
import { startLayerServer, type LayerServer } from '../helpers/layer-server.js';
import { gzip, tarball } from '../helpers/tarball.js';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
  text: string;
}

interface Edge {
  t: TestApp;
  port: number;
  /** Every log line of the app. */
  logs: Array<Record<string, unknown>>;
  /** Writes bytes to a new connection and reads the answer until the server closes it. */
  raw(bytes: string): Promise<RawAnswer>;
  /** A well-formed request (Connection: close), for the cases Node's parser accepts. */
  send(method: string, path: string, options?: { headers?: Record<string, string>; body?: string }): Promise<RawAnswer>;
}

/** The V1 and ancestry envelopes, exactly: nothing else in an error body. */
const expectV1Error = (res: RawAnswer, status: number, message?: string | RegExp) => {
  expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type']).toBe('application/json;charset=utf-8');
  expect(Object.keys(res.body)).toEqual(['Error']);
  expect(Object.keys(res.body.Error)).toEqual(['Message']);
  if (message !== undefined) expect(res.body.Error.Message).toMatch(message);
};
const expectAncestryError = (res: RawAnswer, status: number, code: number, message?: string | RegExp) => {
  expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type']).toBe('application/json;charset=utf-8');
  expect(Object.keys(res.body).sort()).toEqual(['code', 'error', 'message']);
  expect(res.body.code).toBe(code);
  expect(res.body.error).toBe(res.body.message);
  if (message !== undefined) expect(res.body.message).toMatch(message);
};

function parse(raw: string): RawAnswer {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).split('\r\n');
  const status = Number(head[0]!.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const text = raw.slice(split + 4);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status, headers, body, text };
}

/** Opens a connection, sends what write sends, and reads the answer until the server closes the connection. */
function exchange(port: number, write: (socket: net.Socket) => void | Promise<void>): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => void Promise.resolve(write(socket)).catch(reject));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('close', () => resolve(parse(Buffer.concat(chunks).toString('utf8'))));
    socket.on('error', reject);
  });
}

async function edge(
  yaml = '  api:\n    bodytimeout: 300ms\n    headertimeout: 400ms',
  options: { grpc?: { drainMs: number } } = {},
): Promise<Edge> {
  const logs: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const t = await testApp({ yaml, log, ...options });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const port = (t.app.server.address() as net.AddressInfo).port;
  const raw = (bytes: string): Promise<RawAnswer> => exchange(port, (socket) => void socket.write(bytes));
  const send: Edge['send'] = (method, path, options = {}) => {
    const headers: Record<string, string> = { host: 'tarsier', connection: 'close', ...options.headers };
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    const lines = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    return raw(`${method} ${path} HTTP/1.1\r\n${lines}\r\n${options.body ?? ''}`);
  };
  return { t, port, logs, raw, send };
}

/** Percent-encodings that are not UTF-8 (or not percent-encodings at all), as path segments. */
const BROKEN_ENCODINGS = [
  '%',
  '%2',
  'a%',
  '%%',
  '%G0',
  '%0G',
  '%zz',
  '%%41',
  '%u0041',
  '%80',
  '%BF',
  '%C0',
  '%C3',
  '%C3%28',
  '%C0%80',
  '%C1%BF',
  '%E0%80%80',
  '%E2%82',
  '%E2%28%A1',
  '%ED%A0%80',
  '%ED%BF%BF',
  '%F0%9F%98',
  '%F4%90%80%80',
  '%F5%80%80%80',
  '%F8%88%80%80%80',
  '%FE',
  '%FF',
];

describe('names in paths', () => {
  let e: Edge;
  let registry: LayerServer;
  beforeAll(async () => {
    e = await edge();
    registry = await startLayerServer();
    registry.serve(
      '/base.tar.gz',
      gzip(
        tarball([
          { path: 'etc/os-release', content: debian12 },
          { path: 'var/lib/dpkg/status', content: dpkgStatus({ name: 'bash', version: '5.2.15-2+b2' }) },
        ]),
      ),
    );
  });

  const postLayer = (name: string) =>
    e.send('POST', '/v1/layers', { body: JSON.stringify({ Layer: { Name: name, Path: registry.url('/base.tar.gz'), Format: 'Docker' } }) });

  it("round-trips klar's 128-hex layer name, a 1,024-character one and an encoded one with / and : (POST, GET, DELETE)", async () => {
    const hex = createHash('sha512').update('klar').digest('hex');
    for (const name of [hex, 'q'.repeat(1024), 'registry.example/team/app:sha256:0e5d']) {
      expect((await postLayer(name)).status).toBe(201);
      const got = await e.send('GET', `/v1/layers/${encodeURIComponent(name)}?features`);
      expect(got.status, got.text).toBe(200);
      expect(got.body.Layer.Name).toBe(name);
      expect(got.body.Layer.Features.map((f: { Name: string }) => f.Name)).toEqual(['bash']);
      expect((await e.send('DELETE', `/v1/layers/${encodeURIComponent(name)}`)).status).toBe(200);
      expect((await e.send('GET', `/v1/layers/${encodeURIComponent(name)}`)).status).toBe(404);
    }
  });

  it('round-trips a 1,000-character ancestry name (POST, GET)', async () => {
    const name = `team/app:${'a'.repeat(991)}`;
    const posted = await e.send('POST', '/ancestry', {
      body: JSON.stringify({
        ancestry_name: name,
        format: 'Docker',
        layers: [{ hash: 'sha256:base', path: registry.url('/base.tar.gz') }],
      }),
    });
    expect(posted.status, posted.text).toBe(200);
    const got = await e.send('GET', `/ancestry/${encodeURIComponent(name)}`);
    expect(got.status, got.text).toBe(200);
    expect(got.body.ancestry.name).toBe(name);
  });

  it('refuses a 2,000-character name with a 400 that states the limit, in each API, in paths and bodies', async () => {
    const long = 'n'.repeat(2000);
    expectV1Error(await e.send('GET', `/v1/layers/${long}`), 400, 'a name in the URL path is longer than the 1024-character limit');
    expectV1Error(await e.send('DELETE', `/v1/layers/${long}`), 400, /1024-character limit/);
    expectV1Error(await e.send('GET', `/v1/namespaces/debian%3A12/vulnerabilities/${long}`), 400, /1024-character limit/);
    expectV1Error(await e.send('GET', `/v1/notifications/${long}`), 400, /1024-character limit/);
    expectV1Error(await postLayer(long), 400, /^Layer\.Name must be at most 1024 characters long/);
    expectAncestryError(await e.send('GET', `/ancestry/${long}`), 400, 3, /1024-character limit/);
    expectAncestryError(await e.send('DELETE', `/notifications/${long}`), 400, 3, /1024-character limit/);
    expectAncestryError(
      await e.send('POST', '/ancestry', {
        body: JSON.stringify({ ancestryName: long, format: 'Docker', layers: [{ hash: 'h', path: registry.url('/base.tar.gz') }] }),
      }),
      400,
      3,
      'ancestry_name is longer than the 1024-character limit',
    );
    expect((await e.t.pool.query('SELECT count(*)::int AS n FROM layer')).rows[0].n).toBe(0);
  });
});

describe('errors below the routes', () => {
  let e: Edge;
  beforeAll(async () => {
    e = await edge();
  });

  it(`answers ${BROKEN_ENCODINGS.length} broken percent-encodings with 400 in each API's envelope`, async () => {
    for (const broken of BROKEN_ENCODINGS) {
      for (const path of [`/v1/layers/x${broken}`, `/v1/namespaces/${broken}/vulnerabilities?limit=1`, `/v1/notifications/${broken}y`]) {
        expectV1Error(await e.send('GET', path), 400, /percent-encoding/);
      }
      for (const path of [`/ancestry/${broken}`, `/notifications/${broken}`]) {
        expectAncestryError(await e.send('GET', path), 400, 3, /percent-encoding/);
      }
    }
  });

  it('answers a URL over 16 KiB with 414 and headers over 16 KiB with 431, in the envelope of the path', async () => {
    expectV1Error(
      await e.raw(`GET /v1/layers/${'a'.repeat(17_000)} HTTP/1.1\r\nHost: t\r\n\r\n`),
      414,
      /URL is longer than the 16 KiB limit/,
    );
    expectAncestryError(await e.raw(`GET /ancestry/${'a'.repeat(17_000)} HTTP/1.1\r\nHost: t\r\n\r\n`), 414, 3);
    expectAncestryError(
      await e.raw(`GET /status HTTP/1.1\r\nHost: t\r\nX-Padding: ${'p'.repeat(17_000)}\r\n\r\n`),
      431,
      3,
      /headers are larger than the 16 KiB limit/,
    );
    expectV1Error(await e.raw(`GET /v1/namespaces HTTP/1.1\r\nHost: t\r\nX-Padding: ${'p'.repeat(17_000)}\r\n\r\n`), 431);
  });

  it('answers a method the path lacks with 405 and Allow, a path that does not exist with 404', async () => {
    const patch = await e.send('PATCH', '/v1/layers/x');
    expectV1Error(patch, 405, 'PATCH is not allowed on /v1/layers/x: use DELETE, GET, HEAD');
    expect(patch.headers.allow).toBe('DELETE, GET, HEAD');
    const put = await e.send('PUT', '/ancestry');
    expectAncestryError(put, 405, 12, 'PUT is not allowed on /ancestry: use POST');
    expect(put.headers.allow).toBe('POST');
    // A method Node's parser does not know at all.
    const unknown = await e.raw('BREW /v1/layers HTTP/1.1\r\nHost: t\r\n\r\n');
    expectV1Error(unknown, 405, 'BREW is not allowed on /v1/layers: use POST');
    expect(unknown.headers.allow).toBe('POST');
    expectV1Error(await e.send('GET', '/v1/nothing'), 404, 'no route for GET /v1/nothing');
    expectAncestryError(await e.send('GET', '/notifications'), 404, 5);
    expectV1Error(await e.raw('\x16\x03\x01 not http\r\n\r\n'), 400, /^the request is not valid HTTP\/1\.1/);
  });

  it('answers a body over 1 MiB with 413 in each envelope, whether announced or not', async () => {
    const big = JSON.stringify({ Vulnerability: { Name: 'CVE-1', Description: 'x'.repeat(1 << 20) } });
    expectV1Error(
      await e.send('POST', '/v1/namespaces/debian%3A12/vulnerabilities', { body: big }),
      413,
      'request body is larger than the 1 MiB limit',
    );
    expectAncestryError(await e.send('POST', '/ancestry', { body: big }), 413, 3);
    const chunked = `POST /ancestry HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${(2 << 20).toString(16)}\r\n${'x'.repeat(2 << 20)}\r\n0\r\n\r\n`;
    expectAncestryError(await e.raw(chunked), 413, 3);
  });

  it('answers a body that is declared and never sent with 408 once the body deadline passes, and closes the connection', async () => {
    const v1 = await e.raw('POST /v1/layers HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{"Layer":');
    expectV1Error(v1, 408, 'the request body did not arrive within 0.3 s (clair.api.bodytimeout)');
    expect(v1.headers.connection).toBe('close');
    expectAncestryError(await e.raw('POST /ancestry HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n'), 408, 4);
  });

  it('answers headers that never finish with 408 once the header deadline passes, and closes the connection', async () => {
    const slow = await e.raw('GET /v1/namespaces HTTP/1.1\r\nHost: t\r\nX-Slow: ');
    expectV1Error(slow, 408, 'the request did not arrive in time');
    expect(slow.headers.connection).toBe('close');
  });

  it('answers a body it cannot read with 415: a malformed Content-Type, a compressed body', async () => {
    expectV1Error(await e.send('POST', '/v1/layers', { headers: { 'content-type': 'application/' }, body: '{}' }), 415, /Content-Type/);
    expectAncestryError(
      await e.send('POST', '/ancestry', { headers: { 'content-encoding': 'gzip' }, body: '{}' }),
      415,
      3,
      /Content-Encoding: gzip/,
    );
  });

  it('logs each refusal once, with its reason and the request id it answered with, and counts it by route, status and reason', async () => {
    const before = e.logs.length;
    const answers = [
      await e.send('GET', '/v1/layers/%zz'),
      await e.send('PATCH', '/v1/layers/x'),
      await e.send('POST', '/v1/layers', { headers: { 'content-encoding': 'br' }, body: '{}' }),
      await e.raw(`GET /ancestry/${'a'.repeat(17_000)} HTTP/1.1\r\nHost: t\r\n\r\n`),
      await e.send('GET', '/v1/namespaces/debian%3A12/vulnerabilities?limit=0'),
    ];
    const rejected = e.logs.slice(before).filter((line) => line.msg === 'request rejected');
    expect(rejected.map((line) => [line.reqId, line.reason, line.status])).toEqual([
      [answers[0]!.headers['x-request-id'], 'bad_request', 400],
      [answers[1]!.headers['x-request-id'], 'method_not_allowed', 405],
      [answers[2]!.headers['x-request-id'], 'unsupported_media_type', 415],
      [answers[3]!.headers['x-request-id'], 'uri_too_long', 414],
      [answers[4]!.headers['x-request-id'], 'bad_request', 400],
    ]);
    const metrics = await e.t.metrics.registry.getSingleMetricAsString('tarsier_http_errors_total');
    expect(metrics).toContain('tarsier_http_errors_total{route="unmatched",status="405",reason="method_not_allowed"}');
    expect(metrics).toContain('tarsier_http_errors_total{route="unparsed",status="414",reason="uri_too_long"}');
    expect(metrics).toContain('tarsier_http_errors_total{route="/v1/layers",status="415",reason="unsupported_media_type"}');
    expect(metrics).toContain('tarsier_http_errors_total{route="/v1/namespaces/:ns/vulnerabilities",status="400",reason="bad_request"}');
  });
});

describe('request ids', () => {
  it("uses and echoes the client's X-Request-Id, and replaces one that is not a sensible id", async () => {
    const e = await edge();
    const ok = await e.send('GET', '/v1/namespaces', { headers: { 'x-request-id': 'ci-run-4711.step-3' } });
    expect(ok.status).toBe(200);
    expect(ok.headers['x-request-id']).toBe('ci-run-4711.step-3');
    expect(e.logs.some((line) => line.reqId === 'ci-run-4711.step-3' && line.msg === 'request completed')).toBe(true);
    const failed = await e.send('GET', '/ancestry/nope', { headers: { 'x-request-id': 'ci-run-4711.step-4' } });
    expect([failed.status, failed.headers['x-request-id']]).toEqual([404, 'ci-run-4711.step-4']);
    const odd = await e.send('GET', '/v1/namespaces', { headers: { 'x-request-id': 'has spaces and "quotes"' } });
    expect(odd.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const fresh = await e.send('GET', '/v1/namespaces');
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('body deadlines on every route that reads a body', () => {
  const FORM = 'application/x-www-form-urlencoded';

  it('answers a sign-in form that never arrives with 408 once api.bodytimeout passes, and closes the connection', async () => {
    const e = await edge();
    const stalled = await e.raw(`POST /ui/login HTTP/1.1\r\nHost: t\r\nContent-Type: ${FORM}\r\nContent-Length: 100\r\n\r\nt`);
    expect(stalled.status, stalled.text).toBe(408);
    expect(stalled.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(stalled.text).toContain('the request body did not arrive within 0.3 s (clair.api.bodytimeout)');
    expect(stalled.headers.connection).toBe('close');
    // The form is still read when it comes, within its own size limit.
    const signedIn = await e.send('POST', '/ui/login', { headers: { 'content-type': FORM }, body: 'token=&next=%2Fui%2Ffeeds' });
    expect([signedIn.status, signedIn.headers.location]).toEqual([303, '/ui/feeds']);
    const large = await e.send('POST', '/ui/login', { headers: { 'content-type': FORM }, body: `token=${'x'.repeat(20_000)}` });
    expect(large.status).toBe(413);
    expect(large.text).toContain('request body is larger than the 16 KiB limit');
  });

  it('answers a layer upload that stops sending with 408 once api.uploadidletimeout passes; one that keeps sending may outlast api.bodytimeout', async () => {
    const e = await edge('  api:\n    bodytimeout: 300ms\n    uploadidletimeout: 1s');
    const layer = debianLayer(9);
    const digest = `sha256:${createHash('sha256').update(layer).digest('hex')}`;
    const head = Buffer.from(
      `PUT /tarsier/v1/layers/${digest} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/octet-stream\r\nContent-Length: ${layer.length}\r\n\r\n`,
    );
    const stalled = await exchange(e.port, (socket) => void socket.write(Buffer.concat([head, layer.subarray(0, 1)])));
    expectV1Error(stalled, 408, 'the layer upload sent no bytes for 1 s (clair.api.uploadidletimeout)');
    expect(stalled.headers.connection).toBe('close');
    expect((await e.t.pool.query('SELECT 1 FROM layer_scan WHERE key = $1', [digest])).rowCount).toBe(0);

    // Ten pieces, a little apart: longer than the body deadline in all, never idle for the upload's.
    const steady = await exchange(e.port, async (socket) => {
      socket.write(head);
      const piece = Math.ceil(layer.length / 10);
      for (let at = 0; at < layer.length; at += piece) {
        await new Promise((resolve) => setTimeout(resolve, 60));
        socket.write(layer.subarray(at, at + piece));
      }
    });
    expect(steady.status, steady.text).toBe(201);
    expect(steady.body.Layer.Digest).toBe(digest);
  });
});

/** The HTTP/2 client connection preface: the magic, then the client's SETTINGS frame (empty here). */
const H2_MAGIC = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const H2_PREFACE = Buffer.concat([H2_MAGIC, Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);
const GOAWAY_FRAME = 0x7;

interface StalledClient {
  /** Resolves, with the frame types the server sent, when the server has closed the connection. */
  closed: Promise<number[]>;
}

/** HTTP/2 frame types in bytes a server sent (after its own preface, which is a SETTINGS frame). */
function frameTypes(received: Buffer): number[] {
  const types: number[] = [];
  for (let at = 0; at + 9 <= received.length; at += 9 + received.readUIntBE(at, 3)) types.push(received[at + 3]!);
  return types;
}

/** A client that sends bytes, then nothing; halfClose: it also shuts its sending side (FIN), as a client that has gone does. */
function stalledClient(port: number, bytes: Buffer, options: { halfClose?: boolean } = {}): Promise<StalledClient> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(bytes);
      if (options.halfClose) socket.end();
      resolve({ closed });
    });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    const closed = new Promise<number[]>((resolveClosed) => socket.on('close', () => resolveClosed(frameTypes(Buffer.concat(chunks)))));
  });
}

/** The connections the API server holds (each one a socket, a descriptor). */
const connectionsOf = (t: TestApp): Promise<number> =>
  new Promise((resolve, reject) => t.app.server.getConnections((err, count) => (err ? reject(err) : resolve(count))));

/** Waits until the server holds count connections. */
async function untilConnections(t: TestApp, count: number): Promise<void> {
  while ((await connectionsOf(t)) !== count) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('connections on the port HTTP/1.1 and gRPC share', () => {
  const stalledClients = (port: number, count: number, bytes: Buffer, options?: { halfClose?: boolean }) =>
    Promise.all(Array.from({ length: count }, () => stalledClient(port, bytes, options)));

  it('closes those that have not sent the whole HTTP/2 preface when api.headertimeout passes, and HTTP/2 ones without a call when api.idletimeout does', async () => {
    const e = await edge('  api:\n    headertimeout: 1500ms\n    idletimeout: 2s', { grpc: { drainMs: 1_000 } });
    const partial = await stalledClients(e.port, 10, H2_MAGIC.subarray(0, 10));
    const magicOnly = await stalledClients(e.port, 10, H2_MAGIC);
    const sessions = await stalledClients(e.port, 10, H2_PREFACE);
    await untilConnections(e.t, 30);
    // Cut before they were HTTP/2 sessions: nothing was sent to them.
    for (const client of [...partial, ...magicOnly]) expect(await client.closed).toEqual([]);
    // Sessions are told to go (GOAWAY) once idle.
    for (const client of sessions) expect(await client.closed).toContain(GOAWAY_FRAME);
    await untilConnections(e.t, 0);
  });

  it('lets a connection go at once when its client stops sending (FIN), whatever the deadlines', async () => {
    const e = await edge('  api:\n    headertimeout: 60s\n    idletimeout: 60s', { grpc: { drainMs: 1_000 } });
    const clients = [
      ...(await stalledClients(e.port, 5, H2_MAGIC.subarray(0, 10), { halfClose: true })),
      ...(await stalledClients(e.port, 5, H2_MAGIC, { halfClose: true })),
      ...(await stalledClients(e.port, 5, H2_PREFACE, { halfClose: true })),
    ];
    await Promise.all(clients.map((client) => client.closed));
    await untilConnections(e.t, 0);
  });

  it('closes stalled connections at once when the server closes, without waiting for the deadlines or the gRPC grace period', async () => {
    const e = await edge('  api:\n    headertimeout: 60s\n    idletimeout: 60s', { grpc: { drainMs: 60_000 } });
    const clients = [
      ...(await stalledClients(e.port, 5, H2_MAGIC.subarray(0, 10))),
      ...(await stalledClients(e.port, 5, H2_MAGIC)),
      ...(await stalledClients(e.port, 5, H2_PREFACE)),
    ];
    await untilConnections(e.t, 15);
    await e.t.app.close();
    await Promise.all(clients.map((client) => client.closed));
  });
});
