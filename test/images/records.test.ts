/**
 * The contents of an image (its ancestry, named by its digest) are deleted when the last record of
 * the digest goes. An image pushed to two repositories and deleted from one while a scan is
 * recording it in the other (a release promoted from staging to production, then deleted from
 * staging) keeps its contents: the delete waits for the recording that holds the ancestry's name,
 * then sees the new record. Two real transactions on PostgreSQL, in that order. And in one process,
 * the records of a repository wait their turn without a database connection.
 */
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { RepositoryTurns } from '../../src/images/records.js';
import { lockAncestryName } from '../../src/store/ancestries.js';
import { forgetManifest, lockImageRepository, recordImages } from '../../src/store/images.js';
import { freshPool } from '../helpers/db.js';

const DIGEST = `sha256:${'7'.repeat(64)}`;
const IMAGE = { digest: DIGEST, platform: 'linux/amd64', mediaType: 'application/vnd.oci.image.manifest.v1+json', indexDigest: null };
const STAGING = { registry: 'registry.example', repository: 'staging/app' };
const PRODUCTION = { registry: 'registry.example', repository: 'production/app' };

async function transaction(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  await client.query('BEGIN');
  return client;
}

describe('deleting an image from one repository while it is being recorded in another', () => {
  it('keeps the contents the other record needs', async () => {
    const pool = await freshPool();
    await pool.query('INSERT INTO ancestry (name) VALUES ($1)', [DIGEST]);
    const setup = await transaction(pool);
    await recordImages(setup, STAGING, [IMAGE]);
    await setup.query('COMMIT');
    setup.release();

    // A scan recording the image in production: its contents written (their name locked), its record not committed yet.
    const recording = await transaction(pool);
    await lockImageRepository(recording, PRODUCTION);
    await lockAncestryName(recording, DIGEST);
    await recordImages(recording, PRODUCTION, [IMAGE]);

    // The registry deletes it from staging meanwhile.
    const deleting = await transaction(pool);
    const deletingPid = (await deleting.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await lockImageRepository(deleting, STAGING);
    const forgotten = forgetManifest(deleting, STAGING, DIGEST);
    // It waits for the recording (a lock wait, seen from a third connection), rather than deleting the contents under it.
    await expect
      .poll(async () => (await pool.query('SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1', [deletingPid])).rows[0], {
        timeout: 5_000,
        interval: 20,
      })
      .toEqual({ wait_event_type: 'Lock' });
    await recording.query('COMMIT');
    recording.release();
    expect(await forgotten).toBe(1);
    await deleting.query('COMMIT');
    deleting.release();

    const { rows } = await pool.query<{ repository: string; contents: boolean }>(
      'SELECT i.repository, EXISTS (SELECT 1 FROM ancestry a WHERE a.name = i.digest) AS contents FROM image i',
    );
    expect(rows).toEqual([{ repository: 'production/app', contents: true }]);
  });
});

describe('the turns of a repository in one process', () => {
  /** A piece of work that ends when told to; started says whether it has begun. */
  function work(result: string) {
    let finish!: (fail?: boolean) => void;
    const state = { started: false };
    const run = () => {
      state.started = true;
      return new Promise<string>((resolve, reject) => (finish = (fail) => (fail ? reject(new Error(result)) : resolve(result))));
    };
    return { run, state, finish: (fail?: boolean) => finish(fail) };
  }

  it("runs one repository's records one after the other, and other repositories' meanwhile; a failure ends only its own turn", async () => {
    const turns = new RepositoryTurns();
    const [first, second, other] = [work('first'), work('second'), work('other')];
    const firstDone = turns.take(STAGING, first.run);
    const secondDone = turns.take(STAGING, second.run);
    const otherDone = turns.take(PRODUCTION, other.run);
    await expect.poll(() => [first.state.started, second.state.started, other.state.started]).toEqual([true, false, true]);
    other.finish();
    expect(await otherDone).toBe('other');
    expect(second.state.started).toBe(false);
    first.finish(true);
    await expect(firstDone).rejects.toThrow('first');
    await expect.poll(() => second.state.started).toBe(true);
    second.finish();
    expect(await secondDone).toBe('second');
  });
});
