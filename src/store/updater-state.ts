import type { Queryable } from './pool.js';

export interface UpdaterState {
  readonly name: string;
  /** The updater's own record of what it saw (validators per part), null before a first success. */
  readonly fingerprint: string | null;
  readonly lastAttemptAt: Date | null;
  readonly lastSuccessAt: Date | null;
  /**
   * When its data was last known current upstream: the last success of an online run, or for data
   * imported from a bundle, when the exporting installation last updated it. Null before a first success.
   */
  readonly dataUpdatedAt: Date | null;
  readonly lastError: string | null;
  readonly recordCount: number;
  readonly nextRunAt: Date | null;
  readonly consecutiveFailures: number;
  readonly lastDurationMs: number | null;
  readonly lastChanged: number;
  /** The next successful run writes no notifications (its changes come from Tarsier's parser, not upstream). */
  readonly quietNextRun: boolean;
}

const SELECT = `
  SELECT name, fingerprint, last_attempt_at, last_success_at, data_updated_at, last_error, record_count, next_run_at,
         consecutive_failures, last_duration_ms, last_changed, quiet_next_run
  FROM updater_state`;
const SELECT_ONE = `${SELECT} WHERE name = $1`;
const SUCCESS = `
  INSERT INTO updater_state (name, fingerprint, last_attempt_at, last_success_at, data_updated_at, last_error, record_count, next_run_at,
                             consecutive_failures, last_duration_ms, last_changed)
  VALUES ($1, $2, now(), now(), coalesce($7, now()), NULL, $3, now() + $4 * interval '1 millisecond', 0, $5, $6)
  ON CONFLICT (name) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, last_attempt_at = now(), last_success_at = now(),
    data_updated_at = EXCLUDED.data_updated_at,
    last_error = NULL, record_count = EXCLUDED.record_count, next_run_at = EXCLUDED.next_run_at, consecutive_failures = 0,
    last_duration_ms = EXCLUDED.last_duration_ms, last_changed = EXCLUDED.last_changed, quiet_next_run = false`;
const FAILURE = `
  INSERT INTO updater_state (name, fingerprint, last_attempt_at, last_error, next_run_at, consecutive_failures, last_duration_ms)
  VALUES ($1, $2, now(), $3, now() + $4 * interval '1 millisecond', 1, $5)
  ON CONFLICT (name) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, last_attempt_at = now(), last_error = EXCLUDED.last_error,
    next_run_at = EXCLUDED.next_run_at, consecutive_failures = updater_state.consecutive_failures + 1,
    last_duration_ms = EXCLUDED.last_duration_ms`;

interface Record {
  name: string;
  fingerprint: string | null;
  last_attempt_at: Date | null;
  last_success_at: Date | null;
  data_updated_at: Date | null;
  last_error: string | null;
  record_count: number;
  next_run_at: Date | null;
  consecutive_failures: number;
  last_duration_ms: number | null;
  last_changed: number;
  quiet_next_run: boolean;
}

const toState = (r: Record): UpdaterState => ({
  name: r.name,
  fingerprint: r.fingerprint,
  lastAttemptAt: r.last_attempt_at,
  lastSuccessAt: r.last_success_at,
  dataUpdatedAt: r.data_updated_at,
  lastError: r.last_error,
  recordCount: r.record_count,
  nextRunAt: r.next_run_at,
  consecutiveFailures: r.consecutive_failures,
  lastDurationMs: r.last_duration_ms,
  lastChanged: r.last_changed,
  quietNextRun: r.quiet_next_run,
});

export async function updaterStates(db: Queryable): Promise<UpdaterState[]> {
  return (await db.query<Record>(`${SELECT} ORDER BY name`)).rows.map(toState);
}

export async function updaterState(db: Queryable, name: string): Promise<UpdaterState | undefined> {
  const row = (await db.query<Record>(SELECT_ONE, [name])).rows[0];
  return row && toState(row);
}

export async function recordSuccess(
  db: Queryable,
  name: string,
  run: {
    fingerprint: string;
    records: number;
    changed: number;
    durationMs: number;
    nextRunInMs: number;
    /** When the data was last current where it came from (a bundle's); absent: now. */
    dataUpdatedAt?: Date | undefined;
  },
): Promise<void> {
  await db.query(SUCCESS, [
    name,
    run.fingerprint,
    run.records,
    run.nextRunInMs,
    Math.round(run.durationMs),
    run.changed,
    run.dataUpdatedAt ?? null,
  ]);
}

/** A failed run keeps the last good data and fingerprint (parts that did succeed are kept too). */
export async function recordFailure(
  db: Queryable,
  name: string,
  run: { fingerprint: string | null; error: string; durationMs: number; nextRunInMs: number },
): Promise<void> {
  await db.query(FAILURE, [name, run.fingerprint, run.error, run.nextRunInMs, Math.round(run.durationMs)]);
}
