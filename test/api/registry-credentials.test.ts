/**
 * Registry credentials travel only over TLS unless the server's own configuration marks the
 * registry insecure: no request can downgrade them. A plain-HTTP listener plays a registry that
 * asks for Basic credentials (401 with a Basic challenge, as distribution's htpasswd auth does)
 * and records every Authorization header that reaches it; each way of asking for a scan over plain
 * HTTP — `POST /tarsier/v1/images` with `"insecure": true`, a registry webhook whose event names an
 * http: URL, Harbor's `POST /api/v1/scan` with an http: registry URL — is refused in its route's
 * dialect, stores and queues nothing, and sends no credential. With the registry marked insecure
 * in the configuration, the same request does send them (so the listener would have seen them).
 * A registry served over TLS whose token service is a plain-HTTP URL gets no credentials either.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIME_ERROR, MIME_OCI_IMAGE_MANIFEST, MIME_SCAN_REQUEST } from '../../src/api/harbor/spec.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { testCertificates } from '../helpers/certificates.js';
import { freshDatabase } from '../helpers/db.js';
import { databaseUrl, startTarsier } from '../helpers/process.js';
import { distributionPushEvent } from '../helpers/registry.js';

const USERNAME = 'tarsier';
const PASSWORD = 'never-in-clear';
const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
const SECRET = 'Bearer webhook-secret';
const DIGEST = `sha256:${'4d'.repeat(32)}`;

interface Listener {
  /** 127.0.0.1:PORT, as references and clair.registries name it. */
  host: string;
  /** The Authorization header of every request received (undefined where there was none). */
  authorizations: Array<string | undefined>;
  /** Resolves once a request with an Authorization header has arrived. */
  authorized: Promise<string>;
  close(): Promise<void>;
}

/** A plain-HTTP listener that answers everything as a registry wanting Basic credentials, and records what arrives. */
async function listener(answer: (req: IncomingMessage, res: ServerResponse) => void = challenge): Promise<Listener> {
  const authorizations: Array<string | undefined> = [];
  let authorized!: (value: string) => void;
  const seen = new Promise<string>((resolve) => (authorized = resolve));
  const server = createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    if (req.headers.authorization !== undefined) authorized(req.headers.authorization);
    answer(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    host,
    authorizations,
    authorized: seen,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function challenge(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(401, { 'www-authenticate': 'Basic realm="registry"', 'content-type': 'application/json' });
  res.end('{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}');
}

/** Harbor's scan request for an artifact of a registry at an http: URL. */
const harborScan = (host: string, authorization: string) => ({
  registry: { url: `http://${host}`, authorization, insecure: false },
  artifact: { repository: 'team/app', digest: DIGEST, tag: 'v1', mime_type: MIME_OCI_IMAGE_MANIFEST },
  enabled_capabilities: [{ type: 'vulnerability', produces_mime_types: null, parameters: null }],
});

describe('registry credentials over plain HTTP', () => {
  /** Has credentials in clair.registries, not marked insecure. */
  let configured: Listener;
  /** Not in clair.registries: credentials come only with the request. */
  let bare: Listener;
  let t: TestApp;
  beforeAll(async () => {
    configured = await listener();
    bare = await listener();
    // The queue runs: anything queued would reach a listener.
    t = await testApp({
      imageQueue: true,
      yaml: [
        `  webhooks:\n    secret: "${SECRET}"`,
        `  registries:\n    "${configured.host}": { username: ${USERNAME}, password: ${PASSWORD} }`,
      ].join('\n'),
    });
  });
  afterAll(async () => {
    await configured?.close();
    await bare?.close();
  });

  /** Nothing recorded or queued, and nothing reached either listener. */
  async function expectNothingDone(): Promise<void> {
    const count = async (sql: string) => (await t.pool.query<{ n: number }>(sql)).rows[0]!.n;
    expect(await count('SELECT count(*)::int AS n FROM image')).toBe(0);
    expect(await count('SELECT count(*)::int AS n FROM harbor_scan')).toBe(0);
    expect(await count('SELECT count(*)::int AS n FROM graphile_worker.jobs')).toBe(0);
    expect(configured.authorizations).toEqual([]);
    expect(bare.authorizations).toEqual([]);
  }

  it('POST /tarsier/v1/images with "insecure": true: 400, configured or given credentials', async () => {
    for (const [payload, whose] of [
      [{ reference: `${configured.host}/team/app:v1`, insecure: true }, 'the credentials configured in clair.registries'],
      [{ reference: `${configured.host}/team/app:v1`, insecure: true, authorization: basic('other', 'secret') }, 'given with the request'],
      [{ reference: `${bare.host}/team/app:v1`, insecure: true, authorization: basic(USERNAME, PASSWORD) }, 'given with the request'],
    ] as const) {
      for (const wait of ['true', 'false']) {
        const res = await t.app.inject({ method: 'POST', url: `/tarsier/v1/images?wait=${wait}`, payload });
        expect(res.statusCode, res.body).toBe(400);
        expect(json(res).Error.Message).toContain(`plain HTTP to the registry ${payload.reference.split('/')[0]} was asked for, but`);
        expect(json(res).Error.Message).toContain(whose);
        expect(json(res).Error.Message).toContain('are sent only over TLS');
      }
    }
    await expectNothingDone();
  });

  it('a registry webhook whose event names an http: URL: 400, nothing queued', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tarsier/v1/webhooks/distribution',
      headers: { authorization: SECRET, 'content-type': 'application/vnd.docker.distribution.events.v1+json' },
      payload: distributionPushEvent(configured.host, 'team/app', DIGEST, 'v1'),
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(json(res).Error.Message).toMatch(
      /^the event names the registry by an http: URL; plain HTTP to the registry .* sent only over TLS/,
    );
    await expectNothingDone();
  });

  it("Harbor's scan with an http: registry URL: 422 in Harbor's envelope, nothing recorded", async () => {
    for (const [body, whose] of [
      [harborScan(bare.host, basic(USERNAME, PASSWORD)), 'given with the request'],
      [harborScan(configured.host, ''), 'the credentials configured in clair.registries'],
    ] as const) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/scan',
        headers: { 'content-type': MIME_SCAN_REQUEST },
        payload: JSON.stringify(body),
      });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.headers['content-type']).toBe(MIME_ERROR);
      expect(Object.keys(json(res))).toEqual(['error']);
      expect(json(res).error.message).toMatch(/^registry\.url: plain HTTP to the registry .* sent only over TLS/);
      expect(json(res).error.message).toContain(whose);
    }
    await expectNothingDone();
  });

  it("sends them over plain HTTP when the server's configuration marks the registry insecure", async () => {
    const insecure = await listener();
    try {
      const allowed = await testApp({
        yaml: `  registries:\n    "${insecure.host}": { username: ${USERNAME}, password: ${PASSWORD}, insecure: true }`,
      });
      const res = await allowed.app.inject({
        method: 'POST',
        url: '/tarsier/v1/images',
        payload: { reference: `${insecure.host}/team/app:v1` },
      });
      // The listener accepts no credentials: refused, after they were sent.
      expect(res.statusCode, res.body).toBe(422);
      expect(await insecure.authorized).toBe(basic(USERNAME, PASSWORD));
    } finally {
      await insecure.close();
    }
  });
});

describe('registry credentials and a plain-HTTP token service', () => {
  it('are not sent to a token service a TLS registry names by an http: URL', { timeout: 60_000 }, async () => {
    const tokens = await listener((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"token":"t"}'));
    const { dir, pairs } = await testCertificates(['registry'], 'IP:127.0.0.1');
    // The registry over TLS, answering with a Bearer challenge whose realm is plain HTTP.
    const registry = createTlsServer({ key: pairs.registry!.key, cert: pairs.registry!.cert }, (_req, res) => {
      res.writeHead(401, { 'www-authenticate': `Bearer realm="http://${tokens.host}/token",service="registry"` });
      res.end();
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    const host = `127.0.0.1:${(registry.address() as AddressInfo).port}`;
    try {
      const config = join(dir, 'config.yaml');
      await writeFile(
        config,
        `clair:\n  updater:\n    interval: 0\n  registries:\n    "${host}": { username: ${USERNAME}, password: ${PASSWORD} }\n`,
      );
      // The process trusts the test CA, so the registry's TLS is real.
      const server = await startTarsier({
        DATABASE_URL: databaseUrl(await freshDatabase()),
        TARSIER_CONFIG: config,
        NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem'),
      });
      try {
        const res = await fetch(`http://127.0.0.1:${server.apiPort}/tarsier/v1/images`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ reference: `${host}/team/app:v1` }),
        });
        const body = (await res.json()) as { Error: { Message: string } };
        expect(res.status, JSON.stringify(body)).toBe(422);
        expect(body.Error.Message).toContain(`the registry ${host} names a token service over plain HTTP (http://${tokens.host})`);
        expect(tokens.authorizations).toEqual([]);
      } finally {
        server.child.kill('SIGTERM');
        await server.exited;
      }
    } finally {
      registry.closeAllConnections();
      await new Promise<void>((resolve) => registry.close(() => resolve()));
      await tokens.close();
    }
  });
});
