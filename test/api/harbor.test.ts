/**
 * Harbor's Pluggable Scanner API v1.1 (/api/v1), replayed as Harbor's scan job sends it
 * (goharbor/harbor src/pkg/scan/rest/v1/client.go, job.go): over HTTP with the registration's
 * Authorization, each request given 5 s and no redirect followed; the metadata Accept, the scan
 * request Content-Type, the report Accept; a Basic robot authorization for the registry. The
 * registry is real (distribution, basic auth, images pushed with skopeo) behind a proxy that can
 * hold blob downloads, so a report is asked for while its scan is certainly still running, and a
 * Tarsier process is stopped in the middle of one. Statuses and media types as the spec's v1.2
 * (goharbor/pluggable-scanner-spec api/spec/scanner-adapter-openapi-v1.2.yaml) names them. Runs
 * where the registry programs are installed (CI installs them).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
  MIME_ERROR,
  MIME_METADATA,
  MIME_NATIVE_REPORT_V1_0,
  MIME_OCI_IMAGE_MANIFEST,
  MIME_SCAN_REQUEST,
  MIME_SCAN_RESPONSE,
  MIME_VULN_REPORT_V1_1,
  ScannerAdapterMetadata,
} from '../../src/api/harbor/spec.js';
import { recordSuccess } from '../../src/store/updater-state.js';
import { TARSIER_VERSION } from '../../src/version.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { freshDatabase } from '../helpers/db.js';
import { debianLayer, layer, ociLayout, pushImage } from '../helpers/oci-image.js';
import { databaseUrl, startTarsier } from '../helpers/process.js';
import { missingRegistryPrograms, startRegistry, type Registry } from '../helpers/registry.js';

const missing = missingRegistryPrograms();
const skipped = missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : '';

/** The credential of Harbor's scanner registration (auth "Bearer"), which Tarsier's API requires here. */
const REGISTRATION = 'Bearer harbor-registration-token';
const API_AUTH_YAML = '  api:\n    auth:\n      tokens: [harbor-registration-token]';
/** The registry (through its proxy) as the configuration names it: plain HTTP allowed, with the account when given. */
const registriesYaml = (host: string, account?: { username: string; password: string }) =>
  `  registries:\n    "${host}": { ${account ? `username: ${account.username}, password: ${account.password}, ` : ''}insecure: true }`;

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
  const port = (server.address() as AddressInfo).port;
  return {
    /** 127.0.0.1:PORT, as references and clair.registries name it. */
    host: `127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}`,
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

/** A basic-auth registry behind a blob-holding proxy, with team/app:v1 (Debian 9 and an application layer) pushed as skopeo does. */
async function appRegistry(scratch: string) {
  const registry = await startRegistry({ auth: 'basic' });
  const proxy = await blobHoldingProxy(new URL(registry.url));
  const app = await ociLayout(join(scratch, 'app'), { layers: [debianLayer(9), layer({ 'srv/app/server.js': 'listen(8080)' })] });
  const appDigest = await pushImage(registry, app.dir, 'team/app', 'v1');
  return { registry, proxy, appDigest };
}

/** Harbor's client of one Tarsier: what it sends per operation (Accept, Content-Type), with the registration's credential. */
function harborClient(base: () => string) {
  async function harbor(method: 'GET' | 'POST', path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
    const res = await request(`${base()}${path}`, {
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
  const report = (id: string, accept = MIME_VULN_REPORT_V1_1) => harbor('GET', `/api/v1/scan/${id}/report`, { accept });
  return {
    harbor,
    metadata: () => harbor('GET', '/api/v1/metadata', { accept: MIME_METADATA }),
    scan: (body: unknown) =>
      harbor('POST', '/api/v1/scan', { 'content-type': MIME_SCAN_REQUEST, accept: MIME_SCAN_RESPONSE }, JSON.stringify(body)),
    report,
    /** Posts the scan, which must be accepted; its id. */
    async accepted(body: unknown): Promise<string> {
      const res = await harbor(
        'POST',
        '/api/v1/scan',
        { 'content-type': MIME_SCAN_REQUEST, accept: MIME_SCAN_RESPONSE },
        JSON.stringify(body),
      );
      expect(res.status, res.text).toBe(202);
      expect(res.headers['content-type']).toBe(MIME_SCAN_RESPONSE);
      expect(Object.keys(res.json)).toEqual(['id']);
      return res.json.id as string;
    },
    /** Asks for the report (as Harbor does, again and again) until the scan has ended; the answer then. */
    async finished(id: string, timeout = 20_000): Promise<Answer> {
      let last: Answer | undefined;
      await expect.poll(async () => (last = await report(id)).status, { timeout, interval: 50 }).not.toBe(302);
      return last!;
    },
    async addVulnerability(v: typeof BASH | typeof ZLIB): Promise<void> {
      const res = await harbor(
        'POST',
        '/v1/namespaces/debian%3A9/vulnerabilities',
        { 'content-type': 'application/json' },
        JSON.stringify({
          Vulnerability: { ...v, NamespaceName: 'debian:9', FixedIn: v.FixedIn.map((f) => ({ ...f, NamespaceName: 'debian:9' })) },
        }),
      );
      expect(res.status, res.text).toBe(201);
    },
  };
}

/** The ScanRequest Harbor sends for repository@digest (job.go, models.go), with the robot account's Basic authorization. */
function scanRequest(registryUrl: string, repository: string, digest: string, authorization: string) {
  return {
    registry: { url: registryUrl, authorization, insecure: false },
    artifact: { repository, digest, tag: 'v1', mime_type: MIME_OCI_IMAGE_MANIFEST, size: 1234 },
    enabled_capabilities: [{ type: 'vulnerability', produces_mime_types: [MIME_VULN_REPORT_V1_1], parameters: null }],
  };
}

/** An error answer in the spec's envelope and media type, exactly: {"error":{"message"}}. */
function expectError(res: Answer, status: number, message: RegExp): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type'], res.text).toBe(MIME_ERROR);
  expect(Object.keys(res.json)).toEqual(['error']);
  expect(Object.keys(res.json.error)).toEqual(['message']);
  expect(res.json.error.message).toMatch(message);
}

describe.skipIf(missing.length > 0)(`Harbor's Pluggable Scanner API${skipped}`, () => {
  let scratch: string;
  let registry: Registry;
  let proxy: Awaited<ReturnType<typeof blobHoldingProxy>>;
  let t: TestApp;
  let base: string;
  /** The API's configuration: its authentication, and the proxy's plain HTTP (no account: Harbor gives the credentials). */
  let yaml: string;
  /** team/app:v1 and team/static:v1 (no packages), as skopeo pushed them. */
  let appDigest: string;
  let staticDigest: string;

  const { harbor, metadata, scan, report, accepted, finished, addVulnerability } = harborClient(() => base);
  const robot = () => basic(registry.username, registry.password);
  const harborScan = (repository: string, digest: string, authorization = robot()) =>
    scanRequest(proxy.url, repository, digest, authorization);
  const count = async (sql: string) => (await t.pool.query<{ n: number }>(sql)).rows[0]!.n;
  const scans = () => count('SELECT count(*)::int AS n FROM harbor_scan');
  const jobs = () => count('SELECT count(*)::int AS n FROM graphile_worker.jobs');

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'tarsier-harbor-'));
    ({ registry, proxy, appDigest } = await appRegistry(scratch));
    const plain = await ociLayout(join(scratch, 'static'), { layers: [layer({ 'srv/www/index.html': '<p>hello</p>' })] });
    staticDigest = await pushImage(registry, plain.dir, 'team/static', 'v1');
    yaml = `${API_AUTH_YAML}\n${registriesYaml(proxy.host)}`;
    t = await testApp({ yaml, imageQueue: true });
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

  it('accepts a scan at once, answers 302 with Refresh-After while it runs, then 200 with the report; records the tag', async () => {
    const release = proxy.hold();
    let id: string;
    try {
      id = await accepted(harborScan('team/app', appDigest));
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

    // The image is recorded with the artifact's tag, as a registry push records it.
    const images = await harbor('GET', `/tarsier/v1/images?repository=team/app&digest=${appDigest}`);
    expect(images.json.Images.map((i: { Registry: string; Tags: string[] }) => [i.Registry, i.Tags])).toEqual([[proxy.host, ['v1']]]);
  });

  it('reports an image without vulnerabilities with an empty list and no severity', async () => {
    const done = await finished(await accepted(harborScan('team/static', staticDigest)));
    expect(done.status, done.text).toBe(200);
    expect(done.json.vulnerabilities).toEqual([]);
    expect(done.json).not.toHaveProperty('severity');
  });

  it('reports the scan of an image whose namespace has no vulnerability data as failed (500 naming it), never as clean', async () => {
    const buster = await ociLayout(join(scratch, 'buster'), { layers: [debianLayer(10)] });
    const busterDigest = await pushImage(registry, buster.dir, 'team/buster', 'v1');
    const failed = await finished(await accepted(harborScan('team/buster', busterDigest)));
    expectError(
      failed,
      500,
      /^cannot tell whether the image is affected: debian:10: no vulnerability data .*; scan again once the data is there$/,
    );
  });

  it('answers 404 for a scan id it never gave, and 501 for a report type it does not produce', async () => {
    expectError(await report(randomUUID()), 404, /there is no scan/);
    expectError(await report('not-a-scan-id'), 404, /there is no scan "not-a-scan-id"/);
    expectError(
      await report(randomUUID(), 'application/vnd.security.sbom.report+json; version=1.0'),
      501,
      /names no report Tarsier produces/,
    );
    expectError(await report(randomUUID(), 'application/vnd.scanner.adapter.vuln.report.raw'), 501, /names no report Tarsier produces/);
    expectError(await harbor('GET', '/api/v1/scan'), 405, /GET is not allowed/);
  });

  it('answers 501 for a scan of a capability it does not declare (an SBOM), recording nothing', async () => {
    const [scansBefore, jobsBefore] = [await scans(), await jobs()];
    const valid = harborScan('team/app', appDigest);
    // Harbor's SBOM scan request (v1.2): its own capability type, report type and parameters.
    const sbom = {
      ...valid,
      enabled_capabilities: [
        {
          type: 'sbom',
          produces_mime_types: ['application/vnd.security.sbom.report+json; version=1.0'],
          parameters: { sbom_media_types: ['application/spdx+json'] },
        },
      ],
    };
    expectError(await scan(sbom), 501, /^Tarsier has no "sbom" capability/);
    const raw = {
      ...valid,
      enabled_capabilities: [{ type: 'vulnerability', produces_mime_types: ['application/vnd.scanner.adapter.vuln.report.raw'] }],
    };
    expectError(await scan(raw), 501, /produces none of the report types/);
    expect([await scans(), await jobs()]).toEqual([scansBefore, jobsBefore]);
  });

  it('refuses what it cannot scan before recording anything: 422 for an invalid field, 400 for a body that is not a request', async () => {
    const [scansBefore, jobsBefore] = [await scans(), await jobs()];
    const valid = harborScan('team/app', appDigest);
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
    // A compressed body cannot be read.
    expectError(
      await harbor('POST', '/api/v1/scan', { 'content-type': MIME_SCAN_REQUEST, 'content-encoding': 'gzip' }, JSON.stringify(valid)),
      415,
      /must not be compressed/,
    );
    expect([await scans(), await jobs()]).toEqual([scansBefore, jobsBefore]);
  });

  it('reports a scan the registry refused as failed (500 with the reason), and never stores the authorization', async () => {
    const secret = `wrong-${randomUUID()}`;
    const authorization = basic(registry.username, secret);
    const failed = await finished(await accepted(harborScan('team/app', appDigest, authorization)));
    expectError(failed, 500, /refused access .*\(401\): check the credentials/);
    expect(failed.text).not.toContain(secret);

    // The table holds the artifact and the scan's state, no column for a credential, and no
    // credential (this one or the good one of the earlier scans) in any row of any table, the
    // queue's included.
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
    expect(await scans()).toBeGreaterThanOrEqual(3);
    const { rows: tables } = await t.pool.query<{ name: string }>(
      `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
        WHERE table_schema IN ('public', 'graphile_worker') AND table_type = 'BASE TABLE'`,
    );
    expect(tables.length).toBeGreaterThan(10);
    for (const { name } of tables) {
      for (const credential of [secret, authorization, registry.password, robot()]) {
        const { rows } = await t.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${name} t WHERE t::text LIKE '%' || $1 || '%'`, [
          credential,
        ]);
        expect(rows[0]!.n, `${credential} in ${name}`).toBe(0);
      }
    }
  });

  it('answers every error in its media type: 401 without the registration, 500 and 503 from the server', async () => {
    const res = await request(`${base}/api/v1/metadata`, { headers: { accept: MIME_METADATA } });
    const text = await res.body.text();
    expectError({ status: res.statusCode, headers: res.headers, text, json: JSON.parse(text) }, 401, /./);

    // A route that fails, and one that never answers within clair.api.timeout.
    let stall!: () => void;
    const stalled = new Promise<void>((resolve) => (stall = resolve));
    const faulty = await testApp({
      yaml: '  api:\n    timeout: 200ms',
      routes: (app) => {
        app.get('/api/v1/fault', async () => {
          throw new Error('a fault of the server');
        });
        app.get('/api/v1/stall', async () => {
          await stalled;
          return {};
        });
      },
    });
    try {
      const answer = async (url: string): Promise<Answer> => {
        const res = await faulty.app.inject({ url });
        return { status: res.statusCode, headers: res.headers as Answer['headers'], text: res.body, json: JSON.parse(res.body) };
      };
      expectError(await answer('/api/v1/fault'), 500, /./);
      expectError(await answer('/api/v1/stall'), 503, /clair\.api\.timeout/);
    } finally {
      stall();
    }
  });

  it('leaves a scan to the live process holding its authorization; once it stops, runs it without that authorization, and says so when refused', async () => {
    // A replica accepts the scan, holding Harbor's authorization, and runs no worker of its own.
    const replica = await testApp({ yaml, pool: t.pool });
    const held = await replica.app.inject({
      method: 'POST',
      url: '/api/v1/scan',
      headers: { authorization: REGISTRATION, 'content-type': MIME_SCAN_REQUEST },
      payload: JSON.stringify(harborScan('team/app', appDigest)),
    });
    expect(held.statusCode, held.body).toBe(202);
    const id = JSON.parse(held.body).id as string;
    const job = async () =>
      (
        await t.pool.query<{ attempts: number; locked_by: string | null; flags: Record<string, boolean> }>(
          'SELECT attempts, locked_by, flags FROM graphile_worker.jobs WHERE key = $1',
          [`harbor-scan/${id}`],
        )
      ).rows[0];
    expect((await job())?.flags).toEqual({ [replica.images.harbor.holder]: true });
    expect(await t.images.harbor.foreignHolders()).toContain(replica.images.harbor.holder);

    // A scan queued after it, with no authorization to hold, is run here (and refused: the registry
    // needs credentials); the held one, ahead of it, is not.
    expectError(await finished(await accepted(harborScan('team/static', staticDigest, ''))), 500, /it needs credentials/);
    expect(await job()).toMatchObject({ attempts: 0, locked_by: null });
    expect((await report(id)).status).toBe(302);

    // The replica stops: the scan runs here, without Harbor's authorization, which the registry needs.
    await replica.app.close();
    expectError(
      await finished(id),
      500,
      /refused access .*\(401\).*resumed after the Tarsier process that accepted the scan stopped, without Harbor's registry authorization/,
    );
  });
});

describe.skipIf(missing.length > 0)(`Harbor scans across a restart${skipped}`, () => {
  let scratch: string;
  let registry: Registry;
  let proxy: Awaited<ReturnType<typeof blobHoldingProxy>>;
  let digest: string;
  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'tarsier-harbor-restart-'));
    ({ registry, proxy, appDigest: digest } = await appRegistry(scratch));
  });
  afterAll(async () => {
    await proxy?.close();
    await registry?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  it(
    'runs again, after a SIGTERM in the middle of it, a scan the restarted server completes and reports',
    { timeout: 90_000 },
    async () => {
      const database = await freshDatabase();
      const config = join(scratch, 'config.yaml');
      // The registry's account is configured: the restarted process has no copy of Harbor's authorization.
      await writeFile(config, `clair:\n${API_AUTH_YAML}\n  updater:\n    interval: 0\n${registriesYaml(proxy.host, registry)}\n`);
      const env = { DATABASE_URL: databaseUrl(database), TARSIER_CONFIG: config };
      let base = '';
      const { accepted, report, finished, addVulnerability, harbor } = harborClient(() => base);

      const first = await startTarsier(env);
      base = `http://127.0.0.1:${first.apiPort}`;
      await addVulnerability(BASH);
      const release = proxy.hold();
      let id: string;
      try {
        id = await accepted(scanRequest(proxy.url, 'team/app', digest, basic(registry.username, registry.password)));
        await expect.poll(() => proxy.waiting(), { timeout: 20_000 }).toBeGreaterThan(0);
        expect((await report(id)).status).toBe(302);
        first.child.kill('SIGTERM');
        expect(await first.exited).toBe(0);
      } finally {
        release();
      }

      const second = await startTarsier(env);
      base = `http://127.0.0.1:${second.apiPort}`;
      try {
        const done = await finished(id, 60_000);
        expect(done.status, done.text).toBe(200);
        expect(done.json.artifact).toEqual({ repository: 'team/app', digest, tag: 'v1', mime_type: MIME_OCI_IMAGE_MANIFEST });
        expect(done.json.vulnerabilities.map((v: { id: string; package: string }) => [v.id, v.package])).toEqual([[BASH.Name, 'bash']]);
        const images = await harbor('GET', `/tarsier/v1/images?digest=${digest}`);
        expect(images.json.Images.map((i: { Tags: string[] }) => i.Tags)).toEqual([['v1']]);
      } finally {
        second.child.kill('SIGTERM');
        await second.exited;
      }
    },
  );
});
