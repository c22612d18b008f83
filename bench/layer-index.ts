/**
 * Layer indexing throughput and memory: POST /v1/layers of a small and a large layer whose
 * package database is the last entry (so the whole archive must be read), gzip and zstd, each
 * beside its floors measured in the same run on the same file (`gzip -dc | tar -t`,
 * `igzip -dc | tar -t` when installed, `zstd -dc | tar -t`), and the server's peak RSS.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { expandedBytes, installed, listingFloor, median, provenance, recordTargets, writeBenchmarkSection, type TargetRow } from './lib.js';
import { benchDatabase, CACHE_DIR, memoryOf, resetPeakMemory, startBenchServer } from './server.js';

const RUNS = 5;
const COMMAND = 'npm run bench -- layer-index';

interface LayerFile {
  readonly label: string;
  /** The gzip file; the zstd copy is beside it (.zst instead of .gz). */
  readonly path: string;
  readonly directories: readonly string[];
}

const LAYERS: readonly LayerFile[] = [
  { label: 'small', path: join(CACHE_DIR, 'layer-small.tar.gz'), directories: ['usr/lib/gcc', 'usr/lib/python3.11', 'usr/lib/python3'] },
  {
    label: 'large',
    path: join(CACHE_DIR, 'layer-large.tar.gz'),
    directories: ['usr/lib/x86_64-linux-gnu', 'usr/bin', 'usr/share'],
  },
];

const zstdCopy = (layer: LayerFile): string => layer.path.replace(/\.gz$/, '.zst');

/**
 * A layer of this machine's real files (binaries and libraries compress like real images do),
 * then etc/os-release and the dpkg database appended as the last entries; gzip -6, and a zstd -3
 * copy of the same tar.
 */
async function buildLayer(layer: LayerFile): Promise<void> {
  if (existsSync(layer.path) && existsSync(zstdCopy(layer))) return;
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
  execFileSync('sh', ['-c', `gzip -6 -c '${tar}' > '${layer.path}' && zstd -q -3 -T0 -f '${tar}' -o '${zstdCopy(layer)}' && rm '${tar}'`]);
  await rm(extra, { recursive: true, force: true });
}

/** The gzip file of the small or the large layer of this machine's files, built when not built yet (the OCI layout of scan-archive holds the small one). */
export async function machineLayer(label: 'small' | 'large'): Promise<string> {
  const layer = LAYERS.find((l) => l.label === label)!;
  await buildLayer(layer);
  return layer.path;
}

interface Measured {
  readonly seconds: number[];
  readonly peaks: number[];
  features: number;
}

const s = (xs: readonly number[]): string => `${median(xs).toFixed(2)} s`;
const ratio = (tarsier: readonly number[], base: readonly number[]): string => (median(tarsier) / median(base)).toFixed(2);

/** The round's goals (issue 13): gzip in at most 0.4 × `gzip -dc | tar -t`, zstd in 1.2 × `zstd -dc | tar -t`, memory flat in layer size. */
function targetRows(
  layer: LayerFile,
  expanded: number,
  floors: { gzip: number[]; zstd: number[] },
  gz: Measured,
  zst: Measured,
): TargetRow[] {
  const what = `${layer.label} layer (${(expanded / 2 ** 30).toFixed(1)} GiB expanded)`;
  const row = (measure: string, target: number, m: Measured, base: number[]): TargetRow => ({
    measure,
    before: '',
    target: `≤ ${target} × floor`,
    now: s(m.seconds),
    floor: s(base),
    ratio: `${ratio(m.seconds, base)}×`,
    met: median(m.seconds) / median(base) <= target,
    benchmark: 'layer-index',
  });
  const rows = [
    { ...row(`gzip ${what} indexed, ÷ floor (gzip -dc, tar -t)`, 0.4, gz, floors.gzip), before: '0.57×' },
    { ...row(`zstd ${what} indexed, ÷ floor (zstd -dc, tar -t)`, 1.2, zst, floors.zstd), before: '2.08×' },
  ];
  if (layer.label !== 'large') return rows.map((r) => ({ ...r, before: '—' }));
  return rows;
}

export async function run(): Promise<void> {
  for (const layer of LAYERS) await buildLayer(layer);
  const igzip = installed('igzip');
  const database = await benchDatabase(process.env);
  const server = await startBenchServer(database.url, `  api:\n    localroots: [${CACHE_DIR}]\n  updater:\n    interval: 0`);
  const rows: string[] = [];
  const targets: TargetRow[] = [];
  const peaks: number[] = [];
  try {
    const idle = await memoryOf(server.pid);
    let counter = 0;
    const post = async (path: string, into: Measured): Promise<void> => {
      await resetPeakMemory(server.pid);
      const name = `bench-${counter++}`;
      const started = process.hrtime.bigint();
      const res = await fetch(`http://127.0.0.1:${server.apiPort}/v1/layers`, {
        method: 'POST',
        body: JSON.stringify({ Layer: { Name: name, Path: path, Format: 'Docker' } }),
      });
      into.seconds.push(Number(process.hrtime.bigint() - started) / 1e9);
      if (res.status !== 201) throw new Error(`POST answered ${res.status}: ${await res.text()}`);
      into.peaks.push((await memoryOf(server.pid)).peakMiB);
      const report = (await (await fetch(`http://127.0.0.1:${server.apiPort}/v1/layers/${name}?features`)).json()) as {
        Layer: { Features: unknown[] };
      };
      into.features = report.Layer.Features.length;
    };
    for (const layer of LAYERS) {
      const floors = { gzip: [] as number[], igzip: [] as number[], zstd: [] as number[] };
      const gz: Measured = { seconds: [], peaks: [], features: 0 };
      const zst: Measured = { seconds: [], peaks: [], features: 0 };
      for (let i = 0; i < RUNS; i++) {
        floors.gzip.push(listingFloor('gzip', layer.path));
        if (igzip) floors.igzip.push(listingFloor('igzip', layer.path));
        floors.zstd.push(listingFloor('zstd', zstdCopy(layer)));
        await post(layer.path, gz);
        await post(zstdCopy(layer), zst);
      }
      const expanded = expandedBytes(layer.path);
      targets.push(...targetRows(layer, expanded, floors, gz, zst));
      peaks.push(Math.max(median(gz.peaks), median(zst.peaks)));
      const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
      const throughput = (m: Measured): string => `${(expanded / 2 ** 20 / median(m.seconds)).toFixed(0)} MiB/s`;
      const name = `${layer.label} (${layer.directories.join(', ')})`;
      rows.push(
        `| ${name} | gzip -6, ${mib(statSync(layer.path).size)} | ${mib(expanded)} | gzip ${s(floors.gzip)}${igzip ? `, igzip ${s(floors.igzip)}` : ''} | ${s(gz.seconds)} | ${ratio(gz.seconds, floors.gzip)}${igzip ? ` (igzip ${ratio(gz.seconds, floors.igzip)})` : ''} | ${throughput(gz)} | ${median(gz.peaks).toFixed(0)} MiB | ${gz.features} |`,
        `| ${name} | zstd -3, ${mib(statSync(zstdCopy(layer)).size)} | ${mib(expanded)} | zstd ${s(floors.zstd)} | ${s(zst.seconds)} | ${ratio(zst.seconds, floors.zstd)} | ${throughput(zst)} | ${median(zst.peaks).toFixed(0)} MiB | ${zst.features} |`,
      );
    }
    const body = [
      ...provenance(COMMAND),
      '',
      `Layers are tar archives of this machine's own files (libraries and binaries) with etc/os-release and the dpkg database appended as the last entries, so the whole archive is read; each is gzip -6 and a zstd -3 copy of the same tar. Each figure is the median of ${RUNS} runs, taken in turn in the same run: the floors are the system's own programs decompressing and listing the same file (\`gzip -dc | tar -t\`, \`igzip -dc | tar -t\`${igzip ? '' : ' (not installed here)'}, \`zstd -dc | tar -t\`); "POST /v1/layers" is the wall time of the request to a running server (node dist/src/cli.js, local file under api.localroots), including the walk, the scan and the database writes, and "÷ floor" is it divided by the floor. The server reads gzip with igzip when it is installed (${igzip ? 'it is here' : "it is not here: Node's zlib"}) and zstd with the zstd program, each given the file's descriptor. Peak RSS is the server process's VmHWM, reset before each request; it was ${idle.rssMiB.toFixed(0)} MiB idle. The machine is shared (2 cores; other work ran beside the benchmark), hence medians.`,
      '',
      '| Layer | Compressed | Expanded | Floor (decompress \\| tar -t) | POST /v1/layers | ÷ floor | Throughput (expanded) | Server peak RSS | Features found |',
      '|---|---|---|---|---|---|---|---|---|',
      ...rows,
    ].join('\n');
    await writeBenchmarkSection('Layer indexing', body);
    const growth = peaks[peaks.length - 1]! - peaks[0]!;
    targets.push({
      measure: 'server peak RSS, small → large layer',
      before: '—',
      target: 'flat (< 50 MiB growth)',
      now: peaks.map((p) => `${p.toFixed(0)} MiB`).join(' → '),
      floor: '—',
      ratio: '—',
      met: growth < 50,
      benchmark: 'layer-index',
    });
    await recordTargets(targets);
  } finally {
    await server.stop();
    await database.close();
  }
}
