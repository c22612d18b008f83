import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/db.js';
import { startFeedServer } from '../helpers/feed-server.js';
import { databaseUrl, startTarsier } from '../helpers/process.js';
import { whenDone } from '../helpers/when-done.js';

const excerpt = readFileSync(fileURLToPath(new URL('../fixtures/feeds/debian/security-tracker-excerpt.json', import.meta.url)));

describe('two server processes on one database', () => {
  it('run each scheduled update once', async () => {
    const url = databaseUrl(await freshDatabase());
    const feeds = await startFeedServer();
    feeds.put('/tracker/json', excerpt);
    const dir = await mkdtemp(join(tmpdir(), 'tarsier-replicas-'));
    await chmod(dir, 0o755);
    whenDone(() => rm(dir, { recursive: true, force: true }));
    const config = join(dir, 'config.yaml');
    await writeFile(
      config,
      `clair:\n  updater:\n    interval: 1h\n    enabledupdaters: [debian]\n    sources:\n      debian: { url: "${feeds.url('/tracker/json')}" }\n`,
    );
    const env = { DATABASE_URL: url, TARSIER_CONFIG: config };
    const [a, b] = await Promise.all([startTarsier(env), startTarsier(env)]);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    whenDone(() => client.end());
    const deadline = Date.now() + 20_000;
    let state;
    do {
      await new Promise((r) => setTimeout(r, 200));
      state = (await client.query("SELECT last_success_at, record_count FROM updater_state WHERE name = 'debian'")).rows[0];
    } while (!state?.last_success_at && Date.now() < deadline);
    expect(state?.record_count).toBe(21);
    // Both replicas keep ticking for a while; neither may run the source again before it is due.
    await new Promise((r) => setTimeout(r, 3000));
    const runs = [...a.logs, ...b.logs].filter((l) => l.msg === 'updater run done' && l.source === 'debian');
    expect(runs).toHaveLength(1);
    expect(feeds.requests.filter((r) => r.path === '/tracker/json')).toHaveLength(1);
    const versions = (await client.query('SELECT count(*)::int AS n FROM vulnerability')).rows[0].n;
    expect(versions).toBe(21);
    for (const p of [a, b]) p.child.kill('SIGTERM');
    expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
  }, 60_000);
});
