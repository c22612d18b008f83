/**
 * Full-size EPSS import: a generated day of FIRST's scores (300,000 CVEs, gzip-compressed as
 * upstream serves it; 1,200,000 for the memory check), imported by `tarsier update --source epss`
 * into an empty database, then the next day's file (every score moved), then that file again
 * unchanged. Wall time and peak RSS of the process, beside the floors: decompressing and parsing
 * the file alone, and one bare COPY of its rows.
 */
import { createReadStream, createWriteStream, existsSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { pathToFileURL } from 'node:url';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { parseEpssScores } from '../src/ecosystems/epss/scores.js';
import { prng } from '../test/helpers/prng.js';
import { type UpdateRun, importRows, median, provenance, recordTargets, updateSource, writeBenchmarkSection } from './lib.js';
import { benchDatabase, CACHE_DIR } from './server.js';

const COMMAND = 'npm run bench -- epss-import';
const ROWS = 300_000;
const LARGE_ROWS = 1_200_000;
const RUNS = 3;

const feedFile = (rows: number, day: number): string => join(CACHE_DIR, `epss-${rows}-day${day}.csv.gz`);

/** A day's file as FIRST writes it: the model/date comment, the header, then one row per CVE in id order. */
async function generate(file: string, rows: number, day: number): Promise<void> {
  const random = prng(day);
  const out = createGzip();
  const done = pipeline(out, createWriteStream(file));
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  await write(`#model_version:v2025.03.14,score_date:2099-01-0${day}T12:55:00Z\ncve,epss,percentile\n`);
  let batch = '';
  for (let i = 0; i < rows; i++) {
    const year = 1999 + Math.floor((i / rows) * 27);
    // Most CVEs score near zero, a few near one, as in the real distribution.
    const score = Math.min(1, random() ** 6);
    batch += `CVE-${year}-${String(10_000 + i).padStart(5, '0')},${score.toFixed(5)},${random().toFixed(5)}\n`;
    if (batch.length > 1 << 16) {
      await write(batch);
      batch = '';
    }
  }
  await write(batch);
  out.end();
  await done;
}

/** The floor of reading: gunzip and parse the file, rows counted and dropped (the code the import runs). */
async function parseAlone(file: string): Promise<number> {
  const started = process.hrtime.bigint();
  const parsed = await parseEpssScores(createReadStream(file).pipe(createGunzip()));
  let rows = 0;
  for await (const _ of parsed.scores) rows++;
  if (rows === 0) throw new Error('no rows parsed');
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** The floor of writing: the file's rows, decompressed, COPYed into a bare table with no index or check. */
async function bareCopy(databaseUrl: string, file: string): Promise<number> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query('CREATE TABLE bare_epss (cve text, score double precision, percentile double precision)');
    const started = process.hrtime.bigint();
    await pipeline(
      createReadStream(file),
      createGunzip(),
      db.query(copyFrom("COPY bare_epss FROM STDIN (FORMAT csv, HEADER false, DELIMITER ',')")),
    );
    return Number(process.hrtime.bigint() - started) / 1e9;
  } finally {
    await db.end();
  }
}

/** The file without its two first lines, gzip'd: what a bare COPY takes. */
async function rowsOnly(file: string): Promise<string> {
  const target = file.replace(/\.csv\.gz$/, '.rows.csv.gz');
  if (existsSync(target)) return target;
  let skipped = 0;
  await pipeline(
    createReadStream(file),
    createGunzip(),
    async function* (source: AsyncIterable<Buffer>) {
      for await (const chunk of source) {
        let start = 0;
        while (skipped < 2 && start < chunk.length) {
          const newline = chunk.indexOf(0x0a, start);
          if (newline < 0) {
            start = chunk.length;
            break;
          }
          start = newline + 1;
          skipped++;
        }
        if (start < chunk.length) yield chunk.subarray(start);
      }
    },
    createGzip(),
    createWriteStream(target),
  );
  return target;
}

async function configFor(file: string): Promise<string> {
  const config = join(CACHE_DIR, `epss-import-${statSync(file).ino}.yaml`);
  await writeFile(config, `clair:\n  updater:\n    sources:\n      epss: { url: "${pathToFileURL(file).toString()}" }\n`);
  return config;
}

export async function run(): Promise<void> {
  await mkdir(CACHE_DIR, { recursive: true });
  for (const [rows, day] of [
    [ROWS, 1],
    [ROWS, 2],
    [LARGE_ROWS, 1],
  ] as const) {
    if (!existsSync(feedFile(rows, day))) await generate(feedFile(rows, day), rows, day);
  }
  const dayOne = await configFor(feedFile(ROWS, 1));
  const dayTwo = await configFor(feedFile(ROWS, 2));
  const large = await configFor(feedFile(LARGE_ROWS, 1));
  const first: UpdateRun[] = [];
  const next: UpdateRun[] = [];
  const again: UpdateRun[] = [];
  const largeFirst: UpdateRun[] = [];
  const parsed: number[] = [];
  const bare: number[] = [];
  const bareFile = await rowsOnly(feedFile(ROWS, 1));
  for (let i = 0; i < RUNS; i++) {
    const database = await benchDatabase(process.env);
    try {
      first.push(updateSource('epss', database.url, dayOne));
      next.push(updateSource('epss', database.url, dayTwo));
      again.push(updateSource('epss', database.url, dayTwo));
    } finally {
      await database.close();
    }
    const big = await benchDatabase(process.env);
    try {
      largeFirst.push(updateSource('epss', big.url, large));
    } finally {
      await big.close();
    }
    parsed.push(await parseAlone(feedFile(ROWS, 1)));
    const empty = await benchDatabase(process.env);
    try {
      bare.push(await bareCopy(empty.url, bareFile));
    } finally {
      await empty.close();
    }
  }
  const size = statSync(feedFile(ROWS, 1)).size;
  const firstMedian = median(first.map((r) => r.seconds));
  const floorMedian = median(parsed.map((p, i) => p + bare[i]!));
  const { row, floor } = importRows(firstMedian, 2);
  const body = [
    ...provenance(COMMAND),
    '',
    `Feed: a generated day of EPSS scores (\`bench/epss-import.ts\`) in FIRST's format (the \`#model_version…,score_date…\` line, the \`cve,epss,percentile\` header, one row per CVE), ${ROWS.toLocaleString('en')} rows, ${(size / 2 ** 20).toFixed(1)} MiB gzip-compressed as upstream serves it, read from a file:// location. Each run: \`tarsier update --source epss\` (node dist/src/cli.js, a process of its own) into an empty database; then the next day's file, in which every score and the date moved (the daily case: every row rewritten); then that file again (unchanged: nothing read or written). The ${LARGE_ROWS.toLocaleString('en')}-row import shows that memory does not grow with the file (rows stream from the gunzip through COPY). Median of ${RUNS} runs; peak RSS is the process's maximum resident set size (GNU time).`,
    '',
    '| Run | Wall time (median) | Runs | Peak RSS (median) |',
    '|---|---|---|---|',
    row(`First import, ${ROWS.toLocaleString('en')} rows`, first),
    row('Next day (every row changed)', next),
    row('Unchanged re-run', again),
    row(`First import, ${LARGE_ROWS.toLocaleString('en')} rows`, largeFirst),
    '',
    'Floors, measured in the same runs: decompressing and parsing the file in this process (rows counted and dropped), and one bare COPY of the same rows (decompressed on the way) into a table without key, index or check.',
    '',
    '| Floor | Wall time (median) | Runs | First import ÷ floor |',
    '|---|---|---|---|',
    floor('Gunzip + parse alone', parsed),
    floor('Bare COPY of the rows', bare),
    floor(
      'Both',
      parsed.map((p, i) => p + bare[i]!),
    ),
  ].join('\n');
  await writeBenchmarkSection('EPSS import', body);
  const peak = median(first.map((r) => r.peakMiB));
  const largePeak = median(largeFirst.map((r) => r.peakMiB));
  await recordTargets([
    {
      measure: `EPSS import, first run (${ROWS.toLocaleString('en')} rows)`,
      before: '—',
      target: '< 10 s',
      now: `${firstMedian.toFixed(2)} s`,
      floor: `${floorMedian.toFixed(2)} s (parse + bare COPY)`,
      ratio: `${(firstMedian / floorMedian).toFixed(1)}×`,
      met: firstMedian < 10,
      benchmark: 'epss-import',
    },
    {
      measure: `EPSS import peak RSS, ${ROWS.toLocaleString('en')} → ${LARGE_ROWS.toLocaleString('en')} rows`,
      before: '—',
      target: 'flat (< 50 MiB growth)',
      now: `${peak.toFixed(0)} MiB → ${largePeak.toFixed(0)} MiB`,
      floor: '—',
      ratio: '—',
      met: largePeak - peak < 50,
      benchmark: 'epss-import',
    },
  ]);
}
