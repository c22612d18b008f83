/**
 * Full-size OSV import: a generated npm `all.zip` over 200 MB (OSV.dev's archives are not reachable
 * from the bench machine), imported by `tarsier update --source osv` into an empty database, then
 * again unchanged; and a tenth of it, to show that memory does not grow with the archive. Wall
 * time and peak RSS of the process, beside the floors: inflating every entry (`unzip -p`) and
 * inflating plus parsing them in this process (the code the import runs, nothing written).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { catalogEcosystem, parseOsvRecord } from '../src/ecosystems/osv/records.js';
import { zipEntries } from '../src/zip.js';
import { prng } from '../test/helpers/prng.js';
import { type UpdateRun, importRows, median, provenance, recordTargets, updateSource, writeBenchmarkSection } from './lib.js';
import { benchDatabase, CACHE_DIR } from './server.js';

const COMMAND = 'npm run bench -- osv-import';
const TEMPLATES = fileURLToPath(new URL('../test/fixtures/feeds/osv/npm/', import.meta.url));
const RECORDS = 100_000;
const SMALL_RECORDS = 10_000;
const RUNS = 3;

const mirrorOf = (records: number): string => join(CACHE_DIR, `osv-${records}`);
const archiveOf = (records: number): string => join(mirrorOf(records), 'npm', 'all.zip');

/**
 * An npm archive of `records` records, each a real GitHub advisory (the npm fixtures in turn) under
 * its own id and package name, with a generated paragraph in its details (so the archive does not
 * compress far better than upstream's, whose records all differ), written by Info-ZIP's zip.
 */
function generate(records: number): void {
  const templates = readdirSync(TEMPLATES)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(TEMPLATES, f), 'utf8')) as Record<string, unknown> & { affected: Array<{ package: object }> });
  const random = prng(records);
  const word = () => Math.floor(random() * 36 ** 6).toString(36);
  const staging = join(CACHE_DIR, `osv-staging-${records}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  for (let i = 0; i < records; i++) {
    const template = templates[i % templates.length]!;
    const id = `GHSA-bench-${String(i).padStart(6, '0')}`;
    const paragraph = Array.from({ length: 300 }, word).join(' ');
    const record = {
      ...template,
      id,
      aliases: [`CVE-2099-${String(10_000 + i)}`],
      details: `${String(template['details'] ?? '')}\n\n${paragraph}`,
      affected: template.affected.map((a, j) => ({ ...a, package: { ...a.package, name: `bench-package-${i}-${j}` } })),
    };
    writeFileSync(join(staging, `${id}.json`), JSON.stringify(record));
  }
  mkdirSync(join(mirrorOf(records), 'npm'), { recursive: true });
  rmSync(archiveOf(records), { force: true });
  execFileSync('zip', ['-q', '-r', '-X', archiveOf(records), '.'], { cwd: staging });
  rmSync(staging, { recursive: true, force: true });
}

function timed(action: () => void): number {
  const started = process.hrtime.bigint();
  action();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** Inflating and parsing every entry in this process, the records counted and dropped. */
async function parseAlone(archive: string): Promise<number> {
  const started = process.hrtime.bigint();
  const npm = (name: string) => (name === 'npm' ? catalogEcosystem(name) : undefined);
  let records = 0;
  for await (const entry of zipEntries(archive, { maxEntries: 5_000_000, maxEntryBytes: 64 * 2 ** 20 }))
    records += parseOsvRecord(entry.data, npm).length;
  if (records === 0) throw new Error('no records parsed');
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function configFor(records: number): Promise<string> {
  const config = join(CACHE_DIR, `osv-import-${records}.yaml`);
  await writeFile(
    config,
    `clair:\n  updater:\n    sources:\n      osv: { url: "${pathToFileURL(`${mirrorOf(records)}/`).href}", ecosystems: [npm] }\n`,
  );
  return config;
}

export async function run(): Promise<void> {
  await mkdir(CACHE_DIR, { recursive: true });
  for (const records of [RECORDS, SMALL_RECORDS]) if (!existsSync(archiveOf(records))) generate(records);
  const full = await configFor(RECORDS);
  const small = await configFor(SMALL_RECORDS);
  const first: UpdateRun[] = [];
  const again: UpdateRun[] = [];
  const smallFirst: UpdateRun[] = [];
  const inflated: number[] = [];
  const parsed: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const database = await benchDatabase(process.env);
    try {
      first.push(updateSource('osv', database.url, full));
      again.push(updateSource('osv', database.url, full));
    } finally {
      await database.close();
    }
    const other = await benchDatabase(process.env);
    try {
      smallFirst.push(updateSource('osv', other.url, small));
    } finally {
      await other.close();
    }
    inflated.push(timed(() => execFileSync('sh', ['-c', `unzip -p '${archiveOf(RECORDS)}' > /dev/null`])));
    parsed.push(await parseAlone(archiveOf(RECORDS)));
  }
  const size = statSync(archiveOf(RECORDS)).size;
  const firstMedian = median(first.map((r) => r.seconds));
  const { row, floor } = importRows(firstMedian);
  const body = [
    ...provenance(COMMAND),
    '',
    `Archive: a generated npm \`all.zip\` (\`bench/osv-import.ts\`): ${RECORDS.toLocaleString('en')} records, each one of the real GitHub advisories under \`test/fixtures/feeds/osv/npm/\` in turn under its own id and package names, with a generated paragraph added to its details so that it compresses as a set of different records does; ${(size / 2 ** 20).toFixed(0)} MiB, written by Info-ZIP's zip, read from a file:// mirror laid out as OSV.dev's bucket. Each run: \`tarsier update --source osv\` (node dist/src/cli.js, a process of its own) into an empty database, then again (unchanged: the archive is not read); and a first import of a ${SMALL_RECORDS.toLocaleString('en')}-record archive into another, to compare peak memory. Median of ${RUNS} runs; peak RSS is the process's maximum resident set size (GNU time).`,
    '',
    '| Run | Wall time (median) | Runs | Peak RSS (median) |',
    '|---|---|---|---|',
    row(`First import, ${RECORDS.toLocaleString('en')} records (${(size / 2 ** 20).toFixed(0)} MiB)`, first),
    row('Unchanged re-run', again),
    row(`First import, ${SMALL_RECORDS.toLocaleString('en')} records`, smallFirst),
    '',
    'Floors, measured in the same runs: inflating every entry with `unzip -p` to /dev/null, and inflating and parsing every record in this process (counted and dropped, nothing written).',
    '',
    '| Floor | Wall time (median) | Runs | First import ÷ floor |',
    '|---|---|---|---|',
    floor('`unzip -p` alone', inflated),
    floor('Inflate + parse alone', parsed),
  ].join('\n');
  await writeBenchmarkSection('OSV import', body);
  const peak = median(first.map((r) => r.peakMiB));
  await recordTargets([
    {
      measure: `OSV import peak RSS, ${(size / 2 ** 20).toFixed(0)} MiB archive`,
      before: '—',
      target: '< 300 MiB',
      now: `${peak.toFixed(0)} MiB (${median(smallFirst.map((r) => r.peakMiB)).toFixed(0)} MiB at a tenth)`,
      floor: '—',
      ratio: '—',
      met: peak < 300,
      benchmark: 'osv-import',
    },
    {
      measure: `OSV import, first run (${RECORDS.toLocaleString('en')} records)`,
      before: '—',
      target: 'measured',
      now: `${firstMedian.toFixed(1)} s`,
      floor: `${median(parsed).toFixed(1)} s (inflate + parse)`,
      ratio: `${(firstMedian / median(parsed)).toFixed(1)}×`,
      met: true,
      benchmark: 'osv-import',
    },
  ]);
}
