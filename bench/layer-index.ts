/**
 * Layer indexing throughput and memory: POST /v1/layers of large gzip layers whose package
 * database is the last entry (so the whole archive must be read), against `gzip -dc | tar -t`
 * on the same file, and the server's peak RSS for a small and a large layer.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { median, provenance, writeBenchmarkSection } from './lib.js';
import { benchDatabase, CACHE_DIR, memoryOf, resetPeakMemory, startBenchServer } from './server.js';

const RUNS = 5;
const COMMAND = 'npm run bench -- layer-index';

interface LayerFile {
  readonly label: string;
  readonly path: string;
  readonly directories: readonly string[];
}

const LAYERS: readonly LayerFile[] = [
  { label: 'small', path: join(CACHE_DIR, 'layer-small.tar.gz'), directories: ['usr/lib/gcc'] },
  { label: 'large', path: join(CACHE_DIR, 'layer-large.tar.gz'), directories: ['usr/lib/x86_64-linux-gnu', 'usr/bin'] },
];

/**
 * A layer of this machine's real files (binaries and libraries compress like real images do),
 * then etc/os-release and the dpkg database appended as the last entries.
 */
async function buildLayer(layer: LayerFile): Promise<void> {
  if (existsSync(layer.path)) return;
  await mkdir(CACHE_DIR, { recursive: true });
  const extra = await mkdtemp(join(CACHE_DIR, 'extra-'));
  await mkdir(join(extra, 'etc'), { recursive: true });
  await mkdir(join(extra, 'var/lib/dpkg'), { recursive: true });
  execFileSync('cp', ['/usr/lib/os-release', join(extra, 'etc/os-release')]);
  execFileSync('cp', ['/var/lib/dpkg/status', join(extra, 'var/lib/dpkg/status')]);
  const tar = `${layer.path}.tar`;
  // --ignore-failed-read: a few files under /usr may be unreadable; the layer need not be exact.
  spawnSync('tar', ['-cf', tar, '--ignore-failed-read', '-C', '/', ...layer.directories], { stdio: 'ignore' });
  execFileSync('tar', ['-rf', tar, '-C', extra, 'etc/os-release', 'var/lib/dpkg/status']);
  execFileSync('sh', ['-c', `gzip -6 -c '${tar}' > '${layer.path}' && rm '${tar}'`]);
  await rm(extra, { recursive: true, force: true });
}

function seconds(run: () => void): number {
  const started = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** The baseline: decompress and list the archive with the system's own tools. */
function baseline(path: string): number {
  return seconds(() => execFileSync('sh', ['-c', `gzip -dc '${path}' | tar -t > /dev/null`]));
}

function expandedBytes(path: string): number {
  return Number(execFileSync('sh', ['-c', `gzip -dc '${path}' | wc -c`], { encoding: 'utf8' }).trim());
}

export async function run(): Promise<void> {
  for (const layer of LAYERS) await buildLayer(layer);
  const database = await benchDatabase(process.env);
  const server = await startBenchServer(database.url, `  api:\n    localroots: [${CACHE_DIR}]\n  updater:\n    interval: 0`);
  const rows: string[] = [];
  try {
    const idle = await memoryOf(server.pid);
    let counter = 0;
    for (const layer of LAYERS) {
      const tarsier: number[] = [];
      const reference: number[] = [];
      const peaks: number[] = [];
      let features = 0;
      for (let i = 0; i < RUNS; i++) {
        reference.push(baseline(layer.path));
        await resetPeakMemory(server.pid);
        const name = `bench-${layer.label}-${counter++}`;
        const started = process.hrtime.bigint();
        const res = await fetch(`http://127.0.0.1:${server.apiPort}/v1/layers`, {
          method: 'POST',
          body: JSON.stringify({ Layer: { Name: name, Path: layer.path, Format: 'Docker' } }),
        });
        tarsier.push(Number(process.hrtime.bigint() - started) / 1e9);
        if (res.status !== 201) throw new Error(`POST answered ${res.status}: ${await res.text()}`);
        peaks.push((await memoryOf(server.pid)).peakMiB);
        const report = (await (await fetch(`http://127.0.0.1:${server.apiPort}/v1/layers/${name}?features`)).json()) as {
          Layer: { Features: unknown[] };
        };
        features = report.Layer.Features.length;
      }
      const size = statSync(layer.path).size;
      const expanded = expandedBytes(layer.path);
      rows.push(
        `| ${layer.label} (${layer.directories.join(', ')}) | ${(size / 2 ** 20).toFixed(0)} MiB | ${(expanded / 2 ** 20).toFixed(0)} MiB | ${median(reference).toFixed(2)} s | ${median(tarsier).toFixed(2)} s | ${(expanded / 2 ** 20 / median(tarsier)).toFixed(0)} MiB/s | ${median(peaks).toFixed(0)} MiB | ${features} |`,
      );
    }
    const body = [
      ...provenance(COMMAND),
      '',
      `Layers are tar archives of this machine's own files (libraries and binaries), gzip -6, with etc/os-release and the dpkg database appended as the last entries, so the whole archive is read. Each figure is the median of ${RUNS} runs. "gzip -dc | tar -t" is the baseline on the same file; "POST /v1/layers" is the wall time of the request to a running server (node dist/src/cli.js, local file under api.localroots), including the download, the walk, the scan and the database writes. Peak RSS is the server process's VmHWM, reset before each request; it was ${idle.rssMiB.toFixed(0)} MiB idle.`,
      '',
      '| Layer | gzip size | Expanded | gzip -dc \\| tar -t | POST /v1/layers | Throughput (expanded) | Server peak RSS | Features found |',
      '|---|---|---|---|---|---|---|---|',
      ...rows,
    ].join('\n');
    await writeBenchmarkSection('Layer indexing', body);
  } finally {
    await server.stop();
    await database.close();
  }
}
