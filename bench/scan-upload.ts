/**
 * `tarsier scan` in server mode, as a CI job runs it: a docker save archive with one 1 GiB layer
 * (zeros, plus Debian 10's os-release and dpkg status so it yields packages) scanned by the built
 * CLI in a process of its own against a running server; beside it, in the same run, its floor: the
 * same layer's bytes PUT by a plain HTTP client to a bare Node server that only hashes them. Then
 * the same image scanned again, through a counting relay, to show that no layer is sent twice.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { readFile, rm } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { largeLayerDockerArchive, type LargeLayerArchive } from '../test/helpers/image-archives.js';
import { median, provenance, timed, warm, writeBenchmarkSection, type Timed } from './lib.js';
import { benchDatabase, CACHE_DIR, startBenchServer } from './server.js';

const RUNS = 5;
const COMMAND = 'npm run bench -- scan-upload';
const CLI = fileURLToPath(new URL('../dist/src/cli.js', import.meta.url));
const GIB = 2 ** 30;
const MIB = 2 ** 20;
/** What the scanner's archive reader streams a layer with (src/scanner/image-files.ts); the floor reads the same way. */
const READ_CHUNK = 256 * 1024;

interface Scanned extends Timed {
  packages: number;
  layers: string[];
}

/** `tarsier scan --server URL --format json --quiet ARCHIVE`, the built CLI in a process of its own. */
async function scan(server: string, archive: string): Promise<Scanned> {
  const result = await timed(process.execPath, [CLI, 'scan', '--server', server, '--format', 'json', '--quiet', archive]);
  const report = JSON.parse(result.stdout) as { packages: unknown[]; layers: string[] };
  return { ...result, packages: report.packages.length, layers: report.layers };
}

/** CPU time (user + system) a process has used so far, in seconds (Linux /proc; clock ticks of 1/100 s). */
async function cpuOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The floor's server: a bare node:http server, a process of its own, that hashes each body with sha256 and answers 201. */
const BARE_SERVER = `
const { createServer } = require('node:http');
const { createHash } = require('node:crypto');
const server = createServer((req, res) => {
  const hash = createHash('sha256');
  req.on('data', (chunk) => hash.update(chunk));
  req.on('end', () => {
    res.writeHead(201, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ digest: 'sha256:' + hash.digest('hex') }));
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

async function startBareServer(): Promise<{ port: number; pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['-e', BARE_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`the bare server exited ${code}`)));
  });
  return {
    port,
    pid: child.pid!,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The floor's client, a process of its own: PUT of a byte range of a file with undici, from a file stream; prints the answer. */
const FLOOR_CLIENT = `
const [undici, url, file, start, end] = process.argv.slice(1);
const { request } = await import(undici);
const { createReadStream } = await import('node:fs');
const res = await request(url, {
  method: 'PUT',
  headers: { 'content-type': 'application/octet-stream', 'content-length': String(Number(end) - Number(start) + 1) },
  body: createReadStream(file, { start: Number(start), end: Number(end), highWaterMark: ${READ_CHUNK} }),
});
process.stdout.write(JSON.stringify({ status: res.statusCode, ...(await res.body.json()) }));
`;
const UNDICI = pathToFileURL(createRequire(import.meta.url).resolve('undici')).href;

/** The floor: the layer's byte range of the archive PUT to the bare server by FLOOR_CLIENT. */
async function floorUpload(port: number, archive: LargeLayerArchive): Promise<Timed> {
  const { offset, size } = archive.layer;
  const url = `http://127.0.0.1:${port}/tarsier/v1/layers/${archive.layerDigest}`;
  const result = await timed(process.execPath, [
    '--input-type=module',
    '-e',
    FLOOR_CLIENT,
    UNDICI,
    url,
    archive.file,
    String(offset),
    String(offset + size - 1),
  ]);
  const answer = JSON.parse(result.stdout) as { status: number; digest: string };
  if (answer.status !== 201 || answer.digest !== archive.layerDigest) {
    throw new Error(`the bare server answered ${answer.status} ${answer.digest}, expected ${archive.layerDigest}`);
  }
  return result;
}

/** A TCP relay on loopback that counts the bytes each way between the scanner and the server. */
async function countingRelay(target: number): Promise<{ port: number; counts(): { up: number; down: number }; close(): Promise<void> }> {
  let up = 0;
  let down = 0;
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    }
    client.on('data', (d: Buffer) => (up += d.length));
    upstream.on('data', (d: Buffer) => (down += d.length));
    client.pipe(upstream);
    upstream.pipe(client);
    client.once('error', () => upstream.destroy());
    upstream.once('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    port: (relay.address() as { port: number }).port,
    counts: () => ({ up, down }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        relay.close(() => resolve());
      }),
  };
}

/** The server's own time for each request it logs ("request completed"), by method and path. */
function requestTimes(stdout: NodeJS.ReadableStream): { take(method: string, prefix: string): number[] } {
  let buffer = '';
  const seen: { method: string; url: string; ms: number }[] = [];
  stdout.on('data', (d: Buffer) => {
    buffer += d.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes('"request completed"')) continue;
      const entry = JSON.parse(line) as { req?: { method?: string; url?: string }; responseTime?: number };
      if (entry.req?.method && entry.req.url && entry.responseTime !== undefined) {
        seen.push({ method: entry.req.method, url: entry.req.url, ms: entry.responseTime });
      }
    }
  });
  return {
    take(method, prefix) {
      const matching = seen.filter((r) => r.method === method && r.url.startsWith(prefix)).map((r) => r.ms / 1000);
      seen.length = 0;
      return matching;
    },
  };
}

const s = (xs: readonly number[]): string => `${median(xs).toFixed(2)} s`;
const list = (xs: readonly number[]): string => xs.map((x) => x.toFixed(2)).join(', ');
const rate = (bytes: number, seconds: readonly number[]): string => `${(bytes / MIB / median(seconds)).toFixed(0)} MiB/s`;

export async function run(): Promise<void> {
  const database = await benchDatabase(process.env);
  const server = await startBenchServer(database.url, '  updater:\n    interval: 0');
  const times = requestTimes(server.child.stdout!);
  const bare = await startBareServer();
  const relay = await countingRelay(server.apiPort);
  const direct = `http://127.0.0.1:${server.apiPort}`;
  const relayed = `http://127.0.0.1:${relay.port}`;
  const archives: LargeLayerArchive[] = [];
  const floors: number[] = [];
  const coldReads: number[] = [];
  const floorClientCpu: number[] = [];
  const bareServerCpu: number[] = [];
  const serverCpu: number[] = [];
  const first: Scanned[] = [];
  const serverPut: number[] = [];
  const again: Scanned[] = [];
  const sentAgain: number[] = [];
  const receivedAgain: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      // i × 512 more zeros: each run's layer has a digest of its own, so the server has not scanned it yet.
      const archive = await largeLayerDockerArchive(join(CACHE_DIR, `scan-upload-${i}.tar`), GIB + i * 512);
      archives.push(archive);
      coldReads.push(await warm(archive.file));
      const bareBefore = await cpuOf(bare.pid);
      const floor = await floorUpload(bare.port, archive);
      bareServerCpu.push((await cpuOf(bare.pid)) - bareBefore);
      floors.push(floor.seconds);
      floorClientCpu.push(floor.cpuSeconds);
      times.take('PUT', '');
      const serverBefore = await cpuOf(server.pid);
      const scanned = await scan(direct, archive.file);
      serverCpu.push((await cpuOf(server.pid)) - serverBefore);
      if (scanned.layers.join() !== archive.layerDigest) throw new Error(`the scan reported layers ${scanned.layers.join()}`);
      first.push(scanned);
      serverPut.push(...times.take('PUT', '/tarsier/v1/layers/'));
      const before = relay.counts();
      const rescanned = await scan(relayed, archive.file);
      const after = relay.counts();
      if (times.take('PUT', '').length > 0) throw new Error('the second scan sent a layer');
      again.push(rescanned);
      sentAgain.push(after.up - before.up);
      receivedAgain.push(after.down - before.down);
    }
  } finally {
    await relay.close();
    await bare.stop();
    await server.stop();
    await database.close();
    for (const archive of archives) await rm(archive.file, { force: true });
  }
  const layerBytes = median(archives.map((a) => a.layer.size));
  const scanSeconds = first.map((r) => r.seconds);
  const body = [
    ...provenance(COMMAND),
    '',
    `Image: a docker save archive (Docker before 25) of one image whose one layer is an uncompressed tar of ${(layerBytes / MIB).toFixed(0)} MiB: 1 GiB of zeros plus Debian 10's os-release and dpkg status, which yield ${first[0]!.packages} packages. Each run writes its own archive, with 512 more zero bytes than the one before so that its layer is new to the server, as a sparse file, and reads it through once before measuring (the first read of a sparse file fills the page cache with zeros, ${s(coldReads)} here; an archive docker save has just written is in the page cache too), so the scan and the floor read it from memory alike.`,
    '',
    `The scan is \`node dist/src/cli.js scan --server URL --format json --quiet ARCHIVE\`, a process of its own, against a running server (node dist/src/cli.js serve, its database on the same machine) on loopback: HEAD, then the streamed PUT of the layer, which the server scans as it arrives and whose digest it checks over the whole body, then POST /ancestry and GET /tarsier/v1/images/{digest}. Its wall time is the whole process, start-up and report included; its peak RSS is the process's maximum resident set size and its CPU time user + system (GNU time). The floor, measured in each run just before the scan on the same file: the layer's byte range PUT by undici from a file stream (${READ_CHUNK / 1024} KiB reads, as the scanner's) in a node process of its own (its wall time is also the whole process, measured the same way) to a bare node:http server, a process of its own on loopback, that only hashes the body with sha256 and answers 201 (the benchmark checks the digest it answers). The servers' CPU times are read from /proc before and after. The second scan goes through a TCP relay in the benchmark process that counts the bytes each way. Median of ${RUNS} runs; client, server and database share the machine's ${cpus().length} cores, and other work ran beside the benchmark, hence medians.`,
    '',
    '| Measure | Median | Runs |',
    '|---|---|---|',
    `| \`tarsier scan\`, layer not on the server: wall time | ${s(scanSeconds)} | ${list(scanSeconds)} |`,
    `| \`tarsier scan\`, layer not on the server: throughput (layer bytes ÷ wall time) | ${rate(layerBytes, scanSeconds)} | — |`,
    `| \`tarsier scan\`: client peak RSS | ${median(first.map((r) => r.peakMiB)).toFixed(0)} MiB | ${first.map((r) => r.peakMiB.toFixed(0)).join(', ')} MiB |`,
    `| \`tarsier scan\`: client CPU time (user + system) | ${s(first.map((r) => r.cpuSeconds))} | ${list(first.map((r) => r.cpuSeconds))} |`,
    `| the server's PUT /tarsier/v1/layers/{digest} (its own log's response time) | ${s(serverPut)} | ${list(serverPut)} |`,
    `| the server's CPU time during the scan (/proc) | ${s(serverCpu)} | ${list(serverCpu)} |`,
    `| floor: PUT of the same bytes to a bare server that hashes them: wall time | ${s(floors)} | ${list(floors)} |`,
    `| floor: throughput | ${rate(layerBytes, floors)} | — |`,
    `| floor: client CPU time (user + system) | ${s(floorClientCpu)} | ${list(floorClientCpu)} |`,
    `| floor: bare server CPU time | ${s(bareServerCpu)} | ${list(bareServerCpu)} |`,
    `| second scan of the same image (its layer on the server): wall time | ${s(again.map((r) => r.seconds))} | ${list(again.map((r) => r.seconds))} |`,
    `| second scan: bytes sent to the server (counting TCP relay) | ${median(sentAgain).toLocaleString('en')} B | ${sentAgain.map((b) => b.toLocaleString('en')).join(', ')} B |`,
    `| second scan: bytes received from the server | ${median(receivedAgain).toLocaleString('en')} B | ${receivedAgain.map((b) => b.toLocaleString('en')).join(', ')} B |`,
    '',
    `**First scan ÷ floor: ${(median(scanSeconds) / median(floors)).toFixed(2)}×** (median ÷ median). The second scan sends no layer: only HEAD, POST /ancestry and GET requests (the server logged no PUT).`,
  ].join('\n');
  await writeBenchmarkSection('CI scanner upload', body);
}
