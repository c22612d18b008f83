/**
 * `tarsier scan` against a running server, as a pipeline step runs it: image archives as docker
 * save (before and since Docker 25), skopeo and OCI tooling write them, built from real package
 * databases (dpkg, apk, rpm); the exit code at each threshold, --ignore-unfixed and an ignore file
 * (with an expired entry); every output format checked field by field and against its published
 * schema (SARIF 2.1.0, CycloneDX 1.6) or its own (JSON); layers the server already has are not sent
 * again (bytes counted at a relay); a registry image pulled by the server with credentials passed
 * through; and the errors a user acts on (exit 2).
 */
import { readFileSync } from 'node:fs';
import { createServer, connect, type Server } from 'node:net';
import { gzipSync } from 'node:zlib';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { runScan, type ScanOptions } from '../../src/scanner/command.js';
import { ScanReport as ScanReportSchema } from '../../src/scanner/report-schema.js';
import type { ScanReport } from '../../src/scanner/report.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { runnerSettings } from '../../src/settings.js';
import { enabledSources } from '../../src/updater/sources.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { silentLog } from '../helpers/db.js';
import { scanInProcess, type ScanRun } from '../helpers/scan-run.js';
import { startFeedServer } from '../helpers/feed-server.js';
import { addVulnerability } from '../helpers/vulnerabilities.js';
import {
  alpineLayer,
  alpineLayerTar,
  debianLayerTar,
  dockerSaveArchive,
  largeLayerDockerArchive,
  layerTar,
  missingSkopeo,
  ociArchive,
  rpmLayer,
  rpmLayerTar,
  skopeoArchive,
} from '../helpers/image-archives.js';
import { ociLayout, pushImage, debianLayer } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry, type Registry } from '../helpers/registry.js';
import { validateCycloneDx, validateSarif } from '../helpers/report-schemas.js';

/** The vulnerabilities the server knows, per namespace, as the v1 API takes them. */
const VULNERABILITIES = {
  'debian:10': [
    {
      Name: 'CVE-2099-2001',
      Severity: 'Critical',
      FixedIn: [{ Name: 'postgresql-11', Version: '11.22-0+deb10u3' }],
      Metadata: { NVD: { CVSSv3: { Score: 9.8, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' } } },
    },
    { Name: 'CVE-2099-2002', Severity: 'High', FixedIn: [{ Name: 'postgresql-common', Version: 'None' }] },
    { Name: 'CVE-2099-2003', Severity: 'Low', FixedIn: [{ Name: 'postgresql-11', Version: '11.23-0+deb10u1' }] },
    // Fixed before the image's version: affects nothing.
    { Name: 'CVE-2099-2004', Severity: 'Critical', FixedIn: [{ Name: 'postgresql-11', Version: '11.20-0+deb10u1' }] },
  ],
  'alpine:v3.18': [{ Name: 'CVE-2099-3001', Severity: 'Medium', FixedIn: [{ Name: 'openssl', Version: '3.1.0-r5' }] }],
  'amzn:2023': [{ Name: 'ALAS2023-2099-001', Severity: 'High', FixedIn: [{ Name: 'bash', Version: '5.2.15-1.amzn2023.0.3' }] }],
} as const;

async function addVulnerabilities(t: TestApp): Promise<void> {
  for (const [namespace, list] of Object.entries(VULNERABILITIES)) {
    for (const v of list) await addVulnerability(t, namespace, { ...v, Link: `https://security.example.org/${v.Name}` });
  }
}

/** A TCP relay in front of the server that counts the bytes clients send through it. */
async function countingRelay(port: number): Promise<{ port: number; sent: () => number; reset: () => void; close: () => Promise<void> }> {
  let sent = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    client.on('data', (chunk: Buffer) => (sent += chunk.length));
    client.pipe(upstream).on('error', () => client.destroy());
    upstream.pipe(client).on('error', () => upstream.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    sent: () => sent,
    reset: () => (sent = 0),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const DEFAULTS: ScanOptions = { format: 'json', ignoreUnfixed: false, quiet: false, insecure: false, update: false };

/** Runs `tarsier scan target` in this process, as the CLI does, with output captured and the clock the data's age is judged by at now. */
const scanAt = (now: Date, target: string, options: Partial<ScanOptions>, env: Record<string, string> = {}): Promise<ScanRun> =>
  scanInProcess(target, { ...DEFAULTS, ...options }, env, now);

const NOW = new Date('2026-11-24T12:00:00Z');

/** The data written by these tests is younger than this: the reports' createdAt stays fixed. */
const scan = (target: string, options: Partial<ScanOptions>, env: Record<string, string> = {}): Promise<ScanRun> =>
  scanAt(NOW, target, options, env);

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats.default(ajv);
const validateReport = ajv.compile(ScanReportSchema);

function report(run: ScanRun): ScanReport {
  expect(run.stderr).not.toMatch(/tarsier scan:/);
  const parsed = JSON.parse(run.stdout) as ScanReport;
  expect(validateReport(parsed), ajv.errorsText(validateReport.errors)).toBe(true);
  return parsed;
}

const ids = (r: ScanReport): string[] => r.vulnerabilities.map((f) => `${f.id} ${f.package.name}`);

describe('tarsier scan against a server', () => {
  let t: TestApp;
  let server: string;
  let dir: string;
  /** A Debian 10 image as docker save wrote it before Docker 25: the base, then a layer with an application file. */
  let debianArchive: string;
  let debianSaved: Awaited<ReturnType<typeof dockerSaveArchive>>['images'][number];
  const puts: string[] = [];

  beforeAll(async () => {
    t = await testApp({
      routes: (app) =>
        app.addHook('onRequest', async (request) => {
          if (request.method === 'PUT') puts.push(request.url);
        }),
    });
    await addVulnerabilities(t);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    server = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    dir = await mkdtemp(join(tmpdir(), 'tarsier-scan-'));
    debianArchive = join(dir, 'debian.tar');
    const saved = await dockerSaveArchive(
      debianArchive,
      [{ layers: [debianLayerTar(10), layerTar({ 'srv/app/main.sh': 'echo hello\n' })], repoTags: ['team/app:1.0'] }],
      { style: 'legacy' },
    );
    debianSaved = saved.images[0]!;
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('reports each affecting vulnerability of a docker save archive, field by field, in its JSON schema', async () => {
    const r = report(await scan(debianArchive, { server }));
    expect(r.target).toEqual({
      input: debianArchive,
      kind: 'docker-archive',
      digest: debianSaved.configDigest,
      platform: 'linux/amd64',
      references: ['team/app:1.0'],
    });
    expect(r.layers).toEqual(debianSaved.layerDigests);
    // The data behind the answer: debian:10's records, written through the API just now.
    expect(r.database).toEqual({
      mode: 'server',
      server,
      updatedAt: expect.any(String),
      namespaces: [{ namespace: 'debian:10', state: 'current', updatedAt: r.database.updatedAt, sources: ['api'] }],
    });
    const base = debianSaved.layerDigests[0]!;
    expect(r.packages).toEqual([
      {
        name: 'postgresql-11',
        version: '11.22-0+deb10u2',
        namespace: 'debian:10',
        versionFormat: 'dpkg',
        purl: 'pkg:deb/debian/postgresql-11@11.22-0%2Bdeb10u2?distro=debian-10',
        layer: base,
      },
      {
        name: 'postgresql-common',
        version: '200+deb10u5',
        namespace: 'debian:10',
        versionFormat: 'dpkg',
        purl: 'pkg:deb/debian/postgresql-common@200%2Bdeb10u5?distro=debian-10',
        layer: base,
      },
    ]);
    // Most severe first; the vulnerability fixed before the image's version is not there.
    expect(ids(r)).toEqual(['CVE-2099-2001 postgresql-11', 'CVE-2099-2002 postgresql-common', 'CVE-2099-2003 postgresql-11']);
    expect(r.vulnerabilities[0]).toEqual({
      id: 'CVE-2099-2001',
      namespace: 'debian:10',
      severity: 'Critical',
      description: 'CVE-2099-2001 in postgresql-11',
      link: 'https://security.example.org/CVE-2099-2001',
      package: r.packages[0],
      fixedBy: '11.22-0+deb10u3',
      fixState: 'fixed',
      cvss: { version: '3', score: 9.8, vector: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H', source: 'NVD' },
      metadata: VULNERABILITIES['debian:10'][0].Metadata,
    });
    expect(r.vulnerabilities[1]).toMatchObject({ id: 'CVE-2099-2002', severity: 'High', fixedBy: null, fixState: 'affected' });
    expect(r.summary).toEqual({ Critical: 1, High: 1, Low: 1 });
    expect(r.ignored).toEqual([]);
    expect(r.gate).toEqual({ failOn: null, failOnKev: false, failed: false });
  });

  it('exits 1 when a vulnerability at or above --fail-on remains, and 0 otherwise', async () => {
    const at = async (failOn: string) => (await scan(debianArchive, { server, failOn, quiet: true })).code;
    expect(await at('Defcon1')).toBe(0);
    expect(await at('critical')).toBe(1);
    expect(await at('High')).toBe(1);
    expect(await at('LOW')).toBe(1);
    expect(await at('Negligible')).toBe(1);
    const gated = report(await scan(debianArchive, { server, failOn: 'Critical' }));
    expect(gated.gate).toEqual({ failOn: 'Critical', failOnKev: false, failed: true });
  });

  it('--ignore-unfixed and an ignore file set findings aside; an expired entry no longer applies', async () => {
    const unfixed = await scan(debianArchive, { server, failOn: 'High', ignoreUnfixed: true });
    expect(unfixed.code).toBe(1); // the Critical one has a fix
    const r = report(unfixed);
    expect(ids(r)).toEqual(['CVE-2099-2001 postgresql-11', 'CVE-2099-2003 postgresql-11']);
    expect(r.ignored.map((f) => [f.id, f.ignored])).toEqual([['CVE-2099-2002', { because: 'unfixed' }]]);

    const ignoreFile = join(dir, 'ignore.yaml');
    await writeFile(
      ignoreFile,
      [
        '- id: CVE-2099-2001',
        '  package: postgresql-11',
        '  expires: 2027-01-31',
        '  reason: not reachable from the network in this image',
        '- id: cve-2099-2003',
        '  expires: 2026-11-23', // the day before NOW: no longer applies
        '- id: CVE-2099-2002',
        '  package: some-other-package', // another package: does not apply
      ].join('\n'),
    );
    const ignored = await scan(debianArchive, { server, failOn: 'High', ignoreUnfixed: true, ignore: ignoreFile });
    expect(ignored.code).toBe(0);
    const ri = report(ignored);
    expect(ids(ri)).toEqual(['CVE-2099-2003 postgresql-11']);
    expect(ri.ignored.map((f) => [f.id, f.ignored])).toEqual([
      ['CVE-2099-2001', { because: 'ignore-file', reason: 'not reachable from the network in this image', expires: '2027-01-31' }],
      ['CVE-2099-2002', { because: 'unfixed' }],
    ]);
    expect(ri.summary).toEqual({ Low: 1 });
    // The Low one's entry has expired: it gates again.
    expect((await scan(debianArchive, { server, failOn: 'Low', ignoreUnfixed: true, ignore: ignoreFile, quiet: true })).code).toBe(1);
  });

  it('sends only the layers the server has not scanned: a second scan sends no layer bytes', async () => {
    const relay = await countingRelay(new URL(server).port ? Number(new URL(server).port) : 80);
    try {
      const archive = join(dir, 'fresh.tar');
      const unique = layerTar({ 'srv/unique.txt': `${'x'.repeat(200_000)}\n` });
      const saved = (
        await dockerSaveArchive(archive, [{ layers: [debianLayerTar(10), unique], repoTags: ['team/fresh:1'] }], { style: 'legacy' })
      ).images[0]!;
      puts.length = 0;
      const first = await scan(archive, { server: `http://127.0.0.1:${relay.port}` });
      expect(report(first).target.digest).toBe(saved.configDigest);
      // The Debian base was sent by the first test; only the new layer goes now.
      expect(puts).toEqual([`/tarsier/v1/layers/${saved.layerDigests[1]}`]);
      expect(relay.sent()).toBeGreaterThan(unique.length);

      relay.reset();
      puts.length = 0;
      const second = await scan(archive, { server: `http://127.0.0.1:${relay.port}` });
      expect(ids(report(second))).toEqual(ids(report(first)));
      expect(puts).toEqual([]);
      // Requests only (HEADs, the ancestry, the report's GETs): a few KB, far less than either layer.
      expect(relay.sent()).toBeLessThan(8_000);
    } finally {
      await relay.close();
    }
  });

  it('writes SARIF 2.1.0 that validates, one rule per vulnerability and one result per affected package', async () => {
    const out = join(dir, 'report.sarif');
    const run = await scan(debianArchive, { server, format: 'sarif', output: out });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    const sarif = JSON.parse(await readFile(out, 'utf8')) as {
      version: string;
      runs: { tool: { driver: { rules: { id: string; properties: Record<string, unknown>; helpUri?: string }[] } }; results: any[] }[];
    };
    expect(validateSarif(sarif)).toEqual([]);
    expect(sarif.version).toBe('2.1.0');
    const [onlyRun] = sarif.runs;
    const rules = onlyRun!.tool.driver.rules;
    expect(rules.map((r) => r.id)).toEqual(['CVE-2099-2001', 'CVE-2099-2002', 'CVE-2099-2003']);
    expect(rules[0]!.properties['security-severity']).toBe('9.8');
    expect(rules[0]!.helpUri).toBe('https://security.example.org/CVE-2099-2001');
    expect(rules[1]!.properties['security-severity']).toBe('8.0');
    expect(onlyRun!.results.map((r) => [r.ruleId, r.level])).toEqual([
      ['CVE-2099-2001', 'error'],
      ['CVE-2099-2002', 'error'],
      ['CVE-2099-2003', 'note'],
    ]);
    expect(onlyRun!.results[0].locations[0].physicalLocation.artifactLocation.uri).toBe('var/lib/dpkg/status');
  });

  it('writes CycloneDX 1.6 that validates, with purls for deb, apk and rpm packages and the vulnerabilities affecting them', async () => {
    const images = [
      {
        name: 'debian',
        file: debianArchive,
        purl: 'pkg:deb/debian/postgresql-11@11.22-0%2Bdeb10u2?distro=debian-10',
        vulnerability: 'CVE-2099-2001',
      },
      {
        name: 'alpine',
        layer: alpineLayerTar('3.18'),
        purl: 'pkg:apk/alpine/openssl@3.1.0-r4?distro=alpine-3.18',
        vulnerability: 'CVE-2099-3001',
      },
      {
        name: 'amazon',
        layer: rpmLayerTar('amazonlinux2023'),
        purl: 'pkg:rpm/amazon/bash@5.2.15-1.amzn2023.0.2?distro=amzn-2023',
        vulnerability: 'ALAS2023-2099-001',
      },
    ];
    for (const image of images) {
      let file = image.file;
      if (!file) {
        file = join(dir, `${image.name}.tar`);
        await dockerSaveArchive(file, [{ layers: [image.layer!], repoTags: [`team/${image.name}:1`] }], { style: 'oci' });
      }
      const run = await scan(file, { server, format: 'cyclonedx' });
      expect(run.code, run.stderr).toBe(0);
      const bom = JSON.parse(run.stdout) as {
        specVersion: string;
        components: { purl: string; 'bom-ref': string }[];
        vulnerabilities: { id: string; affects: { ref: string }[]; ratings: { severity: string }[] }[];
      };
      expect(validateCycloneDx(bom)).toEqual([]);
      expect(bom.specVersion).toBe('1.6');
      expect(bom.components.map((c) => c.purl)).toContain(image.purl);
      const vulnerability = bom.vulnerabilities.find((v) => v.id === image.vulnerability);
      expect(vulnerability, image.name).toBeDefined();
      const refs = new Set(bom.components.map((c) => c['bom-ref']));
      for (const v of bom.vulnerabilities) for (const a of v.affects) expect(refs.has(a.ref)).toBe(true);
      expect(vulnerability!.affects.map((a) => a.ref)).toContain(bom.components.find((c) => c.purl === image.purl)!['bom-ref']);
    }
  });

  it('prints a table grouped by package, without colours when stdout is not a terminal', async () => {
    const run = await scan(debianArchive, { server, format: 'table' });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('\u001b[');
    expect(run.stdout).toMatch(/postgresql-11 11\.22-0\+deb10u2/);
    expect(run.stdout).toMatch(/CVE-2099-2001\s+Critical\s+11\.22-0\+deb10u3/);
    expect(run.stdout.trim().split('\n').at(-1)).toMatch(/^3 vulnerabilities: 1 Critical, 1 High, 1 Low/);
    // stderr says how old the data is (this server's vulnerabilities came through the v1 API).
    expect(run.stderr).toMatch(/^vulnerability data for debian:10: updated \S+ \(less than an hour ago, from api\)\n$/);
  });

  it('reads every archive shape: Docker 25 docker save, OCI archive and layout directory, gzip-compressed docker save, and skopeo', async () => {
    const expectFinds = async (target: string, kind: string, vulnerability: string) => {
      const run = await scan(target, { server });
      expect(run.code, run.stderr).toBe(0);
      const r = report(run);
      expect(r.target.kind).toBe(kind);
      expect(r.vulnerabilities.map((f) => f.id)).toContain(vulnerability);
      return r;
    };
    // Docker 25+: an OCI layout inside, named by the manifest digest.
    const modern = join(dir, 'modern.tar');
    const saved = (
      await dockerSaveArchive(modern, [{ layers: [alpineLayerTar('3.18')], repoTags: ['team/alpine:3.18'] }], { style: 'oci' })
    ).images[0]!;
    const r = await expectFinds(modern, 'docker-archive', 'CVE-2099-3001');
    expect(r.target.digest).toBe(saved.manifestDigest);
    expect(r.target.references).toEqual(['team/alpine:3.18']);

    const oci = join(dir, 'rpm.oci.tar');
    const archive = await ociArchive(oci, { layers: [rpmLayer('amazonlinux2023')] }, { tag: 'v1' });
    const fromArchive = await expectFinds(oci, 'oci-layout', 'ALAS2023-2099-001');
    expect(fromArchive.target.digest).toBe(archive.digest);
    expect(fromArchive.target.references).toEqual(['v1']);

    const layoutDir = join(dir, 'layout');
    const layout = await ociLayout(layoutDir, { layers: [rpmLayer('amazonlinux2023')] });
    expect((await expectFinds(`oci:${layoutDir}`, 'oci-layout', 'ALAS2023-2099-001')).target.digest).toBe(layout.digest);

    const gzipped = join(dir, 'debian.tar.gz');
    await writeFile(gzipped, gzipSync(await readFile(debianArchive)));
    expect((await expectFinds(gzipped, 'docker-archive', 'CVE-2099-2001')).target.digest).toBe(debianSaved.configDigest);

    if (!missingSkopeo()) {
      const bySkopeo = await skopeoArchive(join(dir, 'skopeo.tar'), { layers: [alpineLayer('3.18')] });
      expect((await expectFinds(bySkopeo.file, 'docker-archive', 'CVE-2099-3001')).target.digest).toBe(bySkopeo.configDigest);
    }
  });

  it('chooses the platform of a multi-platform layout: --platform, else linux/amd64; an unknown one is exit 2 naming those there', async () => {
    const layoutDir = join(dir, 'multi');
    const layout = await ociLayout(layoutDir, [
      { layers: [alpineLayer('3.18')], platform: { os: 'linux', architecture: 'amd64' } },
      { layers: [rpmLayer('amazonlinux2023')], platform: { os: 'linux', architecture: 'arm64' } },
    ]);
    const arm = report(await scan(layoutDir, { server, platform: 'linux/arm64' }));
    expect(arm.target).toMatchObject({ digest: layout.images[1]!.digest, platform: 'linux/arm64' });
    expect(arm.vulnerabilities.map((f) => f.id)).toEqual(['ALAS2023-2099-001']);
    if (process.arch === 'x64') {
      const amd = report(await scan(layoutDir, { server }));
      expect(amd.target).toMatchObject({ digest: layout.images[0]!.digest, platform: 'linux/amd64' });
    }
    const single = await scan(debianArchive, { server, platform: 'linux/arm64' });
    expect([single.code, single.stderr]).toEqual([2, 'tarsier scan: the image is linux/amd64, not linux/arm64\n']);
    const wrong = await scan(layoutDir, { server, platform: 'linux/s390x' });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/no linux\/s390x variant; its platforms: linux\/amd64, linux\/arm64/);
    expect(wrong.stdout).toBe('');
  });

  it('shows progress on a terminal, and stops sending when interrupted: the server stores nothing of that layer', async () => {
    const large = await largeLayerDockerArchive(join(dir, 'large.tar'), 256 * 1024 * 1024);
    const stdout = new PassThrough();
    const stderr = Object.assign(new PassThrough(), { isTTY: true }) as unknown as NodeJS.WriteStream;
    let progress = '';
    const interrupt = new AbortController();
    (stderr as unknown as PassThrough).on('data', (d: Buffer) => {
      progress += d.toString();
      // Interrupted (Ctrl-C) once the layer is on its way.
      if (/layer 1\/1 [0-9a-f]{12}: sending \d/.test(progress)) interrupt.abort();
    });
    const code = await runScan(large.file, { ...DEFAULTS, server }, { env: {}, stdout, stderr, signal: interrupt.signal });
    expect(code).toBe(2);
    expect(progress).toMatch(/sending [\d.]+ MiB of 256\.0 MiB/);
    expect(progress).toMatch(/tarsier scan: interrupted\n$/);
    const { rows } = await t.pool.query('SELECT 1 FROM layer_scan WHERE key = $1', [large.layerDigest]);
    expect(rows).toEqual([]);

    // A scan whose layers the server has: each is said to be there already.
    expect((await scan(debianArchive, { server })).code).toBe(0);
    let shown = '';
    const tty = Object.assign(new PassThrough(), { isTTY: true }) as unknown as NodeJS.WriteStream;
    (tty as unknown as PassThrough).on('data', (d: Buffer) => (shown += d.toString()));
    const done = await runScan(
      debianArchive,
      { ...DEFAULTS, server, format: 'table' },
      { env: {}, stdout, stderr: tty, signal: new AbortController().signal },
    );
    expect(done).toBe(0);
    expect(shown).toMatch(/layer 1\/2 [0-9a-f]{12}: already scanned\n/);
    expect(shown).toMatch(/matching vulnerabilities\n/);
  });

  it('reads a layer docker save linked to an earlier copy of the same bytes', async () => {
    const file = join(dir, 'repeated-layer.tar');
    const base = debianLayerTar(10);
    const { images } = await dockerSaveArchive(
      file,
      [{ layers: [base, layerTar({ 'srv/app/main.sh': 'echo repeat\n' }), base], repoTags: ['team/repeat:1'] }],
      { style: 'legacy' },
    );
    const saved = images[0]!;
    const r = report(await scan(file, { server }));
    expect(r.layers).toEqual(saved.layerDigests);
    expect(r.layers[2]).toBe(r.layers[0]);
    // The packages of the linked layer were read: the base's vulnerabilities are found.
    expect(ids(r)).toEqual(['CVE-2099-2001 postgresql-11', 'CVE-2099-2002 postgresql-common', 'CVE-2099-2003 postgresql-11']);
  });

  it('exits 2 with a message when it cannot scan, and writes no report', async () => {
    const cases: Array<[string, Partial<ScanOptions>, RegExp]> = [
      [join(dir, 'missing.tar'), { server }, /missing\.tar does not exist/],
      // A compressed archive's name, relative: never a pull of docker.io/library/image.tar.xz.
      ['image.tar.xz', { server }, /image\.tar\.xz does not exist/],
      ['image.tar.bz2', { server }, /image\.tar\.bz2 does not exist/],
      [debianArchive, { server, failOn: 'severe' }, /--fail-on severe is not a severity/],
      [debianArchive, { server, format: 'xml' }, /--format xml is not one of table, json, sarif, cyclonedx/],
      [debianArchive, { server, platform: 'linux' }, /--platform/],
      [debianArchive, { server: 'http://127.0.0.1:1' }, /cannot be reached/],
      [debianArchive, { server, token: 'x', db: 'bundle.gz' }, /--db and --update are for standalone scans/],
      [debianArchive, { server, ignore: join(dir, 'no-such-ignore.yaml') }, /--ignore .*no such file/],
    ];
    for (const [target, options, message] of cases) {
      const run = await scan(target, options);
      expect(run.code, `${target} ${JSON.stringify(options)}`).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe('');
    }
    const notAnImage = join(dir, 'not-an-image.tar');
    await writeFile(notAnImage, layerTar({ 'hello.txt': 'hi' }));
    const run = await scan(notAnImage, { server });
    expect([run.code, run.stderr]).toEqual([2, expect.stringMatching(/neither an OCI image layout .* nor a docker save archive/)]);
    const badIgnore = join(dir, 'bad-ignore.yaml');
    await writeFile(badIgnore, '- id: CVE-1\n  expire: 2027-01-01\n');
    const typo = await scan(debianArchive, { server, ignore: badIgnore });
    expect([typo.code, typo.stderr]).toEqual([2, expect.stringMatching(/entry 1 has unknown fields \(expire\)/)]);
  });
});

describe('tarsier scan against a server that does not have the data', () => {
  let t: TestApp;
  let server: string;
  let dir: string;
  let archive: string;
  /** The image's digest: a docker save archive before Docker 25 has no manifest digest, so its config's. */
  let digest: string;

  beforeAll(async () => {
    // A fresh server whose feeds never succeeded (no network, a broken mirror): no vulnerability data at all.
    t = await testApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    server = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    dir = await mkdtemp(join(tmpdir(), 'tarsier-scan-nodata-'));
    archive = join(dir, 'debian.tar');
    const saved = await dockerSaveArchive(archive, [{ layers: [debianLayerTar(10)], repoTags: ['team/app:1.0'] }], { style: 'legacy' });
    digest = saved.images[0]!.configDigest;
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('exits 2 naming the namespace without data, writes no report, and the images API counts nothing as 0', async () => {
    const run = await scan(archive, { server, failOn: 'Low' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('cannot tell whether the image is affected: the vulnerability data it needs is missing or too old\n');
    expect(run.stderr).toContain('  debian:10: no vulnerability data (the debian source has not brought any');
    expect(run.stderr).toContain('pass --allow-missing-data to scan anyway');
    expect(run.stdout).toBe('');
    // The image the scan assembled: to the images API its data is missing and its counts unknown (null), not 0.
    const detail = json(await t.app.inject({ url: `/tarsier/v1/images/${digest}` })).Image;
    expect(detail).toMatchObject({
      Summary: null,
      KnownExploited: null,
      Data: { State: 'missing', Namespaces: [{ Name: 'debian:10', State: 'missing', Sources: [], ExpectedSources: ['debian'] }] },
    });
  });

  it('exits 2 when the only data is EPSS and KEV, and an EPSS or KEV import leaves /status without an update time', async () => {
    const feeds = await startFeedServer(); // closed after the file
    {
      feeds.put('/epss.csv.gz', gzipSync(readFileSync(new URL('../fixtures/feeds/epss/epss-scores-excerpt.csv', import.meta.url))));
      feeds.put('/kev.json', readFileSync(new URL('../fixtures/feeds/kev/known_exploited_vulnerabilities-excerpt.json', import.meta.url)));
      const config = parseConfig(
        `clair:\n  updater:\n    sources:\n      epss: { url: "${feeds.url('/epss.csv.gz')}" }\n      kev: { url: "${feeds.url('/kev.json')}" }\n`,
      );
      const runner = new UpdaterRunner({ pool: t.pool, settings: runnerSettings(config), log: silentLog });
      for (const source of enabledSources(['epss', 'kev'])) expect((await runner.run(source)).status).toBe('updated');
    }
    expect(json(await t.app.inject({ url: '/status' })).status).not.toHaveProperty('last_update_time');
    const run = await scan(archive, { server, failOn: 'Low' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('  debian:10: no vulnerability data');
  });

  it('--allow-missing-data scans with a warning naming the namespace, and the report says its data is missing', async () => {
    const run = await scan(archive, { server, failOn: 'Low', allowMissingData: true });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      /^tarsier scan: warning: the findings may be incomplete: the vulnerability data is missing or too old\n {2}debian:10: no vulnerability data/,
    );
    const r = JSON.parse(run.stdout) as ScanReport;
    expect(validateReport(r), ajv.errorsText(validateReport.errors)).toBe(true);
    expect(r.database.namespaces).toEqual([{ namespace: 'debian:10', state: 'missing', updatedAt: null, sources: [] }]);
    expect(r.database.updatedAt).toBeNull();
    const detail = json(await t.app.inject({ url: `/tarsier/v1/images/${r.target.digest}` })).Image;
    expect(detail).toMatchObject({ Summary: null, KnownExploited: null, Data: { State: 'missing' } });
  });

  it('exits 2 on data older than --max-data-age, and scans with it when the age allowed is longer', async () => {
    await addVulnerability(t, 'debian:10', {
      Name: 'CVE-2099-6001',
      Severity: 'High',
      Link: 'https://security.example.org/CVE-2099-6001',
      FixedIn: [{ Name: 'postgresql-11', Version: '11.22-0+deb10u3' }],
    });
    // Six days from now, the data written now is older than the default 120h.
    const later = new Date(Date.now() + 6 * 86_400_000);
    const stale = await scanAt(later, archive, { server, failOn: 'Low' });
    expect(stale.code, stale.stderr).toBe(2);
    expect(stale.stderr).toMatch(
      / {2}debian:10: its vulnerability data \(from api\) was last updated \S+, longer ago than --max-data-age 120h\n/,
    );
    const allowed = await scanAt(later, archive, { server, failOn: 'Low', maxDataAge: '168h' });
    expect(allowed.code, allowed.stderr).toBe(1);
    expect(ids(report(allowed))).toEqual(['CVE-2099-6001 postgresql-11']);
  });
});

describe.skipIf(missingRegistryPrograms().length > 0)('tarsier scan of a registry image through a server', () => {
  let t: TestApp;
  let registry: Registry;
  let server: string;
  let dir: string;

  beforeAll(async () => {
    registry = await startRegistry({ auth: 'basic' });
    // The server allows plain HTTP to the registry: a scanner's --insecure cannot, with credentials.
    t = await testApp({ yaml: `  registries:\n    "${registry.host}": { insecure: true }` });
    await addVulnerabilities(t);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    server = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    dir = await mkdtemp(join(tmpdir(), 'tarsier-scan-registry-'));
    const layout = await ociLayout(join(dir, 'layout'), { layers: [debianLayer(10)] });
    await pushImage(registry, layout.dir, 'team/db', 'v1');
  });
  afterAll(async () => {
    await registry?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('is refused by a server whose configuration does not allow plain HTTP to the registry when credentials go with --insecure', async () => {
    const strict = await testApp({ pool: t.pool });
    await strict.app.listen({ host: '127.0.0.1', port: 0 });
    const elsewhere = `http://127.0.0.1:${(strict.app.server.address() as { port: number }).port}`;
    const login = { registryUser: registry.username, registryPassword: registry.password };
    const refused = await scan(`docker://${registry.host}/team/db:v1`, { server: elsewhere, insecure: true, ...login });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `plain HTTP to the registry ${registry.host} was asked for, but the credentials given with the request`,
    );
  });

  it('has the server pull it with the credentials given on the command line or stored by docker login, storing none', async () => {
    const reference = `docker://${registry.host}/team/db:v1`;
    const denied = await scan(reference, { server, insecure: true });
    expect(denied.code).toBe(2);
    expect(denied.stderr).toMatch(/401|unauthorized|denied|credentials/i);

    const given = await scan(reference, { server, insecure: true, registryUser: registry.username, registryPassword: registry.password });
    const r = report(given);
    expect(given.code).toBe(0);
    expect(r.target).toMatchObject({ kind: 'registry', platform: 'linux/amd64', references: [`${registry.host}/team/db:v1`] });
    expect(ids(r)).toEqual(['CVE-2099-2001 postgresql-11', 'CVE-2099-2002 postgresql-common', 'CVE-2099-2003 postgresql-11']);

    // docker login's config.json (auths: base64 user:password), found through DOCKER_CONFIG.
    const dockerConfig = join(dir, 'docker');
    await import('node:fs/promises').then((fs) => fs.mkdir(dockerConfig));
    const auth = Buffer.from(`${registry.username}:${registry.password}`).toString('base64');
    await writeFile(join(dockerConfig, 'config.json'), JSON.stringify({ auths: { [registry.host]: { auth } } }));
    const stored = await scan(reference, { server, insecure: true }, { DOCKER_CONFIG: dockerConfig });
    expect(stored.code, stored.stderr).toBe(0);
    expect(ids(report(stored))).toEqual(ids(r));

    // Without --platform: this machine's image of an index; a single-platform image whatever its platform.
    const multi = await ociLayout(join(dir, 'multi'), [
      { layers: [alpineLayer('3.18')], platform: { os: 'linux', architecture: 'amd64' } },
      { layers: [rpmLayer('amazonlinux2023')], platform: { os: 'linux', architecture: 'arm64' } },
    ]);
    await pushImage(registry, multi.dir, 'team/multi', 'v1');
    const withLogin = { server, insecure: true, registryUser: registry.username, registryPassword: registry.password };
    const fromIndex = report(await scan(`${registry.host}/team/multi:v1`, withLogin));
    const machine = process.arch === 'arm64' ? 'linux/arm64' : 'linux/amd64';
    expect(fromIndex.target.platform).toBe(machine);
    expect(fromIndex.target.digest).toBe(multi.images[machine === 'linux/arm64' ? 1 : 0]!.digest);
    const foreignOnly = await ociLayout(join(dir, 'arm-only'), {
      layers: [rpmLayer('amazonlinux2023')],
      platform: { os: 'linux', architecture: 's390x' },
    });
    await pushImage(registry, foreignOnly.dir, 'team/s390x', 'v1');
    const foreign = report(await scan(`${registry.host}/team/s390x:v1`, withLogin));
    expect(foreign.target).toMatchObject({ platform: 'linux/s390x', digest: foreignOnly.digest });
    expect(foreign.vulnerabilities.map((f) => f.id)).toEqual(['ALAS2023-2099-001']);
    // A single image whose config names no platform is scanned too (docker pull would run it).
    const unnamed = await ociLayout(join(dir, 'no-platform'), {
      layers: [rpmLayer('amazonlinux2023')],
      platform: { os: '', architecture: '' },
    });
    await pushImage(registry, unnamed.dir, 'team/no-platform', 'v1');
    const noPlatform = report(await scan(`${registry.host}/team/no-platform:v1`, withLogin));
    expect(noPlatform.target).toMatchObject({ platform: 'unknown', digest: unnamed.digest });
    expect(noPlatform.vulnerabilities.map((f) => f.id)).toEqual(['ALAS2023-2099-001']);
    const asked = await scan(`${registry.host}/team/s390x:v1`, { ...withLogin, platform: 'linux/amd64' });
    expect([asked.code, asked.stderr]).toEqual([2, expect.stringMatching(/is a single linux\/s390x image, not linux\/amd64/)]);

    // Passed through for the pull only: in no row of any table of the server's database.
    const { rows: tables } = await t.pool.query<{ name: string }>(
      `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
        WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`,
    );
    expect(tables.length).toBeGreaterThan(10);
    for (const { name } of tables) {
      const { rows } = await t.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${name} t WHERE t::text LIKE '%' || $1 || '%'`, [
        registry.password,
      ]);
      expect(rows[0]!.n, name).toBe(0);
    }
  });
});
