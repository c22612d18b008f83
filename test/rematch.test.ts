import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPLICATION_VERSION_FORMATS } from '../src/ecosystems/formats.js';
import { Rematcher } from '../src/rematch.js';
import { acquireLease, releaseLease } from '../src/store/locks.js';
import { computeSummaries } from '../src/store/summaries.js';
import { markAllQueued, summaryCurrent } from './helpers/summaries.js';
import { freshDatabase, silentLog } from './helpers/db.js';
import { createPool } from '../src/store/pool.js';

/**
 * A deployment upgraded from a release whose apk and rpm comparators ordered some versions
 * differently: its stored matches were decided by the old order. The database starts as the
 * migrations leave it (every format's matches recorded as computed with revision 1); the rows
 * below are what the old comparators stored.
 */
let pool: pg.Pool;
let connection: pg.PoolConfig;

beforeAll(async () => {
  connection = await freshDatabase();
  pool = createPool(connection, 10, silentLog);
});
afterAll(() => pool.end());

async function namespace(name: string, format: string): Promise<number> {
  const { rows } = await pool.query<{ id: number }>('INSERT INTO namespace (name, version_format) VALUES ($1, $2) RETURNING id', [
    name,
    format,
  ]);
  return rows[0]!.id;
}

/** A feature with installed versions; returns version → feature version id. */
async function installed(namespaceId: number, feature: string, versions: string[]): Promise<Map<string, number>> {
  const f = await pool.query<{ id: number }>('INSERT INTO feature (namespace_id, name) VALUES ($1, $2) RETURNING id', [
    namespaceId,
    feature,
  ]);
  const { rows } = await pool.query<{ id: number; version: string }>(
    'INSERT INTO feature_version (feature_id, version) SELECT $1, unnest($2::text[]) RETURNING id, version',
    [f.rows[0]!.id, versions],
  );
  return new Map(rows.map((r) => [r.version, r.id]));
}

/** A vulnerability version fixed in one feature, with the links the old comparator stored. */
async function vulnerability(
  namespaceId: number,
  name: string,
  feature: string,
  fixed: string,
  linked: number[],
  retired = false,
): Promise<number> {
  const v = await pool.query<{ id: number }>(
    `INSERT INTO vulnerability (namespace_id, name, severity, deleted_at) VALUES ($1, $2, 'High', CASE WHEN $3 THEN now() END) RETURNING id`,
    [namespaceId, name, retired],
  );
  const id = v.rows[0]!.id;
  const fi = await pool.query<{ id: number }>(
    `INSERT INTO vulnerability_fixedin (vulnerability_id, feature_id, fixed_version)
     SELECT $1, id, $3 FROM feature WHERE namespace_id = $2 AND name = $4 RETURNING id`,
    [id, namespaceId, fixed, feature],
  );
  await pool.query(
    'INSERT INTO vulnerability_affects (vulnerability_id, feature_version_id, fixedin_id) SELECT $1, unnest($2::int[]), $3',
    [id, linked, fi.rows[0]!.id],
  );
  return id;
}

async function links(vulnerabilityId: number): Promise<string[]> {
  const { rows } = await pool.query<{ version: string }>(
    `SELECT fv.version FROM vulnerability_affects a JOIN feature_version fv ON fv.id = a.feature_version_id
     WHERE a.vulnerability_id = $1 ORDER BY fv.version`,
    [vulnerabilityId],
  );
  return rows.map((r) => r.version);
}

/**
 * The application ecosystems' formats, new to a database that has no namespace of theirs: their
 * revisions are recorded by the first run, with nothing to recompute.
 */
const NEW_FORMATS = Object.fromEntries(APPLICATION_VERSION_FORMATS.map((f) => [f.name, f.revision]));

async function revisions(): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ version_format: string; revision: number }>('SELECT version_format, revision FROM match_revision');
  return Object.fromEntries(rows.map((r) => [r.version_format, r.revision]));
}

/** Listens on the report-change channel; until() resolves with every payload heard up to a marker sent after the call. */
async function reportChanges(): Promise<{ until(): Promise<string[]>; close(): Promise<void> }> {
  const client = new pg.Client(connection);
  await client.connect();
  const heard: string[] = [];
  let onMarker: (() => void) | undefined;
  client.on('notification', (n) => {
    if (n.payload === 'test-marker') onMarker?.();
    else heard.push(n.payload ?? '');
  });
  await client.query('LISTEN tarsier_report_changes');
  return {
    // NOTIFY is delivered in commit order: once the marker is heard, so is every earlier change.
    async until() {
      const marker = new Promise<void>((resolve) => (onMarker = resolve));
      await pool.query("SELECT pg_notify('tarsier_report_changes', 'test-marker')");
      await marker;
      return heard;
    },
    close: () => client.end(),
  };
}

describe('recomputing stored matches when a comparator changes', () => {
  it('corrects the wrong apk and rpm matches of live vulnerabilities, and tells the report caches and summaries', async () => {
    const alpine = await namespace('alpine:v3.16', 'apk');
    const busybox = await installed(alpine, 'busybox', ['1.35.00-r17', '1.35.0-r17']);
    const musl = await installed(alpine, 'musl', ['1.0_p10']);
    // The old apk order dropped trailing zeros: 1.35.00-r17 = 1.35.0-r17 < 1.35.0-r18 (now "00" > "0"),
    // and 1.0_p10 > 1.00 (now 1.0 < 1.00, decided before the suffix).
    const wronglyLinked = busybox.get('1.35.00-r17')!;
    const cveA = await vulnerability(alpine, 'CVE-A', 'busybox', '1.35.0-r18', [wronglyLinked, busybox.get('1.35.0-r17')!]);
    const cveB = await vulnerability(alpine, 'CVE-B', 'musl', '1.00', []);
    // A superseded version keeps what was reported with it.
    const cveAOld = await vulnerability(alpine, 'CVE-A', 'busybox', '1.35.0-r18', [wronglyLinked], true);

    const rhel = await namespace('rhel:9', 'rpm');
    const openssl = await installed(rhel, 'openssl', ['1.0-2', '1.0-1']);
    // The old rpm order split at the first hyphen: 1.0-2 > 1.0-1-0 (release 2 > 1-0); rpm's
    // version of the fix is 1.0-1, above 1.0.
    const rhsa = await vulnerability(rhel, 'RHSA-1', 'openssl', '1.0-1-0', [openssl.get('1.0-1')!]);

    // dpkg's order did not change: its matches are not computed again, even a wrong one.
    const debian = await namespace('debian:12', 'dpkg');
    const zlib = await installed(debian, 'zlib', ['2.0-1']);
    const dsa = await vulnerability(debian, 'DSA-1', 'zlib', '1.0-1', [zlib.get('2.0-1')!]);

    // An image holding the wrongly linked busybox, its summary fresh.
    const ancestry = (await pool.query<{ id: number }>("INSERT INTO ancestry (name) VALUES ('image') RETURNING id")).rows[0]!.id;
    await pool.query('INSERT INTO ancestry_feature (ancestry_id, feature_version_id, position) SELECT $1, unnest($2::int[]), 0', [
      ancestry,
      [wronglyLinked],
    ]);
    await computeSummaries(pool, [ancestry]);
    const summary = async () =>
      (
        await pool.query<{ stale: boolean; counts: unknown }>('SELECT stale, counts FROM ancestry_summary WHERE ancestry_id = $1', [
          ancestry,
        ])
      ).rows[0]!;
    expect(await summary()).toEqual({ stale: false, counts: { High: { total: 1, fixable: 1 } } });

    expect(await revisions()).toEqual({ dpkg: 1, rpm: 1, apk: 1 });
    const changes = await reportChanges();
    try {
      const rematcher = new Rematcher({ pool, log: silentLog });
      const results = await rematcher.run();
      expect(results).toEqual([
        { format: 'rpm', revision: 2, namespaces: 1, added: 1, removed: 0 },
        { format: 'apk', revision: 2, namespaces: 1, added: 1, removed: 1 },
      ]);

      expect(await links(cveA)).toEqual(['1.35.0-r17']);
      expect(await links(cveB)).toEqual(['1.0_p10']);
      expect(await links(cveAOld)).toEqual(['1.35.00-r17']);
      expect(await links(rhsa)).toEqual(['1.0-1', '1.0-2']);
      expect(await links(dsa)).toEqual(['2.0-1']);
      expect(await revisions()).toEqual({ ...NEW_FORMATS, dpkg: 1, rpm: 2, apk: 2 });

      // Every replica's report cache hears of the feature versions whose matches changed.
      const announced = (await changes.until()).filter((p) => p.startsWith('f:')).flatMap((p) => p.slice(2).split(',').map(Number));
      expect(new Set(announced)).toEqual(new Set([wronglyLinked, musl.get('1.0_p10')!, openssl.get('1.0-2')!]));

      // A match removed queues the change: the image's summary is no longer current, and once the
      // queue is applied it is stale; computed again, it counts nothing.
      expect(await summaryCurrent(pool, ancestry)).toBe(false);
      await markAllQueued(pool);
      expect((await summary()).stale).toBe(true);
      await computeSummaries(pool, [ancestry]);
      expect(await summary()).toEqual({ stale: false, counts: {} });

      // Once recorded, the next start finds nothing to do.
      expect(await new Rematcher({ pool, log: silentLog }).run()).toEqual([]);
    } finally {
      await changes.close();
    }
  });

  it('waits while another process holds the lease, then recomputes what is still outdated', async () => {
    await pool.query("UPDATE match_revision SET revision = 1 WHERE version_format = 'apk'");
    expect(await acquireLease(pool, 'matches/recompute', 'another-replica', 60_000)).toBe(true);
    let waiting: () => void = () => undefined;
    const isWaiting = new Promise<void>((resolve) => (waiting = resolve));
    const log = pino(
      new Writable({
        write(line: Buffer, _encoding, callback) {
          if ((JSON.parse(line.toString()) as { msg: string }).msg === 'waiting for another process recomputing matches') waiting();
          callback();
        },
      }),
    );
    const rematcher = new Rematcher({ pool, log, waitMs: 20 });
    rematcher.start();
    try {
      await isWaiting;
      expect(await revisions()).toEqual({ ...NEW_FORMATS, dpkg: 1, rpm: 2, apk: 1 });
      // The holder stops without finishing: this process does it.
      await releaseLease(pool, 'matches/recompute', 'another-replica');
      expect(await rematcher.done()).toEqual([{ format: 'apk', revision: 2, namespaces: 1, added: 0, removed: 0 }]);
      expect(await revisions()).toEqual({ ...NEW_FORMATS, dpkg: 1, rpm: 2, apk: 2 });
    } finally {
      await rematcher.stop();
    }
  });
});
