import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Matching } from '../model/matching.js';
import { sameVulnerability, statedFixState, type FixedIn, type Severity, type Vulnerability } from '../model/vulnerability.js';
import {
  affectedVersions,
  featureIds,
  linkableVersions,
  linkAffected,
  lockFeatures,
  type FeatureVersionRecord,
  type FixRecord,
  type MatchRule,
} from './features.js';
import { NOTIFY_CHANNEL, recordNotifications, type NotifiedChange } from './notifications.js';
import { FIXED_IN_FIELDS, storedFixedIn, type FixedInRow, type NamespaceRow, type WriteState } from './vulnerabilities.js';

/**
 * Every write of vulnerability versions goes through writeVersions: the v1 API's write of one name
 * (replaceVulnerability, under the locks of the name and its features) and an updater's complete
 * data for one namespace (applyNamespaceUpdate, under an exclusive lock on the namespace, which
 * single writers hold shared). A changed name's live version is retired (kept readable, marked
 * deleted), its new version inserted with its fixed-in entries and the feature versions they leave
 * affected, and a notification names both versions.
 *
 * An updater's data goes in bulk: one transaction, a handful of set-based statements whatever the
 * number of vulnerabilities.
 */
/** $2: only these names; null: all. */
const SELECT_LIVE = `
  SELECT id, name, description, link, severity, metadata, updater, source_severity, cves
  FROM vulnerability WHERE namespace_id = $1 AND deleted_at IS NULL AND ($2::text[] IS NULL OR name = ANY($2::text[]))`;
const SELECT_LIVE_FIXES = `
  SELECT fi.vulnerability_id, json_build_object(${FIXED_IN_FIELDS}) AS entry
  FROM vulnerability_fixedin fi
  JOIN vulnerability v ON v.id = fi.vulnerability_id AND v.namespace_id = $1 AND v.deleted_at IS NULL
  JOIN feature f ON f.id = fi.feature_id`;
const SELECT_FIXES_OF = `
  SELECT fi.vulnerability_id, json_build_object(${FIXED_IN_FIELDS}) AS entry
  FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id
  WHERE fi.vulnerability_id = ANY($1::bigint[])`;
/**
 * Retires the live versions a write changes ($1) and reads every version of the features the new
 * versions fix ($2), and those built from them, in one statement once their locks are held.
 */
const RETIRE = `
  WITH retired AS (UPDATE vulnerability SET deleted_at = now() WHERE id = ANY($1::bigint[]))
  ${linkableVersions(2)}`;
/**
 * One new version in one statement: with its fixed-in entries ($8, $9, $14, and $16 to $20:
 * architectures as comma-separated lists, NULL for every one), the feature versions they leave
 * affected (pairs $10, $11: the entry's place in the list, from 1, and the feature version) and,
 * when $12 names one, its notification (old version $13), which wakes the notifiers at COMMIT
 * (as recordNotifications does). The entries' ids are drawn first, so the links can name the entry
 * of their place. $21 is the time it was written elsewhere (null: now).
 */
const INSERT_VERSION = `
  WITH version AS (
    INSERT INTO vulnerability (namespace_id, name, description, link, severity, metadata, updater, source_severity, cves, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $22, $15, coalesce($21::timestamptz, now())) RETURNING id),
  entries AS MATERIALIZED (
    SELECT nextval('vulnerability_fixedin_id_seq') AS id, t.*
    FROM unnest($8::int[], $9::text[], $14::text[], $16::text[], $17::text[], $18::text[], $19::boolean[], $20::text[], $23::text[])
      WITH ORDINALITY AS t(feature_id, fixed_version, fix_state, arches, affected_above, affected_through, source, module, affected_from, place)),
  fixes AS (
    INSERT INTO vulnerability_fixedin
      (id, vulnerability_id, feature_id, fixed_version, fix_state, arches, affected_above, affected_through, source, module, affected_from)
    SELECT entries.id, version.id, entries.feature_id, entries.fixed_version, entries.fix_state,
      string_to_array(entries.arches, ','), entries.affected_above, entries.affected_through, entries.source, entries.module,
      entries.affected_from
    FROM version, entries),
  links AS (
    INSERT INTO vulnerability_affects (vulnerability_id, feature_version_id, fixedin_id)
    SELECT version.id, t.feature_version_id, entries.id
    FROM version, entries JOIN unnest($10::int[], $11::int[]) AS t(place, feature_version_id) ON t.place = entries.place
    ON CONFLICT DO NOTHING),
  notice AS (
    INSERT INTO notification (name, old_vulnerability_id, new_vulnerability_id)
    SELECT $12::text, $13::bigint, version.id FROM version WHERE $12::text IS NOT NULL RETURNING name)
  SELECT version.id, notice.name AS notification,
    CASE WHEN notice.name IS NOT NULL THEN pg_notify('${NOTIFY_CHANNEL}', '')::text END AS woken
  FROM version LEFT JOIN notice ON true`;
/**
 * More new versions, and their fixed-in entries, go in with COPY: against multi-row unnest INSERTs
 * of the same rows, PostgreSQL spent about a quarter less time, and nothing has to come back (ids
 * are drawn from the sequences first).
 */
/** As one string: parsing tens of thousands of one-column rows cost ten times drawing the values. */
const ALLOCATE_IDS = "SELECT string_agg(nextval($2::regclass)::text, ',') AS ids FROM generate_series(1, $1)";
const COPY_VERSIONS =
  'COPY vulnerability (id, namespace_id, name, description, link, severity, metadata, updater, source_severity, cves) FROM STDIN';
/** The same, with the time each was written elsewhere (records carried by a bundle). */
const COPY_WRITTEN_VERSIONS =
  'COPY vulnerability (id, namespace_id, name, description, link, severity, metadata, updater, source_severity, cves, created_at) FROM STDIN';
const FIXEDIN_COLUMNS =
  'vulnerability_id, feature_id, fixed_version, fix_state, arches, affected_above, affected_through, source, module, affected_from';
const COPY_FIXEDIN = `COPY vulnerability_fixedin (id, ${FIXEDIN_COLUMNS}) FROM STDIN`;
/** For fixes of features nothing has installed: nothing to link, so no ids to know. */
const COPY_UNLINKED_FIXEDIN = `COPY vulnerability_fixedin (${FIXEDIN_COLUMNS}) FROM STDIN`;

/** A vulnerability to write, with the severity its source gave (before NVD filled an Unknown one; the API's: its severity). */
export interface DesiredVulnerability extends Vulnerability {
  readonly sourceSeverity: Severity | null;
  /** When it was written where it comes from (a bundle of another installation's API writes); absent: now. */
  readonly writtenAt?: Date;
}

export interface WriteOptions {
  /** The updater writing, or null for the API (and records written as through it). */
  readonly updater: string | null;
  /** Write notifications (false on a source's first run). */
  readonly notify: boolean;
  readonly matching: Matching;
}

export interface NamespaceUpdate extends WriteOptions {
  readonly namespace: NamespaceRow;
  readonly desired: readonly DesiredVulnerability[];
  /** This updater's live vulnerabilities missing from desired were withdrawn upstream: delete them. */
  readonly withdrawMissing: boolean;
}

export interface UpdateCounts {
  inserted: number;
  replaced: number;
  deleted: number;
  unchanged: number;
}

export interface LiveVulnerability extends Vulnerability {
  readonly id: number;
  readonly updater: string | null;
  readonly sourceSeverity: Severity | null;
}

/** The names of one updater's live vulnerabilities in a namespace. */
export async function liveNames(client: pg.PoolClient, namespace: NamespaceRow, updater: string): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    'SELECT name FROM vulnerability WHERE namespace_id = $1 AND deleted_at IS NULL AND updater = $2',
    [namespace.id, updater],
  );
  return rows.map((r) => r.name);
}

/** The live vulnerabilities of a namespace (only those named, when `names` is given) with their fixed-in lists, by name. */
export async function liveVulnerabilities(
  client: pg.PoolClient,
  namespace: NamespaceRow,
  names?: readonly string[],
): Promise<Map<string, LiveVulnerability>> {
  const rows = (
    await client.query<{
      id: number;
      name: string;
      description: string;
      link: string;
      severity: Severity;
      metadata: Record<string, unknown> | null;
      updater: string | null;
      source_severity: Severity | null;
      cves: string[];
    }>(SELECT_LIVE, [namespace.id, names ?? null])
  ).rows;
  const fixes = new Map<number, FixedIn[]>();
  // A whole namespace's are read by a join; a few names' by their ids.
  const [fixesSql, fixesOf] = names === undefined ? [SELECT_LIVE_FIXES, namespace.id] : [SELECT_FIXES_OF, rows.map((r) => r.id)];
  for (const f of (await client.query<{ vulnerability_id: number; entry: FixedInRow }>(fixesSql, [fixesOf])).rows) {
    const list = fixes.get(f.vulnerability_id) ?? [];
    list.push(storedFixedIn(f.entry));
    fixes.set(f.vulnerability_id, list);
  }
  return new Map(
    rows.map((r) => [
      r.name,
      {
        id: r.id,
        namespace: namespace.name,
        name: r.name,
        description: r.description,
        link: r.link,
        severity: r.severity,
        metadata: r.metadata,
        fixedIn: fixes.get(r.id) ?? [],
        ...(r.cves.length > 0 ? { cves: r.cves } : {}),
        updater: r.updater,
        sourceSeverity: r.source_severity,
      },
    ]),
  );
}

/**
 * Writes desired over what is live in the namespace. An unchanged vulnerability costs nothing; a
 * changed one gets a new version (the old one stays readable) and a notification; with
 * withdrawMissing, this updater's vulnerabilities that are gone upstream are deleted. Must run in
 * a transaction that called lockNamespace.
 */
export async function applyNamespaceUpdate(
  client: pg.PoolClient,
  update: NamespaceUpdate,
  live: ReadonlyMap<string, LiveVulnerability>,
): Promise<UpdateCounts> {
  const counts: UpdateCounts = { inserted: 0, replaced: 0, deleted: 0, unchanged: 0 };
  const changes: VersionChange[] = [];
  const wanted = new Set<string>();
  for (const v of update.desired) {
    wanted.add(v.name);
    const current = live.get(v.name);
    if (current && sameVulnerability(current, v)) {
      counts.unchanged++;
      continue;
    }
    changes.push({ current: current?.id ?? null, next: v });
    if (current) counts.replaced++;
    else counts.inserted++;
  }
  if (update.withdrawMissing) {
    for (const v of live.values()) {
      if (v.updater === update.updater && !wanted.has(v.name)) changes.push({ current: v.id, next: null });
    }
  }
  counts.deleted = changes.length - counts.inserted - counts.replaced;
  // The features the new versions name, which stay put while the namespace is locked.
  const names = [...new Set(changes.flatMap((c) => c.next?.fixedIn.map((f) => f.feature) ?? []))];
  const ids = names.length > 0 ? await featureIds(client, update.namespace.id, names) : new Map<string, number>();
  await writeVersions(client, update.namespace, changes, ids, update);
  return counts;
}

/** What a write of one name wrote. */
export interface ReplaceResult {
  /** The new live version's id; null after a deletion. */
  id: number | null;
  /** The notification written, if any. */
  notification: string | null;
}

/**
 * Replaces the live version (`state` from liveForWrite) with `next` (null = delete), as
 * writeVersions does. Must run in the transaction that took the locks.
 */
export async function replaceVulnerability(
  client: pg.PoolClient,
  namespace: NamespaceRow,
  state: WriteState,
  next: Vulnerability | null,
  options: WriteOptions,
): Promise<ReplaceResult> {
  const { current } = state;
  if (!current && !next) return { id: null, notification: null };
  let ids = state.featureIds;
  const unlocked = (next?.fixedIn ?? []).filter((f) => !ids.has(f.feature)).map((f) => f.feature);
  if (unlocked.length > 0) ids = new Map([...ids, ...(await lockFeatures(client, namespace.id, unlocked))]);
  // The API's records have no source but the client: the severity it gave is the source's.
  const change = { current: current?.id ?? null, next: next && { ...next, sourceSeverity: next.severity } };
  return (await writeVersions(client, namespace, [change], ids, options))[0]!;
}

/** A name's change: the live version it retires (null: none) and the version it writes (null: a deletion). */
interface VersionChange {
  readonly current: number | null;
  readonly next: DesiredVulnerability | null;
}

/** A fixed-in entry as vulnerability_fixedin stores it, without its ids. */
type FixColumns = Omit<FixRecord, 'id' | 'vulnerability_id'>;

function fixColumns(fix: FixedIn, featureId: number): FixColumns {
  return {
    feature_id: featureId,
    fixed_version: fix.version,
    fix_state: statedFixState(fix),
    arches: fix.arches ? [...fix.arches] : null,
    affected_above: fix.affectedAbove ?? null,
    affected_from: fix.affectedFrom ?? null,
    affected_through: fix.affectedThrough ?? null,
    source: fix.source === true,
    module: fix.module ?? null,
  };
}

/**
 * The one write of vulnerability versions: retires the live versions the changes replace or
 * delete (one statement, which also reads the feature versions the new ones may affect), inserts
 * the new versions with their fixed-in entries and "affects" links, and with notify records a
 * notification old → new per change, the new versions' first. One new version takes a single
 * statement, its notification included; more go in with COPY. ids holds the id of every feature
 * the new versions name, which the caller's locks keep from gaining versions meanwhile (the name's
 * feature locks, or the namespace's exclusive lock). The results are in the changes' order.
 */
async function writeVersions(
  client: pg.PoolClient,
  namespace: NamespaceRow,
  changes: readonly VersionChange[],
  ids: ReadonlyMap<string, number>,
  options: WriteOptions,
): Promise<ReplaceResult[]> {
  const results: ReplaceResult[] = changes.map(() => ({ id: null, notification: null }));
  const writes = changes.flatMap((c, at) => (c.next ? [{ at, current: c.current, next: c.next }] : []));
  const fixes = writes.map((w) => w.next.fixedIn.map((f) => fixColumns(f, ids.get(f.feature)!)));
  const retired = changes.flatMap((c) => (c.current === null ? [] : [c.current]));
  const fixed = [...new Set(fixes.flat().map((f) => f.feature_id))];
  const versions =
    retired.length > 0 || fixed.length > 0
      ? (await client.query<FeatureVersionRecord>({ name: 'tarsier-retire', text: RETIRE, values: [retired, fixed] })).rows
      : [];
  const match = options.matching.match(namespace.versionFormat);
  const notices: Array<NotifiedChange & { at: number }> = [];
  if (writes.length === 1) {
    const [{ at, current, next }] = writes as [(typeof writes)[number]];
    const notification = options.notify ? randomUUID() : null;
    results[at] = await insertVersion(client, namespace, next, current, fixes[0]!, versions, match, options.updater, notification);
  } else if (writes.length > 0) {
    const newIds = await copyVersions(
      client,
      namespace,
      writes.map((w) => w.next),
      fixes,
      versions,
      match,
      options.updater,
    );
    writes.forEach((w, i) => {
      results[w.at]!.id = newIds[i]!;
      notices.push({ at: w.at, old: w.current, new: newIds[i]! });
    });
  }
  changes.forEach((c, at) => {
    if (c.next === null) notices.push({ at, old: c.current, new: null });
  });
  if (options.notify) {
    const names = await recordNotifications(client, notices);
    notices.forEach((n, i) => (results[n.at]!.notification = names[i]!));
  }
  return results;
}

/** One new version, its entries, links and notification (if named) in one statement (INSERT_VERSION). */
async function insertVersion(
  client: pg.PoolClient,
  namespace: NamespaceRow,
  next: DesiredVulnerability,
  current: number | null,
  fixes: readonly FixColumns[],
  versions: readonly FeatureVersionRecord[],
  match: MatchRule,
  updater: string | null,
  notification: string | null,
): Promise<ReplaceResult> {
  const links: [number[], number[]] = [[], []];
  const placed = fixes.map((f, i) => ({ ...f, place: i + 1 }));
  for (const [fix, fv] of affectedVersions(placed, versions, match)) {
    links[0].push(fix.place);
    links[1].push(fv.id);
  }
  const { rows } = await client.query<{ id: number; notification: string | null }>({
    name: 'tarsier-insert-version',
    text: INSERT_VERSION,
    values: [
      namespace.id,
      next.name,
      next.description,
      next.link,
      next.severity,
      next.metadata === null ? null : JSON.stringify(next.metadata),
      updater,
      fixes.map((f) => f.feature_id),
      fixes.map((f) => f.fixed_version),
      ...links,
      notification,
      current,
      fixes.map((f) => f.fix_state),
      // An advisory's CVE list stays with it through edits made by hand (a fix added, a severity changed).
      next.cves ?? [],
      fixes.map((f) => f.arches && f.arches.join(',')),
      fixes.map((f) => f.affected_above),
      fixes.map((f) => f.affected_through),
      fixes.map((f) => f.source),
      fixes.map((f) => f.module),
      next.writtenAt?.toISOString() ?? null,
      next.sourceSeverity,
      fixes.map((f) => f.affected_from),
    ],
  });
  return { id: rows[0]!.id, notification: rows[0]!.notification };
}

/** New versions with their entries and links, by COPY; their ids, in order. */
async function copyVersions(
  client: pg.PoolClient,
  namespace: NamespaceRow,
  write: readonly DesiredVulnerability[],
  entries: ReadonlyArray<readonly FixColumns[]>,
  versions: readonly FeatureVersionRecord[],
  match: MatchRule,
  updater: string | null,
): Promise<number[]> {
  const ids = await allocate(client, 'vulnerability_id_seq', write.length);
  const written = write.every((v) => v.writtenAt !== undefined);
  await copyRows(
    client,
    written ? COPY_WRITTEN_VERSIONS : COPY_VERSIONS,
    write.map((v, i) => [
      ids[i]!,
      namespace.id,
      v.name,
      v.description,
      v.link,
      v.severity,
      v.metadata === null ? null : JSON.stringify(v.metadata),
      updater,
      v.sourceSeverity,
      arrayLiteral(v.cves ?? []),
      ...(written ? [v.writtenAt!.toISOString()] : []),
    ]),
  );
  const fixes: FixRecord[] = entries.flatMap((list, i) => list.map((f) => ({ ...f, id: 0, vulnerability_id: ids[i]! })));
  if (fixes.length === 0) return ids;
  if (versions.length === 0) {
    await copyRows(client, COPY_UNLINKED_FIXEDIN, fixes.map(fixedInRow));
    return ids;
  }
  const fixIds = await allocate(client, 'vulnerability_fixedin_id_seq', fixes.length);
  fixes.forEach((f, i) => (f.id = fixIds[i]!));
  await copyRows(
    client,
    COPY_FIXEDIN,
    fixes.map((f) => [f.id, ...fixedInRow(f)]),
  );
  // Link the installed versions each fix leaves affected.
  await linkAffected(client, fixes, versions, match);
  return ids;
}
/** A fixed-in entry's FIXEDIN_COLUMNS as COPY reads them. */
function fixedInRow(f: FixRecord): Array<string | number | null> {
  return [
    f.vulnerability_id,
    f.feature_id,
    f.fixed_version,
    f.fix_state,
    f.arches && arrayLiteral(f.arches),
    f.affected_above,
    f.affected_through,
    f.source ? 't' : 'f',
    f.module,
    f.affected_from,
  ];
}

/** count ids drawn from a table's id sequence. */
async function allocate(client: pg.PoolClient, sequence: string, count: number): Promise<number[]> {
  return (await client.query<{ ids: string }>(ALLOCATE_IDS, [count, sequence])).rows[0]!.ids.split(',').map(Number);
}

const COPY_ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** A value in COPY's text format: \N for null, backslash, tab and line breaks escaped. */
function copyField(value: string | number | null): string {
  if (value === null) return '\\N';
  return typeof value === 'number' ? String(value) : value.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!);
}

/** Rows as COPY text, in pieces of about 64 KiB. */
function* copyText(rows: ReadonlyArray<ReadonlyArray<string | number | null>>): Generator<string> {
  let piece = '';
  for (const row of rows) {
    piece += row.map(copyField).join('\t') + '\n';
    if (piece.length >= 65_536) {
      yield piece;
      piece = '';
    }
  }
  if (piece !== '') yield piece;
}

/** A text[] value as COPY's text format reads it ({"a","b"}); copyText escapes it for the row. */
function arrayLiteral(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`;
}

async function copyRows(client: pg.PoolClient, sql: string, rows: ReadonlyArray<ReadonlyArray<string | number | null>>): Promise<void> {
  await pipeline(Readable.from(copyText(rows)), client.query(copyFrom(sql)));
}
