import { randomUUID } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queryable } from './pool.js';

/**
 * Expiring leases in the lock table, for work that one replica at a time should do (indexing a
 * given layer, an updater run, delivering a notification). A replica that dies simply stops
 * renewing; its lease lapses and another replica takes over. A lease whose holder is a process of
 * this machine that has ended (a killed `tarsier update` or `import`) is taken over at once
 * instead of after it lapses.
 *
 * Most names are taken once (one layer's indexing), so the lease of a holder that died would stay
 * in the table for good: every acquisition also deletes the leases that lapsed more than
 * LAPSED_LEASE_GRACE_MS ago. Within that grace a holder that was only late (a stalled process, a
 * database outage) still finds its row and renews it, as before; past it, nothing is lost by
 * deleting the row, since a lapsed lease holds nothing. Rows another transaction has locked are
 * skipped, so acquisitions never wait on each other's clean-up.
 */
export const LAPSED_LEASE_GRACE_MS = 10 * 60_000;

const ACQUIRE = `
  WITH lapsed AS (
    DELETE FROM lock WHERE name IN (
      SELECT name FROM lock WHERE until < now() - $4 * interval '1 millisecond' AND name <> $1 FOR UPDATE SKIP LOCKED
    )
  )
  INSERT INTO lock (name, owner, until) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
  ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
    WHERE lock.until < now() OR lock.owner = EXCLUDED.owner
  RETURNING owner`;
const RENEW = `UPDATE lock SET until = now() + $3 * interval '1 millisecond' WHERE name = $1 AND owner = $2`;
const RELEASE = 'DELETE FROM lock WHERE name = $1 AND owner = $2';
const FORGET = 'DELETE FROM lock WHERE name = ANY($1::text[])';

const HOLDER = 'SELECT owner, until FROM lock WHERE name = $1';
const LIVE_OWNERS = 'SELECT owner FROM lock WHERE starts_with(name, $1) AND until > now()';
const TAKE_OVER = `UPDATE lock SET owner = $3, until = now() + $4 * interval '1 millisecond' WHERE name = $1 AND owner = $2`;

/** This process, as lease owners name it: host, PID namespace, PID and start time (a reused PID is another process). */
function processIdentity(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // A zombie has ended; where nothing reaps it (a container without an init) it stays listed.
    if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
    return `${hostname()}/${readlinkSync('/proc/self/ns/pid')}/${pid}/${fields[19]}`;
  } catch {
    return undefined; // no /proc (not Linux), or no such process
  }
}

const SELF = processIdentity(process.pid);

/** A lease owner name for work of this process: role, a unique id, and the process identity. */
export function leaseOwner(role: string): string {
  return `${role} ${randomUUID()}${SELF ? ` ${SELF}` : ''}`;
}

/**
 * True when owner names a process of this machine and PID namespace that no longer runs. Owners of
 * other machines (or of another PID namespace, such as another container) are never judged: only
 * the lease's expiry speaks for them.
 */
export function ownerIsGone(owner: string): boolean {
  const identity = owner.split(' ')[2];
  if (!SELF || !identity) return false;
  const [host, namespace, pid] = identity.split('/');
  const [ownHost, ownNamespace] = SELF.split('/');
  if (host !== ownHost || namespace !== ownNamespace || !pid || !/^\d+$/.test(pid)) return false;
  return processIdentity(Number(pid)) !== identity;
}

/** An owner for people: its role, and its process when known ("updater, pid 4711 on build-7"). */
export function describeOwner(owner: string): string {
  const [role, , identity] = owner.split(' ');
  const [host, , pid] = identity?.split('/') ?? [];
  return host && pid ? `${role}, pid ${pid} on ${host}` : (role ?? owner);
}

export interface LeaseHolder {
  readonly owner: string;
  readonly until: Date;
}

/** Who holds the lease, if anyone. */
export async function leaseHolder(db: Queryable, name: string): Promise<LeaseHolder | undefined> {
  return (await db.query<LeaseHolder>(HOLDER, [name])).rows[0];
}

/**
 * Takes the lease when it is free, lapsed, or held by a process of this machine that has ended;
 * true when owner now holds it. Deletes the leases of other names that lapsed long ago.
 */
export async function acquireLease(db: Queryable, name: string, owner: string, ttlMs: number): Promise<boolean> {
  if (((await db.query(ACQUIRE, [name, owner, ttlMs, LAPSED_LEASE_GRACE_MS])).rowCount ?? 0) > 0) return true;
  const holder = await leaseHolder(db, name);
  if (!holder || !ownerIsGone(holder.owner)) return false;
  return ((await db.query(TAKE_OVER, [name, holder.owner, owner, ttlMs])).rowCount ?? 0) > 0;
}

/** Extends a held lease; false when owner no longer holds it. */
export async function renewLease(db: Queryable, name: string, owner: string, ttlMs: number): Promise<boolean> {
  return ((await db.query(RENEW, [name, owner, ttlMs])).rowCount ?? 0) > 0;
}

export async function releaseLease(db: Queryable, name: string, owner: string): Promise<void> {
  await db.query(RELEASE, [name, owner]);
}

/** Deletes these leases whoever holds them: for holders known to be gone, whose work was taken back. */
export async function forgetLeases(db: Queryable, names: readonly string[]): Promise<void> {
  await db.query(FORGET, [names]);
}

/** The owners of the unexpired leases whose names start with prefix (a process judged gone may still be among them). */
export async function liveLeaseOwners(db: Queryable, prefix: string): Promise<string[]> {
  return (await db.query<{ owner: string }>(LIVE_OWNERS, [prefix])).rows.map((r) => r.owner);
}

/**
 * How withLease waits while another holder has the lease, polling every pollMs: until signal
 * aborts (its reason is thrown, at once) or maxMs have passed (tooLong's error is thrown).
 */
export interface LeaseWait {
  readonly pollMs: number;
  readonly maxMs: number;
  readonly signal: AbortSignal;
  readonly tooLong: () => Error;
}

/** How withLease takes, keeps and gives back a lease. */
export interface LeaseTerms {
  readonly owner: string;
  /** How long the lease lasts without renewal; it is renewed every third of this while the work runs. */
  readonly ttlMs: number;
  /** Wait while another holder has it. Without: withLease returns at once. */
  readonly wait?: LeaseWait;
  /** A renewal failed (the database was away): the work goes on, and may lose the lease when it lapses. */
  readonly onRenewalFailure: (err: unknown) => void;
}

/**
 * Runs work while owner holds the lease name: taken (waiting as terms.wait says), renewed every
 * third of its ttl, released when the work ends, whatever way it ends. { held: false } when another
 * holder has it and terms.wait is not given (with it, withLease returns only once it held the lease).
 */
export function withLease<T>(
  pool: Queryable,
  name: string,
  terms: LeaseTerms & { readonly wait: LeaseWait },
  work: () => Promise<T>,
): Promise<{ held: true; value: T }>;
export function withLease<T>(
  pool: Queryable,
  name: string,
  terms: LeaseTerms,
  work: () => Promise<T>,
): Promise<{ held: true; value: T } | { held: false }>;
export async function withLease<T>(
  pool: Queryable,
  name: string,
  terms: LeaseTerms,
  work: () => Promise<T>,
): Promise<{ held: true; value: T } | { held: false }> {
  const { owner, ttlMs, wait } = terms;
  const deadline = wait ? Date.now() + wait.maxMs : 0;
  while (!(await acquireLease(pool, name, owner, ttlMs))) {
    if (!wait) return { held: false };
    wait.signal.throwIfAborted();
    if (Date.now() > deadline) throw wait.tooLong();
    await sleep(wait.pollMs, undefined, { signal: wait.signal }).catch(() => undefined);
    wait.signal.throwIfAborted();
  }
  const renewal = setInterval(() => renewLease(pool, name, owner, ttlMs).catch(terms.onRenewalFailure), ttlMs / 3);
  try {
    return { held: true, value: await work() };
  } finally {
    clearInterval(renewal);
    await releaseLease(pool, name, owner).catch(() => undefined);
  }
}
