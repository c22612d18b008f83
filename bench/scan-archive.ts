/**
 * `tarsier scan` of local images, as a CI job runs it: the start-up of the command beside a bare
 * `node -e 0`, the fixed cost of scanning a small image, and a docker save archive with a 1 GiB
 * layer and an OCI layout with a gzip layer, standalone and against a server, each beside the
 * system's own tools reading the same layer (`tar -xO | tar -t`, `igzip -dc | tar -t`).
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import { debianLayerTar, dockerSaveArchive, largeLayerDockerArchive } from '../test/helpers/image-archives.js';
import { ociLayout } from '../test/helpers/oci-image.js';
import { machineLayer } from './layer-index.js';
import { median, provenance, recordTargets, timed, warm, writeBenchmarkSection, type Timed } from './lib.js';
import { benchDatabase, CACHE_DIR, startBenchServer } from './server.js';

const COMMAND = 'npm run bench -- scan-archive';
const CLI = fileURLToPath(new URL('../dist/src/cli.js', import.meta.url));
/** Runs of each start-up measure, and of each image scan (1 GiB each). */
const STARTUP_RUNS = 11;
const RUNS = 5;
const GIB = 2 ** 30;
const MIB = 2 ** 20;

/** A standalone scan's store: a database of its own, named in a configuration file. */
interface Store {
  name: string;
  config: string;
}

/** Databases of the benchmark's PostgreSQL server: standalone stores, copied from a template that holds the schema. */
class Stores {
  readonly #admin: pg.Client;
  readonly #url: URL;
  readonly #made: Store[] = [];

  private constructor(admin: pg.Client, url: URL) {
    this.#admin = admin;
    this.#url = url;
  }

  static async connect(databaseUrl: string): Promise<Stores> {
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    return new Stores(admin, new URL(databaseUrl));
  }

  /** A new store: empty, or a copy of template (which must have no connection open). */
  async make(template?: string): Promise<Store> {
    const name = `tarsier_scan_${randomBytes(4).toString('hex')}`;
    await this.#admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
    const url = new URL(this.#url);
    url.pathname = `/${name}`;
    const config = join(CACHE_DIR, `${name}.yaml`);
    await writeFile(config, `clair:\n  database:\n    options:\n      source: ${url.toString()}\n`);
    this.#made.push({ name, config });
    return { name, config };
  }

  async drop(store: Store): Promise<void> {
    await this.#admin.query(`DROP DATABASE IF EXISTS ${store.name} WITH (FORCE)`);
    await rm(store.config, { force: true });
  }

  async close(): Promise<void> {
    for (const store of this.#made) await this.drop(store);
    await this.#admin.end();
  }
}

/** What every scan is given: JSON to stdout, nothing on stderr but warnings; no vulnerability data is loaded, so missing data is allowed. */
const SCAN_FLAGS = ['--format', 'json', '--quiet', '--allow-missing-data'];

interface Scanned extends Timed {
  layers: string[];
}

async function scan(where: readonly string[], target: string, env: Record<string, string> = {}): Promise<Scanned> {
  const result = await timed(process.execPath, [CLI, 'scan', ...where, ...SCAN_FLAGS, target], env);
  return { ...result, layers: (JSON.parse(result.stdout) as { layers: string[] }).layers };
}

/** Checks that a scan read the one layer expected. */
function scanned(result: Scanned, layer: string): Scanned {
  if (result.layers.join() !== layer) throw new Error(`the scan reported layers ${result.layers.join()}, not ${layer}`);
  return result;
}

/** runs timed runs of measure after one not counted (page cache, an embedded store's first start). */
async function repeated(runs: number, measure: () => Promise<Timed>): Promise<Timed[]> {
  await measure();
  const results: Timed[] = [];
  for (let i = 0; i < runs; i++) results.push(await measure());
  return results;
}

const wall = (xs: readonly Timed[]): number => median(xs.map((x) => x.seconds));
const cpu = (xs: readonly Timed[]): number => median(xs.map((x) => x.cpuSeconds));
const s = (x: number): string => `${x.toFixed(2)} s`;
const list = (xs: readonly Timed[]): string => xs.map((x) => x.seconds.toFixed(2)).join(', ');
const ratio = (xs: readonly Timed[], floor: readonly Timed[]): string => `${(wall(xs) / wall(floor)).toFixed(2)}×`;
const cpuRatio = (xs: readonly Timed[], floor: readonly Timed[]): string => `${(cpu(xs) / cpu(floor)).toFixed(2)}×`;

export async function run(): Promise<void> {
  const database = await benchDatabase(process.env);
  const stores = await Stores.connect(database.url);
  const server = await startBenchServer(database.url, '  updater:\n    interval: 0');
  const serverFlags = ['--server', `http://127.0.0.1:${server.apiPort}`];
  const files: string[] = [];
  try {
    // The template store: migrated by a first scan, holding the small image's layer.
    const small = join(CACHE_DIR, 'scan-archive-small.tar');
    files.push(small);
    const smallImage = await dockerSaveArchive(small, [{ layers: [debianLayerTar(10)], repoTags: ['bench/small:1'] }], {
      style: 'legacy',
    });
    const smallLayer = smallImage.images[0]!.layerDigests[0]!;
    const template = await stores.make();
    await scan(['--config', template.config], small);

    // Start-up, and the fixed cost of a scan whose layer the store already holds.
    const nodeFloor = await repeated(STARTUP_RUNS, () => timed(process.execPath, ['-e', '0']));
    const help = await repeated(STARTUP_RUNS, () => timed(process.execPath, [CLI, 'scan', '--help']));
    const smallStore = await stores.make(template.name);
    const smallStandalone = await repeated(STARTUP_RUNS, async () =>
      scanned(await scan(['--config', smallStore.config], small), smallLayer),
    );
    const smallServer = await repeated(STARTUP_RUNS, async () => scanned(await scan(serverFlags, small), smallLayer));
    const cacheDir = join(CACHE_DIR, 'scan-archive-embedded');
    const smallEmbedded = await repeated(STARTUP_RUNS, async () =>
      scanned(await scan(['--cache-dir', cacheDir], small, { HOME: CACHE_DIR }), smallLayer),
    );

    // The docker save archive with a 1 GiB layer: each run's layer new to the server (512 more
    // zeros each time) and scanned standalone into a new store.
    const floors: Timed[] = [];
    const standalone: Timed[] = [];
    const served: Timed[] = [];
    let layerBytes = 0;
    for (let i = 0; i < RUNS; i++) {
      const archive = await largeLayerDockerArchive(join(CACHE_DIR, `scan-archive-${i}.tar`), GIB + i * 512);
      files.push(archive.file);
      layerBytes = archive.layer.size;
      await warm(archive.file);
      floors.push(await timed('sh', ['-c', `tar -xOf '${archive.file}' '${archive.layerPath}' | tar -t > /dev/null`]));
      const store = await stores.make(template.name);
      standalone.push(scanned(await scan(['--config', store.config], archive.file), archive.layerDigest));
      await stores.drop(store);
      served.push(scanned(await scan(serverFlags, archive.file), archive.layerDigest));
      await rm(archive.file);
    }

    // An OCI layout whose layer is gzip: this machine's files (layer-index's small layer); each
    // run's blob has one more empty gzip member, so that its digest is new to the server.
    const gzipped = await readFile(await machineLayer('small'));
    const ociFloors: Timed[] = [];
    const ociStandalone: Timed[] = [];
    const ociServed: Timed[] = [];
    for (let i = 0; i < RUNS; i++) {
      const dir = join(CACHE_DIR, `scan-archive-oci-${i}`);
      await rm(dir, { recursive: true, force: true });
      files.push(dir);
      const blob = Buffer.concat([gzipped, ...Array.from({ length: i }, () => gzipSync(Buffer.alloc(0)))]);
      const layout = await ociLayout(dir, { layers: [blob] });
      const layer = layout.images[0]!.layers[0]!;
      const blobFile = join(dir, 'blobs', ...layer.digest.split(':'));
      await warm(blobFile);
      ociFloors.push(await timed('sh', ['-c', `igzip -dc < '${blobFile}' | tar -t > /dev/null`]));
      const store = await stores.make(template.name);
      ociStandalone.push(scanned(await scan(['--config', store.config], dir), layer.digest));
      await stores.drop(store);
      ociServed.push(scanned(await scan(serverFlags, dir), layer.digest));
      await rm(dir, { recursive: true });
    }

    const row = (label: string, xs: readonly Timed[], floor?: readonly Timed[]): string =>
      `| ${label} | ${s(wall(xs))} | ${s(cpu(xs))} | ${floor ? ratio(xs, floor) : '—'} | ${floor ? cpuRatio(xs, floor) : '—'} | ${list(xs)} |`;
    const body = [
      ...provenance(COMMAND),
      '',
      `Every figure is a process of its own, timed whole (start-up and report included) under GNU time: the median wall time, the median CPU time (user + system, of its child processes too), and each run's wall time; in server mode the CPU time is the scanning process's alone, not the server's. Start-up rows: a run not counted, then ${STARTUP_RUNS}; image rows: ${RUNS} runs, each on a layer new to the store and to the server. The built CLI (node dist/src/cli.js) scans with \`${SCAN_FLAGS.join(' ')}\` (the stores hold no vulnerability data: what is measured is reading the image, not matching): standalone against a store of its own, a database named by --config on the benchmark's PostgreSQL (a copy of one the first scan migrated), or the embedded PostgreSQL under --cache-dir, which the scan starts and stops; in server mode against a running server (node dist/src/cli.js serve) on loopback, which is sent the layers it has not scanned.`,
      '',
      `The small image is a docker save archive (Docker before 25) of one layer holding Debian 10's os-release and dpkg status; its layer is in the store and on the server already, so its rows are the fixed cost of a scan. The large one is the same with 1 GiB of zeros added to the layer (${(layerBytes / MIB).toFixed(0)} MiB, uncompressed as docker save writes it), a sparse file read through once before measuring so that it is in the page cache, as an archive docker save has just written is; its floor, in each run just before the scans, is \`tar -xOf ARCHIVE LAYER | tar -t\`: the layer read out of the archive and listed. The OCI layout holds one gzip layer of this machine's files (layer-index's small layer, ${(gzipped.length / MIB).toFixed(0)} MiB); its floor is \`igzip -dc < BLOB | tar -t\`. The scans do more than their floors: they check each layer's digest (sha256 over its bytes), run the package and file listers, and store what they found. The machine's ${cpus().length} cores are shared with the benchmark's PostgreSQL and server, and other work ran beside it, hence medians; when that work loads the machine, wall times stretch with it and the CPU times are the steadier figures.`,
      '',
      '| Measure | Wall (median) | CPU (median) | ÷ floor (wall) | ÷ floor (CPU) | Runs (wall) |',
      '|---|---|---|---|---|---|',
      row('floor: `node -e 0`', nodeFloor),
      row('`tarsier scan --help`', help, nodeFloor),
      row('small image, standalone (store named by --config), layer in the store', smallStandalone, nodeFloor),
      row('small image, standalone, embedded PostgreSQL under --cache-dir', smallEmbedded, nodeFloor),
      row('small image, server mode, layer on the server', smallServer, nodeFloor),
      row('floor: `tar -xOf ARCHIVE LAYER \\| tar -t`, 1 GiB layer', floors),
      row('docker-archive, 1 GiB layer, standalone', standalone, floors),
      row('docker-archive, 1 GiB layer, server mode (PUT of the layer)', served, floors),
      row('floor: `igzip -dc < BLOB \\| tar -t`, gzip layer', ociFloors),
      row('OCI layout, gzip layer, standalone', ociStandalone, ociFloors),
      row('OCI layout, gzip layer, server mode (PUT of the layer)', ociServed, ociFloors),
    ].join('\n');
    await writeBenchmarkSection('CI scanner: start-up and local images', body);
    const target = (measure: string, before: string, xs: readonly Timed[], floor: readonly Timed[]) => ({
      measure,
      before,
      target: '≤ 1.5 × floor',
      now: `${s(wall(xs))} (CPU ${s(cpu(xs))})`,
      floor: `${s(wall(floor))} (CPU ${s(cpu(floor))})`,
      ratio: `${ratio(xs, floor)} (CPU ${cpuRatio(xs, floor)})`,
      met: wall(xs) / wall(floor) <= 1.5,
      benchmark: 'scan-archive',
    });
    await recordTargets([
      {
        measure: '`tarsier scan --help` start-up (floor: `node -e 0`)',
        before: '1.12 s (CPU 0.29 s) at load 15',
        target: '< 0.3 s',
        now: `${s(wall(help))} (CPU ${s(cpu(help))})`,
        floor: `${s(wall(nodeFloor))} (CPU ${s(cpu(nodeFloor))})`,
        ratio: `${ratio(help, nodeFloor)} (CPU ${cpuRatio(help, nodeFloor)})`,
        met: wall(help) < 0.3,
        benchmark: 'scan-archive',
      },
      target('docker-archive 1 GiB layer, standalone scan ÷ floor (tar -xO, tar -t)', '6.27× (CPU 3.24×) at load 15', standalone, floors),
      target('docker-archive 1 GiB layer, server-mode scan ÷ floor (tar -xO, tar -t)', '12.25× (CPU 2.58×) at load 15', served, floors),
    ]);
  } finally {
    await server.stop();
    await stores.close();
    await database.close();
    for (const file of files) await rm(file, { recursive: true, force: true });
  }
}
