import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Matching } from '../model/matching.js';
import { sameVulnerability, statedFixState, type FixedIn, type Severity, type Vulnerability } from '../model/vulnerability.js';
import { featureIds, linkAffected, versionsOfFeatures, type FixRecord } from './features.js';
import { FIXED_IN_FIELDS, storedFixedIn, WAKE_NOTIFIERS, type FixedInRow, type NamespaceRow } from './vulnerabilities.js';

/**
 * Writing an updater's complete data for one namespace in bulk: one transaction, a handful of
 * set-based statements whatever the number of vulnerabilities, under an exclusive lock on the
 * namespace (single writers hold it shared), with the same versioning and notifications as
 * single writes.
 */
const SELECT_LIVE = `
  SELECT id, name, description, link, severity, metadata, updater, source_severity, cves
  FROM vulnerability WHERE namespace_id = $1 AND deleted_at IS NULL`;
const SELECT_LIVE_FIXES = `
  SELECT fi.vulnerability_id, json_build_object(${FIXED_IN_FIELDS}) AS entry
  FROM vulnerability_fixedin fi
  JOIN vulnerability v ON v.id = fi.vulnerability_id AND v.namespace_id = $1 AND v.deleted_at IS NULL
  JOIN feature f ON f.id = fi.feature_id`;
const SOFT_DELETE = 'UPDATE vulnerability SET deleted_at = now() WHERE id = ANY($1::bigint[])';
/**
 * New versions and their fixed-in entries go in with COPY: against multi-row unnest INSERTs of the
 * same rows, PostgreSQL spent about a quarter less time, and nothing has to come back (ids are
 * drawn from the sequences first).
 */
/** As one string: parsing tens of thousands of one-column rows cost ten times drawing the values. */
const ALLOCATE_IDS = "SELECT string_agg(nextval($2::regclass)::text, ',') AS ids FROM generate_series(1, $1)";
const COPY_VERSIONS =
  'COPY vulnerability (id, namespace_id, name, description, link, severity, metadata, updater, source_severity, cves) FROM STDIN';
/** The same, with the time each was written elsewhere (records carried by a bundle). */
const COPY_WRITTEN_VERSIONS =
  'COPY vulnerability (id, namespace_id, name, description, link, severity, metadata, updater, source_severity, cves, created_at) FROM STDIN';
const FIXEDIN_COLUMNS = 'vulnerability_id, feature_id, fixed_version, fix_state, arches, affected_above, affected_through, source, module';
const COPY_FIXEDIN = `COPY vulnerability_fixedin (id, ${FIXEDIN_COLUMNS}) FROM STDIN`;
/** For fixes of features nothing has installed: nothing to link, so no ids to know. */
const COPY_UNLINKED_FIXEDIN = `COPY vulnerability_fixedin (${FIXEDIN_COLUMNS}) FROM STDIN`;
const INSERT_NOTIFICATIONS = `
  INSERT INTO notification (name, old_vulnerability_id, new_vulnerability_id)
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[])`;

/**
 * Rows per statement: large enough that a namespace of tens of thousands of vulnerabilities takes
 * a handful of round trips, small enough that the parameter arrays stay a few MiB.
 */
const CHUNK = 5_000;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/** A vulnerability to write, with the severity its source gave (before NVD filled an Unknown one; null for the API's). */
export interface DesiredVulnerability extends Vulnerability {
  readonly sourceSeverity: Severity | null;
  /** When it was written where it comes from (a bundle of another installation's API writes); absent: now. */
  readonly writtenAt?: Date;
}

export interface NamespaceUpdate {
  readonly namespace: NamespaceRow;
  readonly desired: readonly DesiredVulnerability[];
  /** The updater writing, or null for records written as through the API. */
  readonly updater: string | null;
  /** Write notifications (false on a source's first run). */
  readonly notify: boolean;
  /** This updater's live vulnerabilities missing from desired were withdrawn upstream: delete them. */
  readonly withdrawMissing: boolean;
  readonly matching: Matching;
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

/** The live vulnerabilities of a namespace with their fixed-in lists, by name. */
export async function liveVulnerabilities(client: pg.PoolClient, namespace: NamespaceRow): Promise<Map<string, LiveVulnerability>> {
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
    }>(SELECT_LIVE, [namespace.id])
  ).rows;
  const fixes = new Map<number, FixedIn[]>();
  for (const f of (await client.query<{ vulnerability_id: number; entry: FixedInRow }>(SELECT_LIVE_FIXES, [namespace.id])).rows) {
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
  const write: DesiredVulnerability[] = [];
  const superseded: Array<number | null> = [];
  const wanted = new Set<string>();
  for (const v of update.desired) {
    wanted.add(v.name);
    const current = live.get(v.name);
    if (current && sameVulnerability(current, v)) {
      counts.unchanged++;
      continue;
    }
    write.push(v);
    superseded.push(current?.id ?? null);
    if (current) counts.replaced++;
    else counts.inserted++;
  }
  const withdrawn = update.withdrawMissing
    ? [...live.values()].filter((v) => v.updater === update.updater && !wanted.has(v.name)).map((v) => v.id)
    : [];
  counts.deleted = withdrawn.length;
  const retired = [...superseded.filter((id): id is number => id !== null), ...withdrawn];
  if (retired.length > 0) await client.query(SOFT_DELETE, [retired]);
  const ids = await insertVersions(client, update, write);
  if (update.notify) {
    await insertNotifications(client, [
      ...write.map((_, i) => [superseded[i] ?? null, ids[i]!] as const),
      ...withdrawn.map((id) => [id, null] as const),
    ]);
  }
  return counts;
}

async function insertVersions(client: pg.PoolClient, update: NamespaceUpdate, write: readonly DesiredVulnerability[]): Promise<number[]> {
  if (write.length === 0) return [];
  // The features and their installed versions (those built from them too), which stay put while the namespace is locked.
  const names = [...new Set(write.flatMap((v) => v.fixedIn.map((f) => f.feature)))];
  const featureIdByName = names.length > 0 ? await featureIds(client, update.namespace.id, names) : new Map<string, number>();
  const versions = featureIdByName.size > 0 ? await versionsOfFeatures(client, [...featureIdByName.values()]) : [];
  const ids = await allocate(client, 'vulnerability_id_seq', write.length);
  const written = write.every((v) => v.writtenAt !== undefined);
  await copyRows(
    client,
    written ? COPY_WRITTEN_VERSIONS : COPY_VERSIONS,
    write.map((v, i) => [
      ids[i]!,
      update.namespace.id,
      v.name,
      v.description,
      v.link,
      v.severity,
      v.metadata === null ? null : JSON.stringify(v.metadata),
      update.updater,
      v.sourceSeverity,
      arrayLiteral(v.cves ?? []),
      ...(written ? [v.writtenAt!.toISOString()] : []),
    ]),
  );
  const fixes: FixRecord[] = [];
  write.forEach((v, i) => {
    for (const fix of v.fixedIn) {
      fixes.push({
        id: 0,
        vulnerability_id: ids[i]!,
        feature_id: featureIdByName.get(fix.feature)!,
        fixed_version: fix.version,
        fix_state: statedFixState(fix),
        arches: fix.arches ? [...fix.arches] : null,
        affected_above: fix.affectedAbove ?? null,
        affected_through: fix.affectedThrough ?? null,
        source: fix.source === true,
        module: fix.module ?? null,
      });
    }
  });
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
  await linkAffected(client, fixes, versions, update.matching.match(update.namespace.versionFormat));
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

async function insertNotifications(client: pg.PoolClient, changes: ReadonlyArray<readonly [number | null, number | null]>): Promise<void> {
  if (changes.length === 0) return;
  for (const batch of chunks(changes)) {
    await client.query(INSERT_NOTIFICATIONS, [batch.map(() => randomUUID()), batch.map((c) => c[0]), batch.map((c) => c[1])]);
  }
  await client.query(WAKE_NOTIFIERS);
}
