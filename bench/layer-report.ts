/**
 * Layer report latency: GET /v1/layers/:name?features&vulnerabilities on a 3-layer Debian image
 * (this machine's real dpkg database, split across the layers) with ≥ 50,000 vulnerabilities in the
 * database, at 1 and at 32 concurrent clients.
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { Pool as HttpPool } from 'undici';
import { markDataChanged } from '../src/store/generation.js';
import { createPool } from '../src/store/pool.js';
import { createVulnerability } from '../src/vulndb.js';
import { gzip, tarball } from '../test/helpers/tarball.js';
import { prng } from '../test/helpers/prng.js';
import { median, provenance, writeBenchmarkSection } from './lib.js';
import { benchDatabase, CACHE_DIR, startBenchServer } from './server.js';

const COMMAND = 'npm run bench -- layer-report';
const VULNERABILITIES = 50_000;
const CONCURRENCY = 32;
const LOAD_SECONDS = 15;
const WARMUP_SECONDS = 3;
const NAMESPACE = 'debian:12';
const COLD_REQUESTS = 200;

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

interface Load {
  latencies: number[];
  seconds: number;
}

/** clients concurrent loops of GETs for duration seconds (after a warm-up); every latency in ms. */
async function load(http: HttpPool, path: string, clients: number, duration: number): Promise<Load> {
  const latencies: number[] = [];
  const until = async (deadline: number, record: boolean) => {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < deadline) {
          const started = performance.now();
          const res = await http.request({ path, method: 'GET' });
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

/** One client; before each request the data generation moves on, so the report is built afresh. */
async function coldLoad(http: HttpPool, path: string, databaseUrl: string): Promise<Load> {
  const pool = createPool({ connectionString: databaseUrl }, 1, pino({ level: 'silent' }));
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < COLD_REQUESTS; i++) {
    await markDataChanged(pool);
    const before = performance.now();
    const res = await http.request({ path, method: 'GET' });
    await res.body.arrayBuffer();
    latencies.push(performance.now() - before);
  }
  await pool.end();
  return { latencies, seconds: (performance.now() - started) / 1000 };
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

    const row = (label: string, clients: number, { latencies, seconds }: Load) => {
      const sorted = [...latencies].sort((a, b) => a - b);
      return `| ${label} | ${clients} | ${latencies.length} | ${(latencies.length / seconds).toFixed(0)} | ${median(sorted).toFixed(1)} ms | ${percentile(sorted, 99).toFixed(1)} ms | ${sorted[sorted.length - 1]!.toFixed(1)} ms |`;
    };
    const rows = [row('rebuilt (data changed before each request)', 1, await coldLoad(http, path, database.url))];
    for (const clients of [1, CONCURRENCY])
      rows.push(row('cached (data unchanged)', clients, await load(http, path, clients, LOAD_SECONDS)));
    const body = [
      ...provenance(COMMAND),
      '',
      `Image: 3 layers built from this machine's real dpkg database (60 %, 85 % and 100 % of its stanzas), ${features} source-package features in the top layer. Database: ${vulnerabilities.toLocaleString('en')} vulnerabilities in ${NAMESPACE} (written through the same code as the API in ${seedSeconds.toFixed(0)} s, before the layers were indexed, so indexing linked them); ${affecting.toLocaleString('en')} of them affect the top layer. Indexing the three layers took ${indexTimes.map((t) => `${t.toFixed(0)} ms`).join(', ')}. Report: \`GET ${path}\`, ${(sample.length / 1024).toFixed(0)} KiB of JSON. Load: undici clients on the same machine (they share its 2 cores with the server and PostgreSQL), ${WARMUP_SECONDS} s warm-up, then ${LOAD_SECONDS} s measured.`,
      '',
      "A report is rebuilt when the data generation changed since it was last built (any vulnerability or layer write), and otherwise served from the replica's report cache; the first row forces a rebuild before every request by bumping the generation, as a vulnerability update would.",
      '',
      '| Report | Concurrent clients | Requests | Requests/s | p50 | p99 | max |',
      '|---|---|---|---|---|---|---|',
      ...rows,
    ].join('\n');
    await writeBenchmarkSection('Layer report latency', body);
  } finally {
    await http.close();
    await server.stop();
    await database.close();
  }
}
