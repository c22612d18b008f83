import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/db.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { databaseUrl, runTarsier, startTarsier } from '../helpers/process.js';

const FEEDS = fileURLToPath(new URL('../fixtures/feeds/', import.meta.url));

let dir: string;
let feeds: FeedServer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tarsier-cli-'));
  await chmod(dir, 0o755);
  feeds = await startFeedServer();
  feeds.put('/tracker/json', readFileSync(`${FEEDS}debian/security-tracker-excerpt.json`));
  await writeFile(join(dir, 'config.yaml'), `clair:\n  updater:\n    sources:\n      debian: { url: "${feeds.url('/tracker/json')}" }\n`);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Every live vulnerability as "namespace name severity fixes", for comparing two databases. */
async function contents(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query(`
    SELECT n.name || ' ' || v.name || ' ' || v.severity || ' ' || v.updater || ' ' ||
           coalesce((SELECT string_agg(f.name || '=' || coalesce(fi.fixed_version, 'None'), ',' ORDER BY f.name)
                     FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id WHERE fi.vulnerability_id = v.id), '') AS line
    FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id WHERE v.deleted_at IS NULL ORDER BY 1`);
  await client.end();
  return rows.map((r) => r.line);
}

/** The PIDs of the children of a process running tarsier (not tsx's esbuild helper). */
function tarsierChildrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid && cmdline.includes('cli.ts');
      } catch {
        return false;
      }
    })
    .map(Number);
}

const running = (pid: number): boolean => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');

describe('a killed tarsier update', () => {
  it('takes its worker with it, and leaves no lease in the way: the next run, right away, does the update', async () => {
    const url = databaseUrl(await freshDatabase());
    const env = { DATABASE_URL: url, TARSIER_CONFIG: join(dir, 'config.yaml') };
    const held = feeds.hold('/tracker/json');
    const killed = await startTarsier(env, ['update', '--source', 'debian'], { waitFor: null });
    await held.arrived; // the run holds the source's lease and is downloading
    // update runs in a process of its own (a bounded heap): killing the one started kills both.
    const [worker] = tarsierChildrenOf(killed.child.pid!);
    expect(worker).toBeDefined();
    killed.child.kill('SIGKILL');
    expect(await killed.exited).toBe('SIGKILL');
    while (running(worker!)) await new Promise((r) => setTimeout(r, 20));
    held.release();
    const again = await runTarsier(env, ['update', '--source', 'debian']);
    expect(again.stdout + again.stderr).toMatch(/^debian\s+updated\s+21\s+21/m);
    expect(again.code).toBe(0);
  });
});

describe('tarsier update, export and import', () => {
  it('update runs a source once and prints a summary; export and import carry the data to another installation', async () => {
    const online = databaseUrl(await freshDatabase());
    const env = { DATABASE_URL: online, TARSIER_CONFIG: join(dir, 'config.yaml') };
    const update = await runTarsier(env, ['update', '--source', 'debian']);
    expect(update.code).toBe(0);
    expect(update.stdout.split('\n')[0]).toMatch(/^source\s+status\s+records\s+changed\s+duration/);
    expect(update.stdout).toMatch(/^debian\s+updated\s+21\s+21\s+\d+\.\ds$/m);

    const bundle = join(dir, 'bundle.jsonl.gz');
    const exported = await runTarsier(env, ['export', bundle]);
    expect(exported.code).toBe(0);

    const airGapped = databaseUrl(await freshDatabase());
    const imported = await runTarsier({ DATABASE_URL: airGapped }, ['import', bundle]);
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/^debian\s+updated\s+21\s+21/m);
    // Only the source that ran online is recorded as run: the others load quietly on their first run.
    const air = new pg.Client({ connectionString: airGapped });
    await air.connect();
    const ran = (await air.query('SELECT name FROM updater_state WHERE last_success_at IS NOT NULL ORDER BY name')).rows.map((r) => r.name);
    await air.end();
    expect(ran).toEqual(['debian']);
    const copied = await contents(airGapped);
    expect(copied).toHaveLength(21);
    expect(copied).toEqual(await contents(online));

    // Importing the same bundle again changes nothing.
    const again = await runTarsier({ DATABASE_URL: airGapped }, ['import', bundle]);
    expect(again.stdout).toMatch(/^debian\s+unchanged\s+21\s+0/m);
  });

  it("import --source reads a source's native files laid out as upstream", async () => {
    const url = databaseUrl(await freshDatabase());
    const secdb = join(dir, 'secdb');
    mkdirSync(join(secdb, 'v3.15'), { recursive: true });
    copyFileSync(`${FEEDS}alpine/secdb-v3.15-main-excerpt.json`, join(secdb, 'v3.15', 'main.json'));
    const result = await runTarsier({ DATABASE_URL: url }, ['import', secdb, '--source', 'alpine']);
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^alpine\s+updated\s+4\s+4/m);
    expect(await contents(url)).toContain('alpine:v3.15 CVE-2016-0634 Unknown alpine bash=4.4.12-r1');
  });

  it('update --source osv loads the records of a local mirror directory (OSV records, one file each)', async () => {
    const url = databaseUrl(await freshDatabase());
    const config = join(dir, 'osv.yaml');
    await writeFile(config, `clair:\n  updater:\n    sources:\n      osv: { url: "${pathToFileURL(`${FEEDS}osv/`).href}" }\n`);
    const result = await runTarsier({ DATABASE_URL: url, TARSIER_CONFIG: config }, ['update', '--source', 'osv']);
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.code).toBe(0);
    // 48 fixture records, one withdrawn.
    expect(result.stdout).toMatch(/^osv\s+updated\s+47\s+47/m);
    const loaded = await contents(url);
    expect(loaded).toContain('crates.io RUSTSEC-2022-0013 High osv regex=1.5.5');
    expect(loaded.filter((line) => line.startsWith('npm '))).toHaveLength(5);
  });

  it('update exits 1 and says why when a source fails, and import refuses a file that is not a bundle', async () => {
    const url = databaseUrl(await freshDatabase());
    feeds.fail('/broken');
    await writeFile(join(dir, 'broken.yaml'), `clair:\n  updater:\n    sources:\n      debian: { url: "${feeds.url('/broken')}" }\n`);
    const update = await runTarsier({ DATABASE_URL: url, TARSIER_CONFIG: join(dir, 'broken.yaml') }, ['update', '--source', 'debian']);
    expect(update.code).toBe(1);
    expect(update.stdout).toMatch(/^debian\s+failed\s+0\s+0\s+\d+\.\ds\s+GET .*\/broken answered 500$/m);
    const junk = join(dir, 'junk.gz');
    await writeFile(junk, (await import('node:zlib')).gzipSync('{"hello":1}\n'));
    const imported = await runTarsier({ DATABASE_URL: url }, ['import', junk]);
    expect(imported.code).not.toBe(0);
    expect(imported.stderr).toMatch(/is not a Tarsier bundle/);
  });
});
