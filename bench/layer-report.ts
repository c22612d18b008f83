/**
 * Layer report latency: GET /v1/layers/:name?features&vulnerabilities on a 3-layer Debian image
 * (this machine's real dpkg database, split across the layers) with ≥ 50,000 vulnerabilities in the
 * database: built from scratch, rebuilt after a change to one of its vulnerabilities, served from
 * the cache after a change elsewhere, and cached at 1 and 32 concurrent clients, identity and
 * gzip, beside a bare node:http server writing the same bytes to the same clients.
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { gzipSync } from 'node:zlib';
import { Pool as HttpPool } from 'undici';
import { reportFormat } from '../src/api/v1/report-format.js';
import { LayerReports } from '../src/reports/layer-reports.js';
import { ReportCache } from '../src/reports/report-cache.js';
import { createPool } from '../src/store/pool.js';
import { createVulnerability } from '../src/vulndb.js';
import { gzip, tarball } from '../test/helpers/tarball.js';
import { prng } from '../test/helpers/prng.js';
import { median, provenance, recordTargets, writeBenchmarkSection } from './lib.js';
import { benchDatabase, CACHE_DIR, startBenchServer } from './server.js';

const COMMAND = 'npm run bench -- layer-report';
const VULNERABILITIES = 50_000;
const CONCURRENCY = 32;
const LOAD_SECONDS = 15;
const WARMUP_SECONDS = 3;
const NAMESPACE = 'debian:12';
const CHANGED_REQUESTS = 200;
const SCRATCH_BUILDS = 30;

/** The machine's dpkg stanzas, split into a base, a child and a grandchild layer (cumulative). */
async function writeLayers(): Promise<{ names: string[]; sources: Map<string, string> }> {
  await mkdir(CACHE_DIR, { recursive: true });
  const stanzas = readFileSync('/var/lib/dpkg/status', 'utf8').trim().split(/\n\n+/);
  const cuts = [Math.floor(stanzas.length * 0.6), Math.floor(stanzas.length * 0.85), stanzas.length];
  const names = ['report-base', 'report-child', 'report-grandchild'];
  for (const [i, name] of names.entries()) {
    const entries = [
      ...(i === 0 ? [{ path: 'etc/os-release', content: 'ID=debian\nVERSION_ID="12"\n' }] : []),
      { path: 'var/lib/dpkg/status', content: `${stanzas.slice(0, cuts[i]).join('\n\n')}\n` },
    ];
    await writeFile(join(CACHE_DIR, `${name}.tar.gz`), gzip(tarball(entries)));
  }
  // Source package → version, as the dpkg lister reads them (close enough to pick targets).
  const sources = new Map<string, string>();
  for (const s of stanzas) {
    const field = (f: string) => new RegExp(`^${f}: (.*)$`, 'm').exec(s)?.[1];
    const source = field('Source');
    const name = source?.split(' ')[0] ?? field('Package');
    const version = /\((.*)\)/.exec(source ?? '')?.[1] ?? field('Version');
    if (name && version) sources.set(name, version);
  }
  return { names, sources };
}

/**
 * 50,000 vulnerabilities: for each of the image's source packages a few that affect it (no fix yet,
 * or fixed in a later version) and one fixed before its version; the rest on other packages.
 */
async function seedVulnerabilities(databaseUrl: string, sources: Map<string, string>): Promise<number> {
  const pool = createPool({ connectionString: databaseUrl }, 16, pino({ level: 'silent' }));
  const random = prng(42);
  const jobs: Array<{ name: string; pkg: string; version: string }> = [];
  let n = 0;
  for (const [pkg, version] of sources) {
    jobs.push({ name: `CVE-2099-${n++}`, pkg, version: 'None' });
    jobs.push({ name: `CVE-2099-${n++}`, pkg, version: `${version}+deb12u9` });
    jobs.push({ name: `CVE-2099-${n++}`, pkg, version: `${version}+deb12u7` });
    jobs.push({ name: `CVE-2099-${n++}`, pkg, version: '0~0' });
  }
  while (jobs.length < VULNERABILITIES) {
    jobs.push({ name: `CVE-2099-${n++}`, pkg: `other-${Math.floor(random() * 20_000)}`, version: `1.${Math.floor(random() * 50)}-1` });
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < jobs.length) {
        const job = jobs[next++]!;
        await createVulnerability(pool, {
          namespace: NAMESPACE,
          name: job.name,
          description:
            `Synthetic vulnerability in ${job.pkg} for the report benchmark; descriptions of real advisories are a few hundred bytes long, like this one. `.repeat(
              2,
            ),
          link: `https://security-tracker.debian.org/tracker/${job.name}`,
          severity: (['Low', 'Medium', 'High', 'Critical'] as const)[Math.floor(random() * 4)]!,
          metadata: { NVD: { CVSSv3: { Score: 7.5, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N' } } },
          fixedIn: [{ feature: job.pkg, version: job.version === 'None' ? null : job.version }],
        });
      }
    }),
  );
  await pool.end();
  return jobs.length;
}

export interface Load {
  latencies: number[];
  seconds: number;
}

/** clients concurrent loops of GETs for duration seconds (after a warm-up); every latency in ms. */
async function load(http: HttpPool, path: string, clients: number, duration: number, headers: Record<string, string> = {}): Promise<Load> {
  const latencies: number[] = [];
  const until = async (deadline: number, record: boolean) => {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < deadline) {
          const started = performance.now();
          const res = await http.request({ path, method: 'GET', headers });
          await res.body.arrayBuffer();
          if (res.statusCode !== 200) throw new Error(`GET ${path} answered ${res.statusCode}`);
          if (record) latencies.push(performance.now() - started);
        }
      }),
    );
  };
  await until(performance.now() + WARMUP_SECONDS * 1000, false);
  const started = performance.now();
  await until(started + duration * 1000, true);
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

/**
 * One client; before each GET a vulnerability is changed through the API (PUT, a new description):
 * the write answers once the server has dropped what it made stale. Only the GET is timed.
 */
async function afterChanges(
  http: HttpPool,
  path: string,
  vulnerabilities: readonly string[],
  headers: Record<string, string> = {},
): Promise<Load> {
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < CHANGED_REQUESTS; i++) {
    const name = vulnerabilities[i % vulnerabilities.length]!;
    const put = await http.request({
      path: `/v1/namespaces/${encodeURIComponent(NAMESPACE)}/vulnerabilities/${name}`,
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ Vulnerability: { Name: name, Severity: 'High', Description: `Changed for the report benchmark (${i}).` } }),
    });
    await put.body.arrayBuffer();
    if (put.statusCode !== 200) throw new Error(`PUT ${name} answered ${put.statusCode}`);
    const before = performance.now();
    const res = await http.request({ path, method: 'GET', headers });
    await res.body.arrayBuffer();
    latencies.push(performance.now() - before);
  }
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

/** Each layer's report built in this process with an empty cache each time: its queries and serialization, no HTTP. */
export async function fromScratch(databaseUrl: string, layers: readonly string[]): Promise<Load> {
  const pool = createPool({ connectionString: databaseUrl }, 4, pino({ level: 'silent' }));
  const latencies: number[] = [];
  const started = performance.now();
  for (const layer of layers) {
    const cache = new ReportCache();
    cache.listening();
    const before = performance.now();
    await new LayerReports(pool, cache).report(layer, reportFormat({ revision: 'B', features: true, vulnerabilities: true }));
    latencies.push(performance.now() - before);
  }
  await pool.end();
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

/** The floor: a bare node:http server in a process of its own, answering every request with the same bytes and headers. */
async function startBareServer(body: Buffer, gzipped: boolean): Promise<{ port: number; stop: () => Promise<void> }> {
  const file = join(CACHE_DIR, `bare-report${gzipped ? '.gz' : ''}`);
  await writeFile(file, body);
  const code = `
    const body = require('node:fs').readFileSync(${JSON.stringify(file)});
    const headers = { 'content-type': 'application/json;charset=utf-8', 'content-length': body.length, vary: 'Accept-Encoding'${gzipped ? ", 'content-encoding': 'gzip'" : ''} };
    const server = require('node:http').createServer((req, res) => { res.writeHead(200, headers); res.end(body); });
    server.keepAliveTimeout = 60000;
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  return {
    port: Number(line.toString().trim()),
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The same load against the bare server. */
async function bareLoad(body: Buffer, gzipped: boolean, path: string): Promise<Load> {
  const bare = await startBareServer(body, gzipped);
  const http = new HttpPool(`http://127.0.0.1:${bare.port}`, { connections: CONCURRENCY });
  try {
    return await load(http, path, CONCURRENCY, LOAD_SECONDS, gzipped ? { 'accept-encoding': 'gzip' } : {});
  } finally {
    await http.close();
    await bare.stop();
  }
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function run(): Promise<void> {
  const { names, sources } = await writeLayers();
  const database = await benchDatabase(process.env);
  const server = await startBenchServer(database.url, `  api:\n    localroots: [${CACHE_DIR}]\n  updater:\n    interval: 0`);
  const http = new HttpPool(`http://127.0.0.1:${server.apiPort}`, { connections: CONCURRENCY });
  try {
    const seedStarted = performance.now();
    const vulnerabilities = await seedVulnerabilities(database.url, sources);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    // Statistics for the planner, as autovacuum would gather them on a server where it runs.
    const analyzer = createPool({ connectionString: database.url }, 1, pino({ level: 'silent' }));
    await analyzer.query('ANALYZE');
    await analyzer.end();
    const indexTimes: number[] = [];
    for (const [i, name] of names.entries()) {
      const started = performance.now();
      const res = await fetch(`http://127.0.0.1:${server.apiPort}/v1/layers`, {
        method: 'POST',
        body: JSON.stringify({
          Layer: { Name: name, Path: join(CACHE_DIR, `${name}.tar.gz`), Format: 'Docker', ParentName: i ? names[i - 1] : undefined },
        }),
      });
      if (res.status !== 201) throw new Error(`POST answered ${res.status}: ${await res.text()}`);
      indexTimes.push(performance.now() - started);
    }
    const path = `/v1/layers/${names[2]}?features&vulnerabilities`;
    const sample = await (await fetch(`http://127.0.0.1:${server.apiPort}${path}`)).text();
    const report = JSON.parse(sample) as { Layer: { Features: Array<{ Vulnerabilities: unknown[] }> } };
    const features = report.Layer.Features.length;
    const affecting = report.Layer.Features.reduce((sum, f) => sum + f.Vulnerabilities.length, 0);

    const gzipped = Buffer.from(
      await (await http.request({ path, method: 'GET', headers: { 'accept-encoding': 'gzip' } })).body.arrayBuffer(),
    );
    // Vulnerabilities of the image (to change before each request) and of other packages only.
    const ofImage = report.Layer.Features.flatMap((f) => f.Vulnerabilities as Array<{ Name: string }>).map((v) => v.Name);
    const elsewhere = Array.from({ length: 50 }, (_, i) => `CVE-2099-${vulnerabilities - 1 - i}`);

    const rows: Array<{ label: string; clients: number; load: Load; floor?: Load }> = [];
    rows.push({
      label: 'built from scratch (empty cache, in process, no HTTP)',
      clients: 1,
      load: await fromScratch(database.url, Array<string>(SCRATCH_BUILDS).fill(names[2]!)),
    });
    rows.push({
      label: 'rebuilt: one of its vulnerabilities changed before each request',
      clients: 1,
      load: await afterChanges(http, path, ofImage),
    });
    rows.push({
      label: 'rebuilt, gzip: one of its vulnerabilities changed before each request',
      clients: 1,
      load: await afterChanges(http, path, ofImage, { 'accept-encoding': 'gzip' }),
    });
    rows.push({
      label: 'cached: a vulnerability of another package changed before each request',
      clients: 1,
      load: await afterChanges(http, path, elsewhere),
    });
    rows.push({ label: 'cached, identity', clients: 1, load: await load(http, path, 1, LOAD_SECONDS) });
    rows.push({
      label: 'cached, identity',
      clients: CONCURRENCY,
      load: await load(http, path, CONCURRENCY, LOAD_SECONDS),
      floor: await bareLoad(Buffer.from(sample), false, path),
    });
    rows.push({
      label: 'cached, gzip',
      clients: CONCURRENCY,
      load: await load(http, path, CONCURRENCY, LOAD_SECONDS, { 'accept-encoding': 'gzip' }),
      floor: await bareLoad(gzipped, true, path),
    });
    const rate = ({ latencies, seconds }: Load) => latencies.length / seconds;
    const line = ({ label, clients, load: measured, floor }: (typeof rows)[number]) => {
      const sorted = [...measured.latencies].sort((a, b) => a - b);
      const vsFloor = floor ? `${rate(floor).toFixed(0)} req/s; ratio ${(rate(measured) / rate(floor)).toFixed(2)}` : '—';
      return `| ${label} | ${clients} | ${measured.latencies.length} | ${rate(measured).toFixed(0)} | ${median(sorted).toFixed(1)} ms | ${percentile(sorted, 99).toFixed(1)} ms | ${sorted[sorted.length - 1]!.toFixed(1)} ms | ${vsFloor} |`;
    };
    const body = [
      ...provenance(COMMAND),
      '',
      `Image: 3 layers built from this machine's real dpkg database (60 %, 85 % and 100 % of its stanzas), ${features} source-package features in the top layer. Database: ${vulnerabilities.toLocaleString('en')} vulnerabilities in ${NAMESPACE} (written through the same code as the API in ${seedSeconds.toFixed(0)} s, before the layers were indexed, so indexing linked them; then ANALYZE, as autovacuum would); ${affecting.toLocaleString('en')} of them affect the top layer. Indexing the three layers took ${indexTimes.map((t) => `${t.toFixed(0)} ms`).join(', ')}. Report: \`GET ${path}\`, ${(sample.length / 1024).toFixed(0)} KiB of JSON, ${(gzipped.length / 1024).toFixed(0)} KiB as served gzip-compressed (${(gzipSync(sample).length / 1024).toFixed(0)} KiB compressed whole by zlib at its default level). Load: undici clients on the same machine (they share its 2 cores with the server and PostgreSQL), ${WARMUP_SECONDS} s warm-up, then ${LOAD_SECONDS} s measured.`,
      '',
      'A report is assembled from per-feature-version fragments; a change drops only the fragments and reports that show it (PostgreSQL triggers announce it to every replica). The rebuilt rows PUT a new description on a vulnerability before each GET (the PUT is not timed): of the image (its fragment and the report are rebuilt), or of a package the image does not have (the report stays cached); the gzip row asks for gzip, so the rebuilt report is compressed too. The floor is a bare `node:http` server in its own process answering every request with the same bytes and headers, measured with the same clients right after.',
      '',
      '| Report | Concurrent clients | Requests | Requests/s | p50 | p99 | max | Floor (bare server) |',
      '|---|---|---|---|---|---|---|---|',
      ...rows.map(line),
    ].join('\n');
    await writeBenchmarkSection('Layer report latency', body);
    const [, rebuilt, rebuiltGzip, unaffected, , identity, gzipped32] = rows.map((r) => {
      const sorted = [...r.load.latencies].sort((a, b) => a - b);
      return { p50: median(sorted), p99: percentile(sorted, 99), rate: rate(r.load), floor: r.floor && rate(r.floor) };
    });
    const ms = (x: number) => `${x.toFixed(1)} ms`;
    const versusBare = (r: typeof identity) => `${(r!.rate / r!.floor!).toFixed(2)} × bare`;
    await recordTargets([
      {
        measure: `rebuilt report (${features} features, ${affecting.toLocaleString('en')} vulnerabilities), 1 client`,
        before: '73–76 ms p50',
        target: '< 10 ms p50, < 20 ms p99',
        now: `${ms(rebuilt!.p50)} p50, ${ms(rebuilt!.p99)} p99`,
        floor: '—',
        ratio: '—',
        met: rebuilt!.p50 < 10 && rebuilt!.p99 < 20,
        benchmark: 'layer-report',
      },
      {
        measure: `rebuilt report, gzip (${features} features, ${affecting.toLocaleString('en')} vulnerabilities), 1 client`,
        before: '17.9 ms p50 (10.9 ms identity, same run)',
        target: '< 10 ms p50',
        now: `${ms(rebuiltGzip!.p50)} p50, ${ms(rebuiltGzip!.p99)} p99`,
        floor: '—',
        ratio: '—',
        met: rebuiltGzip!.p50 < 10,
        benchmark: 'layer-report',
      },
      {
        measure: 'one vulnerability changed → report of an unaffected image',
        before: 'rebuilt (73 ms)',
        target: 'from cache (< 3 ms)',
        now: `${ms(unaffected!.p50)} p50`,
        floor: '—',
        ratio: '—',
        met: unaffected!.p50 < 3,
        benchmark: 'layer-report',
      },
      {
        measure: `cached gzip report, ${CONCURRENCY} connections`,
        before: '0.5–0.67 × bare server',
        target: '≥ 0.9 × bare server',
        now: `${gzipped32!.rate.toFixed(0)} req/s`,
        floor: `${gzipped32!.floor!.toFixed(0)} req/s`,
        ratio: versusBare(gzipped32),
        met: gzipped32!.rate / gzipped32!.floor! >= 0.9,
        benchmark: 'layer-report',
      },
      {
        measure: `cached identity report, ${CONCURRENCY} connections`,
        before: '0.7 × bare server',
        target: '≥ 0.9 × bare server',
        now: `${identity!.rate.toFixed(0)} req/s`,
        floor: `${identity!.floor!.toFixed(0)} req/s`,
        ratio: versusBare(identity),
        met: identity!.rate / identity!.floor! >= 0.9,
        benchmark: 'layer-report',
      },
    ]);
  } finally {
    await http.close();
    await server.stop();
    await database.close();
  }
}
