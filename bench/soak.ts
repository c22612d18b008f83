/**
 * Soak: ten minutes of mixed reads and writes at the highest rate the machine sustains (closed-loop
 * clients, as many as keep the server's core busy), with the server's resident memory and open
 * file descriptors read from /proc every 30 s. A leak shows as a rising column.
 */
import { readdir } from 'node:fs/promises';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Pool as HttpPool } from 'undici';
import { gzip, tarball } from '../test/helpers/tarball.js';
import { provenance, writeBenchmarkSection } from './lib.js';
import { benchDatabase, CACHE_DIR, memoryOf, startBenchServer } from './server.js';

const COMMAND = 'npm run bench -- soak';
const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const SAMPLE_SECONDS = 30;
const CLIENTS = 16;

/** Requests of the mix, by weight: mostly reads, as CI pipelines and dashboards make them. */
type Call = { label: string; method: 'GET' | 'POST' | 'PUT'; path: string; body?: () => string };

async function openFiles(pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length;
}

async function writeLayer(): Promise<string> {
  await mkdir(CACHE_DIR, { recursive: true });
  const path = join(CACHE_DIR, 'soak-layer.tar.gz');
  const stanzas = Array.from(
    { length: 300 },
    (_, i) => `Package: pkg${i}\nStatus: install ok installed\nVersion: 1.${i}-1\nArchitecture: amd64\n`,
  );
  await writeFile(
    path,
    gzip(
      tarball([
        { path: 'etc/os-release', content: 'ID=debian\nVERSION_ID="12"\n' },
        { path: 'var/lib/dpkg/status', content: stanzas.join('\n') },
      ]),
    ),
  );
  return path;
}

export async function run(): Promise<void> {
  const layer = await writeLayer();
  const database = await benchDatabase(process.env);
  const server = await startBenchServer(database.url, `  api:\n    localroots: [${CACHE_DIR}]\n  updater:\n    interval: 0`);
  const http = new HttpPool(`http://127.0.0.1:${server.apiPort}`, { connections: CLIENTS });
  let written = 0;
  const calls: Call[] = [
    { label: 'GET layer report', method: 'GET', path: '/v1/layers/soak?features&vulnerabilities' },
    { label: 'GET layer report', method: 'GET', path: '/v1/layers/soak?features&vulnerabilities' },
    { label: 'GET layer report', method: 'GET', path: '/v1/layers/soak?features&vulnerabilities' },
    { label: 'GET ancestry', method: 'GET', path: '/ancestry/soak' },
    { label: 'GET namespaces', method: 'GET', path: '/v1/namespaces' },
    { label: 'GET vulnerability list', method: 'GET', path: '/v1/namespaces/debian%3A12/vulnerabilities?limit=50' },
    { label: 'GET status', method: 'GET', path: '/status' },
    {
      label: 'POST vulnerability',
      method: 'POST',
      path: '/v1/namespaces/debian%3A12/vulnerabilities',
      body: () =>
        JSON.stringify({
          Vulnerability: {
            Name: `CVE-SOAK-${written++}`,
            Severity: 'Low',
            FixedIn: [{ Name: `pkg${written % 300}`, Version: `1.${written % 300}-2` }],
          },
        }),
    },
    {
      label: 'PUT vulnerability',
      method: 'PUT',
      path: '/v1/namespaces/debian%3A12/vulnerabilities/CVE-SOAK-0',
      body: () => JSON.stringify({ Vulnerability: { Severity: written % 2 === 0 ? 'High' : 'Medium', Description: `update ${written}` } }),
    },
    {
      label: 'POST layer (indexed already)',
      method: 'POST',
      path: '/v1/layers',
      body: () => JSON.stringify({ Layer: { Name: 'soak', Path: layer, Format: 'Docker' } }),
    },
    {
      label: 'POST ancestry (unchanged)',
      method: 'POST',
      path: '/ancestry',
      body: () => JSON.stringify({ ancestry_name: 'soak', format: 'Docker', layers: [{ hash: 'sha256:soak', path: layer }] }),
    },
  ];
  try {
    for (const call of calls.filter((c) => c.method !== 'GET')) {
      const res = await http.request({ method: call.method, path: call.path, body: call.body?.() });
      await res.body.dump();
      if (res.statusCode >= 300) throw new Error(`${call.label} answered ${res.statusCode}`);
    }
    const counts = new Map<number, number>();
    let done = 0;
    let stop = false;
    const client = async (offset: number): Promise<void> => {
      for (let i = offset; !stop; i++) {
        const call = calls[i % calls.length]!;
        const res = await http.request({
          method: call.method,
          path: call.path,
          body: call.body?.(),
          headers: { 'accept-encoding': 'gzip' },
        });
        await res.body.dump();
        counts.set(res.statusCode, (counts.get(res.statusCode) ?? 0) + 1);
        done++;
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, i) => client(i * 3));
    const rows: string[] = [];
    const started = performance.now();
    let lastDone = 0;
    let lastAt = started;
    for (let elapsed = 0; elapsed < MINUTES * 60; elapsed += SAMPLE_SECONDS) {
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_SECONDS * 1000));
      const now = performance.now();
      const { rssMiB } = await memoryOf(server.pid);
      const rate = ((done - lastDone) / (now - lastAt)) * 1000;
      rows.push(
        `| ${((now - started) / 60_000).toFixed(1)} | ${rate.toFixed(0)} | ${rssMiB.toFixed(0)} MiB | ${await openFiles(server.pid)} |`,
      );
      process.stdout.write(`${rows.at(-1)}\n`);
      lastDone = done;
      lastAt = now;
    }
    stop = true;
    await Promise.all(clients);
    const seconds = (performance.now() - started) / 1000;
    const { peakMiB } = await memoryOf(server.pid);
    const statuses = [...counts]
      .sort(([a], [b]) => a - b)
      .map(([status, n]) => `${n.toLocaleString('en')} × ${status}`)
      .join(', ');
    const body = [
      ...provenance(COMMAND),
      '',
      `${MINUTES} minutes of ${CLIENTS} closed-loop clients on the same machine (they share its 2 cores with the server and PostgreSQL), cycling through: ${[...new Set(calls.map((c) => c.label))].join(', ')} (layer reports three times as often). Each POST vulnerability adds one; the PUT changes one every time, and each new vulnerability affects a package of the layer, so every write drops the fragments of that package and the report, the next report is reassembled, and reports grow as the data does. ${done.toLocaleString('en')} requests in ${seconds.toFixed(0)} s (${(done / seconds).toFixed(0)} req/s on average): ${statuses}. Peak RSS ${peakMiB.toFixed(0)} MiB.`,
      '',
      "Every 30 s: the rate over the last interval, the server's resident memory and its open file descriptors.",
      '',
      '| Minute | Requests/s | RSS | Open descriptors |',
      '|---|---|---|---|',
      ...rows,
    ].join('\n');
    await writeBenchmarkSection('Soak (mixed reads and writes)', body);
  } finally {
    await http.close();
    await server.stop();
    await database.close();
  }
}
