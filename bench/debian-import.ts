/**
 * Full-size updater import: a generated Debian Security Tracker document of realistic size
 * (~60 MB, ≥ 300,000 package/release entries), imported by `tarsier update --source debian`
 * into an empty database, then run again unchanged. Wall time and peak RSS of the process.
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { parseDebianTracker } from '../src/ecosystems/debian/tracker.js';
import { prng } from '../test/helpers/prng.js';
import { type UpdateRun, importRows, median, provenance, recordTargets, updateSource, writeBenchmarkSection } from './lib.js';
import { benchDatabase, CACHE_DIR } from './server.js';

const COMMAND = 'npm run bench -- debian-import';
const CLI = fileURLToPath(new URL('../dist/src/cli.js', import.meta.url));
const FEED = join(CACHE_DIR, 'debian-tracker.json');
const PACKAGES = 28_000;
const RELEASES = ['buster', 'bullseye', 'bookworm', 'trixie', 'sid'] as const;
const RUNS = 3;

/**
 * Source packages with a few CVEs each; each CVE has an entry per release: resolved with a
 * version (most), open, not affected ("0"), or undetermined, as in the real tracker.
 */
async function generate(): Promise<void> {
  const random = prng(7);
  const out = createWriteStream(FEED);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  let cve = 0;
  await write('{');
  for (let p = 0; p < PACKAGES; p++) {
    await write(`${p ? ',' : ''}"pkg${p}-${Math.floor(random() * 1e6).toString(36)}":{`);
    const count = 1 + Math.floor(random() * 5);
    for (let c = 0; c < count; c++) {
      const id = `CVE-${2000 + Math.floor(random() * 26)}-${String(cve++).padStart(5, '0')}`;
      const releases: string[] = [];
      for (const release of RELEASES) {
        const roll = random();
        const version = `${1 + Math.floor(random() * 9)}.${Math.floor(random() * 30)}-${1 + Math.floor(random() * 5)}`;
        const urgency = ['low', 'medium', 'high', 'not yet assigned', 'unimportant'][Math.floor(random() * 5)];
        const state =
          roll < 0.65
            ? `"status":"resolved","fixed_version":"${version}+deb${Math.floor(random() * 13)}u${Math.floor(random() * 9)}"`
            : roll < 0.85
              ? '"status":"open"'
              : roll < 0.95
                ? '"status":"resolved","fixed_version":"0"'
                : '"status":"undetermined"';
        releases.push(`"${release}":{${state},"repositories":{"${release}":"${version}"},"urgency":"${urgency}"}`);
      }
      await write(
        `${c ? ',' : ''}"${id}":{"description":"Synthetic ${id}: a flaw in the parsing of untrusted input may allow a remote attacker to cause a denial of service.","scope":"remote","releases":{${releases.join(',')}}}`,
      );
    }
    await write('}');
  }
  await write('}');
  out.end();
  await once(out, 'finish');
}

/** The floor without writes: parsing the feed alone, in this process (the same code the import runs). */
async function parseAlone(): Promise<{ seconds: number; namespaces: number }> {
  const started = process.hrtime.bigint();
  const data = await parseDebianTracker(createReadStream(FEED));
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9, namespaces: data.namespaces.length };
}

/** Rows as COPY text (the generated feed has no tab, newline or backslash to escape). */
async function copy(db: pg.Client, sql: string, rows: ReadonlyArray<ReadonlyArray<string | number | null>>): Promise<void> {
  const text = rows.map((r) => r.map((v) => (v === null ? '\\N' : String(v))).join('\t')).join('\n');
  await pipeline(Readable.from([`${text}\n`]), db.query(copyFrom(sql)));
}

/**
 * The floor of the writes: the rows a first import stores (features, vulnerabilities, fixed-in
 * entries), copied with ids numbered here and nothing decided (no live data read, no comparison,
 * no enrichment, no lock), one COPY per table and one transaction per namespace over one
 * connection; the parse is not included.
 */
async function bareCopy(databaseUrl: string): Promise<number> {
  const data = await parseDebianTracker(createReadStream(FEED));
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const started = process.hrtime.bigint();
  let nextFeature = 1;
  let nextVulnerability = 1;
  try {
    for (const [n, namespace] of data.namespaces.entries()) {
      const vulnerabilities = data.vulnerabilities.filter((v) => v.namespace === namespace);
      await db.query('BEGIN');
      await db.query("INSERT INTO namespace (id, name, version_format) VALUES ($1, $2, 'dpkg')", [n + 1, namespace]);
      const featureId = new Map<string, number>();
      for (const v of vulnerabilities) for (const f of v.fixedIn) if (!featureId.has(f.feature)) featureId.set(f.feature, nextFeature++);
      await copy(
        db,
        'COPY feature (id, namespace_id, name) FROM STDIN',
        [...featureId].map(([name, id]) => [id, n + 1, name]),
      );
      const ids = vulnerabilities.map(() => nextVulnerability++);
      await copy(
        db,
        'COPY vulnerability (id, namespace_id, name, description, link, severity, updater, source_severity) FROM STDIN',
        vulnerabilities.map((v, i) => [ids[i]!, n + 1, v.name, v.description, v.link, v.severity, 'debian', v.severity]),
      );
      await copy(
        db,
        'COPY vulnerability_fixedin (vulnerability_id, feature_id, fixed_version) FROM STDIN',
        vulnerabilities.flatMap((v, i) => v.fixedIn.map((f) => [ids[i]!, featureId.get(f.feature)!, f.version])),
      );
      await db.query('COMMIT');
    }
  } finally {
    await db.end();
  }
  return Number(process.hrtime.bigint() - started) / 1e9;
}

export async function run(): Promise<void> {
  await mkdir(CACHE_DIR, { recursive: true });
  if (!existsSync(FEED)) await generate();
  // Every package/release entry has one status.
  const entries = Number(execFileSync('sh', ['-c', `grep -o '"status"' '${FEED}' | wc -l`], { encoding: 'utf8' }).trim());
  const size = statSync(FEED).size;
  const config = join(CACHE_DIR, 'debian-import.yaml');
  await writeFile(config, `clair:\n  updater:\n    sources:\n      debian: { url: "${pathToFileURL(FEED).toString()}" }\n`);
  const first: UpdateRun[] = [];
  const again: UpdateRun[] = [];
  const parsed: number[] = [];
  const bare: number[] = [];
  let namespaces = 0;
  let summary = '';
  for (let i = 0; i < RUNS; i++) {
    const database = await benchDatabase(process.env);
    try {
      const a = updateSource('debian', database.url, config);
      const b = updateSource('debian', database.url, config);
      first.push(a);
      again.push(b);
      summary = a.stdout.trim();
    } finally {
      await database.close();
    }
    const parse = await parseAlone();
    parsed.push(parse.seconds);
    namespaces = parse.namespaces;
    const empty = await benchDatabase(process.env);
    try {
      execFileSync(process.execPath, [CLI, 'migrate', '--config', config], {
        env: { PATH: process.env.PATH, DATABASE_URL: empty.url, TARSIER_LOG_LEVEL: 'warn' },
        stdio: 'ignore',
      });
      bare.push(await bareCopy(empty.url));
    } finally {
      await empty.close();
    }
  }
  const records = /^debian\s+\S+\s+(\d+)/m.exec(summary)?.[1] ?? '?';
  const firstMedian = median(first.map((r) => r.seconds));
  const { row, floor } = importRows(firstMedian);
  const body = [
    ...provenance(COMMAND),
    '',
    `Feed: a generated Debian Security Tracker document (\`bench/debian-import.ts\`), ${(size / 2 ** 20).toFixed(0)} MiB of JSON, ${PACKAGES.toLocaleString('en')} source packages, ${entries.toLocaleString('en')} package/release entries over ${RELEASES.length} releases (resolved, open, not affected and undetermined, as upstream), read from a file:// location. Each run: \`tarsier update --source debian\` (node dist/src/cli.js, a process of its own) into an empty database, then the same command again with the feed unchanged. ${records} vulnerabilities stored. Median of ${RUNS} runs; peak RSS is the process's maximum resident set size (GNU time).`,
    '',
    '| Run | Wall time (median) | Runs | Peak RSS (median) |',
    '|---|---|---|---|',
    row('First import', first),
    row('Unchanged re-run', again),
    '',
    `Floors, measured in the same runs: parsing the feed alone (no database), and copying the rows a first import stores (${namespaces} namespaces: features, vulnerabilities, fixed-in entries) with bare COPYs and ids numbered by the benchmark, one transaction per namespace over one connection, without the parse, reads, comparisons, enrichment or sequences. The import runs two namespaces at a time on two connections, so it may beat the sum of the two.`,
    '',
    '| Floor | Wall time (median) | Runs | First import ÷ floor |',
    '|---|---|---|---|',
    floor('Parse alone', parsed),
    floor('Bare COPY of the same rows', bare),
    floor(
      'Parse + bare COPY',
      parsed.map((p, i) => p + bare[i]!),
    ),
  ].join('\n');
  await writeBenchmarkSection('Debian feed import', body);
  const againMedian = median(again.map((r) => r.seconds));
  const floorMedian = median(parsed.map((p, i) => p + bare[i]!));
  await recordTargets([
    {
      measure: `Debian feed import, first run (${entries.toLocaleString('en')} package/release entries)`,
      before: '31.6 s',
      target: '< 20 s',
      now: `${firstMedian.toFixed(1)} s`,
      floor: `${floorMedian.toFixed(1)} s (parse + bare COPY)`,
      ratio: `${(firstMedian / floorMedian).toFixed(1)}×`,
      met: firstMedian < 20,
      benchmark: 'debian-import',
    },
    {
      measure: 'Debian feed import, unchanged re-run',
      before: '1.6 s',
      target: '< 1 s',
      now: `${againMedian.toFixed(1)} s`,
      floor: '—',
      ratio: '—',
      met: againMedian < 1,
      benchmark: 'debian-import',
    },
  ]);
}
