/**
 * Harbor's Pluggable Scanner API v1.1 (/api/v1), replayed as Harbor's scan job sends it
 * (goharbor/harbor src/pkg/scan/rest/v1/client.go, job.go): over HTTP with the registration's
 * Authorization, each request given 5 s and no redirect followed; the metadata Accept, the scan
 * request Content-Type, the report Accept; a Basic robot authorization for the registry. The
 * registry is real (distribution, basic auth, images pushed with skopeo) behind a proxy that can
 * hold blob downloads, so a report is asked for while its scan is certainly still running. Runs
 * where the registry programs are installed (CI installs them).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as forwardRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HarborVulnerabilityReport,
  MIME_DOCKER_MANIFEST_V2,
  MIME_METADATA,
  MIME_NATIVE_REPORT_V1_0,
  MIME_OCI_IMAGE_MANIFEST,
  MIME_SCAN_REQUEST,
  MIME_SCAN_RESPONSE,
  MIME_VULN_REPORT_V1_1,
  ScannerAdapterMetadata,
} from '../../src/api/harbor/spec.js';
import { HarborScans, INTERRUPTED_MESSAGE } from '../../src/api/harbor/scans.js';
import { leaseOwner } from '../../src/store/locks.js';
import { recordSuccess } from '../../src/store/updater-state.js';
import { TARSIER_VERSION } from '../../src/version.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { freshPool, silentLog } from '../helpers/db.js';
import { debianLayer, layer, ociLayout, pushImage } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry, type Registry } from '../helpers/registry.js';

const missing = missingRegistryPrograms();
const skipped = missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : '';

/** The credential of Harbor's scanner registration (auth "Bearer"), which Tarsier's API requires here. */
const REGISTRATION = 'Bearer harbor-registration-token';
const API_AUTH_YAML = '  api:\n    auth:\n      tokens: [harbor-registration-token]';

const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

/** Fixed in a later bash than the image's 4.4-5, with NVD scores: fixable. */
const BASH = {
  Name: 'CVE-2099-2001',
  Severity: 'High',
  Link: 'https://security-tracker.debian.org/tracker/CVE-2099-2001',
  Description: 'bash expands what it should not',
  Metadata: { NVD: { CVSSv3: { Score: 7.8, Vectors: 'CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H' } } },
  FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u1' }],
};
/** No fix yet for zlib: Harbor must see no fix_version at all. */
const ZLIB = {
  Name: 'CVE-2099-2002',
  Severity: 'Negligible',
  Link: '',
  Description: 'zlib inflates slowly',
  FixedIn: [{ Name: 'zlib', Version: 'None' }],
};

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** A pass-through proxy in front of the registry that, while held, keeps every blob download waiting. */
async function blobHoldingProxy(upstream: URL) {
  let opened: Promise<void> = Promise.resolve();
  let waiting = 0;
  const server = createServer((req, res) => {
    const blob = req.method === 'GET' && /\/blobs\/sha256:/.test(req.url ?? '');
    if (blob) waiting++;
    void (blob ? opened : Promise.resolve()).then(() => {
      if (blob) waiting--;
      const headers = { ...req.headers, host: upstream.host };
      const forward = forwardRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      req.pipe(forward);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Blob downloads waiting now. */
    waiting: () => waiting,
    /** Holds blob downloads from now on; call what it returns to let them (and later ones) through. */
    hold(): () => void {
      let release!: () => void;
      opened = new Promise<void>((resolve) => (release = resolve));
      return release;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe.skipIf(missing.length > 0)(`Harbor's Pluggable Scanner API${skipped}`, () => {
  let scratch: string;
  let registry: Registry;
  let proxy: Awaited<ReturnType<typeof blobHoldingProxy>>;
  let t: TestApp;
  let base: string;
  /** team/app:v1 (Debian 9 and an application layer) and team/static:v1 (no packages), as skopeo pushed them. */
  let appDigest: string;
  let staticDigest: string;

  /** What Harbor's client sends: its Accept (and Content-Type) per operation, the registration's credential. */
  async function harbor(method: 'GET' | 'POST', path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
    const res = await request(`${base}${path}`, {
      method,
      headers: { authorization: REGISTRATION, ...headers },
      ...(body !== undefined ? { body } : {}),
      headersTimeout: 5_000,
      bodyTimeout: 5_000,
    });
    const text = await res.body.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.statusCode, headers: res.headers, text, json: parsed };
  }
  const metadata = () => harbor('GET', '/api/v1/metadata', { accept: MIME_METADATA });
  const scan = (body: unknown) =>
    harbor('POST', '/api/v1/scan', { 'content-type': MIME_SCAN_REQUEST, accept: MIME_SCAN_RESPONSE }, JSON.stringify(body));
  const report = (id: string, accept = MIME_VULN_REPORT_V1_1) => harbor('GET', `/api/v1/scan/${id}/report`, { accept });

  /** The ScanRequest Harbor sends for repository@digest (job.go, models.go), with the robot account's Basic authorization. */
  function scanRequest(repository: string, digest: string, authorization = basic(registry.username, registry.password)) {
    return {
      registry: { url: proxy.url, authorization, insecure: false },
      artifact: { repository, digest, tag: 'v1', mime_type: MIME_OCI_IMAGE_MANIFEST, size: 1234 },
      enabled_capabilities: [{ type: 'vulnerability', produces_mime_types: [MIME_VULN_REPORT_V1_1], parameters: null }],
    };
  }

  /** Posts the scan, which must be accepted; its id. */
  async function accepted(body: unknown): Promise<string> {
    const res = await scan(body);
    expect(res.status, res.text).toBe(202);
    expect(res.headers['content-type']).toBe(MIME_SCAN_RESPONSE);
    expect(Object.keys(res.json)).toEqual(['id']);
    return res.json.id as string;
  }

  /** Asks for the report (as Harbor does, again and again) until the scan has ended; the answer then. */
  async function finished(id: string): Promise<Answer> {
    let last: Answer | undefined;
    await expect.poll(async () => (last = await report(id)).status, { timeout: 20_000, interval: 50 }).not.toBe(302);
    return last!;
  }

  /** An error answer in the spec's envelope, exactly: {"error":{"message"}}. */
  function expectError(res: Answer, status: number, message: RegExp): void {
    expect(res.status, res.text).toBe(status);
    expect(Object.keys(res.json)).toEqual(['error']);
    expect(Object.keys(res.json.error)).toEqual(['message']);
    expect(res.json.error.message).toMatch(message);
  }

  async function addVulnerability(v: typeof BASH | typeof ZLIB): Promise<void> {
    const res = await harbor(
      'POST',
      '/v1/namespaces/debian%3A9/vulnerabilities',
      { 'content-type': 'application/json' },
      JSON.stringify({
        Vulnerability: { ...v, NamespaceName: 'debian:9', FixedIn: v.FixedIn.map((f) => ({ ...f, NamespaceName: 'debian:9' })) },
      }),
    );
    expect(res.status, res.text).toBe(201);
  }

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'tarsier-harbor-'));
    registry = await startRegistry({ auth: 'basic' });
    proxy = await blobHoldingProxy(new URL(registry.url));
    const app = await ociLayout(join(scratch, 'app'), { layers: [debianLayer(9), layer({ 'srv/app/server.js': 'listen(8080)' })] });
    appDigest = await pushImage(registry, app.dir, 'team/app', 'v1');
    const plain = await ociLayout(join(scratch, 'static'), { layers: [layer({ 'srv/www/index.html': '<p>hello</p>' })] });
    staticDigest = await pushImage(registry, plain.dir, 'team/static', 'v1');
    t = await testApp({ yaml: API_AUTH_YAML });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    for (const v of [BASH, ZLIB]) await addVulnerability(v);
  });
  afterAll(async () => {
    await proxy?.close();
    await registry?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  it('describes the scanner as the spec and Harbor require, with the date of the vulnerability database', async () => {
    const before = await metadata();
    expect(before.status, before.text).toBe(200);
    expect(before.headers['content-type']).toBe(MIME_METADATA);
    expect(Value.Check(ScannerAdapterMetadata, before.json), before.text).toBe(true);
    expect(before.json.scanner).toEqual({ name: 'Tarsier', vendor: 'Tarsier', version: TARSIER_VERSION });
    expect(before.json.capabilities).toEqual([
      {
        type: 'vulnerability',
        consumes_mime_types: [MIME_OCI_IMAGE_MANIFEST, MIME_DOCKER_MANIFEST_V2],
        produces_mime_types: [MIME_VULN_REPORT_V1_1],
      },
    ]);
    expect(before.json.properties).toEqual({
      'harbor.scanner-adapter/scanner-type': 'os-package-vulnerability',
      'harbor.scanner-adapter/registry-authorization-type': 'Basic',
    });

    await recordSuccess(t.pool, 'debian', { fingerprint: 'f', records: 2, changed: 2, durationMs: 10, nextRunInMs: 3_600_000 });
    const { rows } = await t.pool.query<{ at: Date }>("SELECT last_success_at AS at FROM updater_state WHERE name = 'debian'");
    const after = (await metadata()).json.properties['harbor.scanner-adapter/vulnerability-database-updated-at'];
    expect(after).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(new Date(after).getTime()).toBe(rows[0]!.at.getTime());
  });

  it('accepts a scan at once, answers 302 with Refresh-After while it runs, then 200 with the report', async () => {
    const release = proxy.hold();
    let id: string;
    try {
      id = await accepted(scanRequest('team/app', appDigest));
      const running = await report(id);
      expect(running.status, running.text).toBe(302);
      expect(running.headers['refresh-after']).toMatch(/^\d+$/);
      expect(Number(running.headers['refresh-after'])).toBeLessThanOrEqual(127);
      expect(running.headers.location).toBe(`/api/v1/scan/${id}/report`);
      // Still so with the scan under way, its first download held at the registry.
      await expect.poll(() => proxy.waiting()).toBeGreaterThan(0);
      expect((await report(id)).status).toBe(302);
    } finally {
      release();
    }

    const done = await finished(id);
    expect(done.status, done.text).toBe(200);
    expect(done.headers['content-type']).toBe(MIME_VULN_REPORT_V1_1);
    expect(Value.Check(HarborVulnerabilityReport, done.json), done.text).toBe(true);
    expect(Date.parse(done.json.generated_at)).not.toBeNaN();
    expect(done.json.artifact).toEqual({ repository: 'team/app', digest: appDigest, tag: 'v1', mime_type: MIME_OCI_IMAGE_MANIFEST });
    expect(done.json.scanner).toEqual({ name: 'Tarsier', vendor: 'Tarsier', version: TARSIER_VERSION });
    expect(done.json.severity).toBe('High');
    const byId = (id: string) => done.json.vulnerabilities.filter((v: { id: string }) => v.id === id);
    expect(byId(BASH.Name)).toEqual([
      {
        id: BASH.Name,
        package: 'bash',
        version: '4.4-5',
        fix_version: '4.4-5+deb9u1',
        severity: 'High',
        description: BASH.Description,
        links: [BASH.Link],
        preferred_cvss: { score_v3: 7.8, vector_v3: BASH.Metadata.NVD.CVSSv3.Vectors },
      },
    ]);
    // No fix: no fix_version (Harbor counts any value as fixable); no link: no links.
    expect(byId(ZLIB.Name)).toEqual([
      { id: ZLIB.Name, package: 'zlib', version: '1:1.2.8.dfsg-5', severity: 'Negligible', description: ZLIB.Description },
    ]);
    expect(done.json.vulnerabilities).toHaveLength(2);

    // The deprecated v1.0 report type is the same report under its own Content-Type.
    const old = await report(id, MIME_NATIVE_REPORT_V1_0);
    expect(old.status).toBe(200);
    expect(old.headers['content-type']).toBe(MIME_NATIVE_REPORT_V1_0);
    expect(old.json.vulnerabilities).toEqual(done.json.vulnerabilities);
  });

  it('reports an image without vulnerabilities with an empty list and no severity', async () => {
    const done = await finished(await accepted(scanRequest('team/static', staticDigest)));
    expect(done.status, done.text).toBe(200);
    expect(done.json.vulnerabilities).toEqual([]);
    expect(done.json).not.toHaveProperty('severity');
  });

  it('reports the scan of an image whose namespace has no vulnerability data as failed (500 naming it), never as clean', async () => {
    const buster = await ociLayout(join(scratch, 'buster'), { layers: [debianLayer(10)] });
    const busterDigest = await pushImage(registry, buster.dir, 'team/buster', 'v1');
    const failed = await finished(await accepted(scanRequest('team/buster', busterDigest)));
    expectError(
      failed,
      500,
      /^cannot tell whether the image is affected: debian:10: no vulnerability data .*; scan again once the data is there$/,
    );
  });

  it('answers 404 for a scan id it never gave, and 415 for a report type it does not produce', async () => {
    expectError(await report(randomUUID()), 404, /there is no scan/);
    expectError(await report('not-a-scan-id'), 404, /there is no scan "not-a-scan-id"/);
    expectError(await report(randomUUID(), 'application/spdx+json'), 415, /names no report Tarsier produces/);
    expectError(await harbor('GET', '/api/v1/scan'), 405, /GET is not allowed/);
  });

  it('refuses what it cannot scan before recording anything: 422 for an invalid field, 400 for a body that is not a request', async () => {
    const count = async () => (await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM harbor_scan')).rows[0]!.n;
    const before = await count();
    const valid = scanRequest('team/app', appDigest);
    for (const [invalid, message] of [
      [{ ...valid, artifact: { ...valid.artifact, digest: undefined } }, /^missing artifact\.digest$/],
      [{ ...valid, artifact: { ...valid.artifact, digest: 'latest' } }, /^invalid artifact\.digest$/],
      [
        { ...valid, artifact: { ...valid.artifact, mime_type: 'application/vnd.oci.image.index.v1+json' } },
        /unsupported artifact\.mime_type/,
      ],
      [{ ...valid, artifact: { ...valid.artifact, repository: 'Team/App' } }, /^artifact: /],
      [{ ...valid, registry: { ...valid.registry, url: 'ftp://registry.example' } }, /not http\(s\)/],
      [{ ...valid, registry: { ...valid.registry, authorization: 'robot:secret' } }, /"Basic <credentials>" or "Bearer <token>"/],
      [{ ...valid, registry: { ...valid.registry, url: 5 } }, /registry\.url must be a string/],
      [{ artifact: valid.artifact }, /registry is required/],
    ] as const) {
      expectError(await scan(invalid), 422, message);
    }
    expectError(await harbor('POST', '/api/v1/scan', { 'content-type': MIME_SCAN_REQUEST }, '{"registry":'), 400, /not valid JSON/);
    expectError(await harbor('POST', '/api/v1/scan', { 'content-type': MIME_SCAN_REQUEST }, '[]'), 400, /must be a ScanRequest/);
    expect(await count()).toBe(before);
  });

  it('reports a scan the registry refused as failed (500 with the reason), and never stores the authorization', async () => {
    const secret = `wrong-${randomUUID()}`;
    const authorization = basic(registry.username, secret);
    const failed = await finished(await accepted(scanRequest('team/app', appDigest, authorization)));
    expectError(failed, 500, /refused access .*\(401\): check the credentials/);
    expect(failed.text).not.toContain(secret);

    // The table holds the artifact and the scan's state, no column for a credential, and no
    // credential (this one or the good one of the earlier scans) in any row.
    const { rows: columns } = await t.pool.query<{ name: string }>(
      "SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'harbor_scan' ORDER BY column_name",
    );
    expect(columns.map((c) => c.name)).toEqual([
      'created_at',
      'digest',
      'error',
      'id',
      'mime_type',
      'owner',
      'registry',
      'repository',
      'state',
      'tag',
      'updated_at',
    ]);
    const { rows } = await t.pool.query<{ row: string }>('SELECT row_to_json(s)::text AS row FROM harbor_scan s');
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const { row } of rows) {
      for (const credential of [secret, authorization, registry.password, basic(registry.username, registry.password)]) {
        expect(row).not.toContain(credential);
      }
    }
  });

  it('reports a scan whose process stopped as failed, and one whose process still beats as running', async () => {
    const insert = async (owner: string, touchedSecondsAgo: number) => {
      const id = randomUUID();
      await t.pool.query(
        `INSERT INTO harbor_scan (id, registry, repository, digest, state, owner, updated_at)
         VALUES ($1, '127.0.0.1:1', 'team/app', $2, 'pending', $3, now() - $4 * interval '1 second')`,
        [id, appDigest, owner, touchedSecondsAgo],
      );
      return id;
    };
    const [role, , identity] = leaseOwner('harbor-scan').split(' ');
    const [host, namespace] = identity!.split('/');
    // This machine's PID with another start time: a process that has ended (a killed replica).
    const ended = await insert(`${role} ${randomUUID()} ${host}/${namespace}/${process.pid}/0`, 0);
    // Another machine's process is judged by its heartbeat only: quiet for minutes, or just now.
    const quiet = await insert(`${role} ${randomUUID()} other-host/${namespace}/1/1`, 300);
    const beating = await insert(`${role} ${randomUUID()} other-host/${namespace}/1/1`, 1);

    for (const id of [ended, quiet]) {
      expectError(await report(id), 500, /the scan was interrupted .*; scan again/);
      // The verdict is kept: it is no longer pending.
      expectError(await report(id), 500, /interrupted/);
    }
    expect((await report(beating)).status).toBe(302);
  });

  it('records the scans a stopping server was running as interrupted, for whichever replica Harbor asks next', async () => {
    const replica = await testApp({ yaml: API_AUTH_YAML, pool: t.pool });
    const release = proxy.hold();
    try {
      const res = await replica.app.inject({
        method: 'POST',
        url: '/api/v1/scan',
        headers: { authorization: REGISTRATION, 'content-type': MIME_SCAN_REQUEST },
        payload: JSON.stringify(scanRequest('team/app', appDigest)),
      });
      expect(res.statusCode, res.body).toBe(202);
      await expect.poll(() => proxy.waiting()).toBeGreaterThan(0);
      // Closing does not wait for the held download: the scan is stopped.
      await replica.app.close();
      expectError(await report(JSON.parse(res.body).id), 500, /the scan was interrupted .*; scan again/);
    } finally {
      release();
    }
  });

  it("requires the registration's credential, as every route of the API when authentication is on", async () => {
    const res = await request(`${base}/api/v1/metadata`, { headers: { accept: MIME_METADATA } });
    expect(res.statusCode).toBe(401);
    expect(await res.body.json()).toEqual({ error: { message: expect.any(String) } });
  });
});

describe('Harbor scans across replicas', () => {
  it('stay pending for every replica while the process running one beats, however long it takes', async () => {
    const pool = await freshPool();
    const timings = { heartbeatMs: 20, staleAfterMs: 100 };
    // A scan that runs until it is stopped.
    const endless = {
      scan: (_request: unknown, signal?: AbortSignal) =>
        new Promise<never>((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason as Error))),
    };
    const running = new HarborScans({ pool, scanner: endless, log: silentLog, timings });
    const other = new HarborScans({ pool, scanner: endless, log: silentLog, timings });
    const target = { registry: '127.0.0.1:1', repository: 'team/app', digest: `sha256:${'a'.repeat(64)}`, tag: null, mimeType: null };
    const id = await running.start({ ...target, insecure: true, authorization: undefined });
    try {
      await expect
        .poll(
          async () =>
            (await pool.query<{ old: boolean }>(`SELECT now() - created_at > interval '500 ms' AS old FROM harbor_scan`)).rows[0]!.old,
        )
        .toBe(true);
      expect((await other.find(id))?.state).toBe('pending');
    } finally {
      await running.close();
    }
    expect(await other.find(id)).toMatchObject({ state: 'failed', error: INTERRUPTED_MESSAGE });
  });
});
