/**
 * Leases: a lease held by a process of this machine that has ended is taken over at once; a live
 * holder, or one on another machine, keeps it until it lapses.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  acquireLease,
  describeOwner,
  LAPSED_LEASE_GRACE_MS,
  leaseHolder,
  leaseOwner,
  ownerIsGone,
  renewLease,
  withLease,
} from '../../src/store/locks.js';
import { freshPool } from '../helpers/db.js';

/** An owner name for a process, the way leaseOwner writes one for itself. */
function ownerOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  return `updater 00000000-0000-0000-0000-000000000000 ${hostname()}/${readlinkSync('/proc/self/ns/pid')}/${pid}/${start}`;
}

/** A real process that has run and ended, and the owner name it had while it ran. */
async function endedProcessOwner(): Promise<string> {
  const child = spawn(process.execPath, ['-e', 'process.stdin.resume()'], { stdio: ['pipe', 'ignore', 'ignore'] });
  await new Promise((resolve) => child.once('spawn', resolve));
  const owner = ownerOf(child.pid!);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return owner;
}

describe('leases', () => {
  it('are taken over at once from a process of this machine that has ended (a killed tarsier update)', async () => {
    const pool = await freshPool();
    const dead = await endedProcessOwner();
    expect(ownerIsGone(dead)).toBe(true);
    expect(await acquireLease(pool, 'updater/debian', dead, 60_000)).toBe(true);
    const mine = leaseOwner('updater');
    expect(await acquireLease(pool, 'updater/debian', mine, 60_000)).toBe(true);
    expect((await leaseHolder(pool, 'updater/debian'))?.owner).toBe(mine);
  });

  it("stay with a live holder, whose process the busy message names with the lease's end", async () => {
    const pool = await freshPool();
    const live = leaseOwner('updater');
    expect(ownerIsGone(live)).toBe(false);
    expect(await acquireLease(pool, 'updater/debian', live, 60_000)).toBe(true);
    expect(await acquireLease(pool, 'updater/debian', leaseOwner('updater'), 60_000)).toBe(false);
    expect(describeOwner(live)).toBe(`updater, pid ${process.pid} on ${hostname()}`);
  });

  it('stay with a holder on another machine, or in another PID namespace, until they lapse', async () => {
    const pool = await freshPool();
    const [, , identity] = leaseOwner('updater').split(' ');
    const [host, namespace] = identity!.split('/');
    for (const owner of [
      `updater x other-host/${namespace}/1/1`,
      `updater x ${host}/pid:[1]/999999999/1`,
      'indexer-5a1c (an owner of an older version)',
    ]) {
      expect(ownerIsGone(owner)).toBe(false);
      expect(await acquireLease(pool, `lease/${owner}`, owner, 60_000)).toBe(true);
      expect(await acquireLease(pool, `lease/${owner}`, leaseOwner('updater'), 60_000)).toBe(false);
    }
  });

  it('that lapsed long ago are deleted when any lease is taken: a killed process leaves none behind, live ones stay', async () => {
    const pool = await freshPool();
    const dead = await endedProcessOwner();
    const live = leaseOwner('indexer');
    const lapsedLongAgo = LAPSED_LEASE_GRACE_MS + 60_000;
    await pool.query("INSERT INTO lock (name, owner, until) VALUES ($1, $2, now() - $3 * interval '1 millisecond')", [
      'layer/sha256:killed',
      dead,
      lapsedLongAgo,
    ]);
    await pool.query("INSERT INTO lock (name, owner, until) VALUES ($1, $2, now() - $3 * interval '1 millisecond')", [
      'layer/sha256:elsewhere',
      'indexer x other-host/pid:[1]/42/1',
      lapsedLongAgo,
    ]);
    // Lapsed a moment ago: its holder may only be late, and still renews it.
    await pool.query("INSERT INTO lock (name, owner, until) VALUES ($1, $2, now() - interval '1 second')", ['layer/sha256:late', live]);
    expect(await acquireLease(pool, 'layer/sha256:held', live, 60_000)).toBe(true);
    const names = async () => (await pool.query<{ name: string }>('SELECT name FROM lock ORDER BY name')).rows.map((r) => r.name);
    expect(await names()).toEqual(['layer/sha256:held', 'layer/sha256:late']);
    expect(await renewLease(pool, 'layer/sha256:late', live, 60_000)).toBe(true);

    // Taking a lease does not touch the live ones, whoever holds them.
    expect(await acquireLease(pool, 'updater/debian', leaseOwner('updater'), 60_000)).toBe(true);
    expect(await names()).toEqual(['layer/sha256:held', 'layer/sha256:late', 'updater/debian']);
    expect((await leaseHolder(pool, 'layer/sha256:held'))?.owner).toBe(live);
  });

  it('count a reused PID as another process: same PID, other start time', async () => {
    const [role, id, identity] = leaseOwner('updater').split(' ');
    const [host, namespace, pid] = identity!.split('/');
    expect(ownerIsGone(`${role} ${id} ${host}/${namespace}/${pid}/1`)).toBe(true);
  });

  it('are held by withLease for the work alone: another owner is told it is busy, or waits, and takes it once the work ends, failed or not', async () => {
    const pool = await freshPool();
    const noRenewal = (): void => undefined;
    const a = { owner: leaseOwner('a'), ttlMs: 60_000, onRenewalFailure: noRenewal };
    const b = { owner: leaseOwner('b'), ttlMs: 60_000, onRenewalFailure: noRenewal };
    let finishA!: () => void;
    const aRunning = withLease(pool, 'work/x', a, () => new Promise<string>((resolve) => (finishA = () => resolve('a done'))));
    await expect.poll(async () => (await leaseHolder(pool, 'work/x'))?.owner).toBe(a.owner);
    expect(await withLease(pool, 'work/x', b, async () => 'b ran')).toEqual({ held: false });

    const waiting = new AbortController();
    const tooLong = () => new Error('waited too long');
    const bWaits = withLease(
      pool,
      'work/x',
      { ...b, wait: { pollMs: 10, maxMs: 60_000, signal: waiting.signal, tooLong } },
      async () => 'b ran',
    );
    finishA();
    expect(await aRunning).toEqual({ held: true, value: 'a done' });
    expect(await bWaits).toEqual({ held: true, value: 'b ran' });

    await expect(withLease(pool, 'work/x', a, () => Promise.reject(new Error('work failed')))).rejects.toThrow('work failed');
    expect(await leaseHolder(pool, 'work/x')).toBeUndefined();
  });

  it('are waited for by withLease only until its signal aborts, however long its pause between two tries', async () => {
    const pool = await freshPool();
    expect(await acquireLease(pool, 'work/y', leaseOwner('a'), 60_000)).toBe(true);
    // The pool as the waiter sees it, telling when the waiter has found the lease busy (its holder
    // read, and alive): from there to its pause, nothing is waited for.
    let foundBusy: () => void = () => undefined;
    const hasFoundBusy = new Promise<void>((resolve) => (foundBusy = resolve));
    const watched = new Proxy(pool, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver) as unknown;
        return (...args: unknown[]) => {
          const result = (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
          if (String(args[0]).startsWith('SELECT owner, until FROM lock')) void result.then(() => setImmediate(foundBusy));
          return result;
        };
      },
    });
    const stopping = new AbortController();
    const b = {
      owner: leaseOwner('b'),
      ttlMs: 60_000,
      onRenewalFailure: (): void => undefined,
      // An hour between two tries: the abort must not wait for the next one.
      wait: { pollMs: 3_600_000, maxMs: 7_200_000, signal: stopping.signal, tooLong: () => new Error('waited too long') },
    };
    const bWaits = withLease(watched, 'work/y', b, async () => 'b ran');
    await hasFoundBusy;
    stopping.abort(new Error('stopping'));
    await expect(bWaits).rejects.toThrow('stopping');
  });
});
