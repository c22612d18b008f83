import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { whenDone } from './when-done.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const NO_UPDATES_CONFIG = fileURLToPath(new URL('../fixtures/config/no-updates.yaml', import.meta.url));

export interface TarsierProcess {
  child: ChildProcess;
  apiPort: number;
  healthPort: number;
  /** Every log line so far, parsed. */
  logs: Array<Record<string, unknown>>;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
}

/** A postgres:// URL for connection settings in either form. */
export function databaseUrl(conn: pg.PoolConfig): string {
  if (conn.connectionString) return conn.connectionString;
  const auth = conn.user ? `${encodeURIComponent(conn.user)}${conn.password ? `:${encodeURIComponent(String(conn.password))}` : ''}@` : '';
  return `postgres://${auth}${conn.host ?? '127.0.0.1'}:${conn.port ?? 5432}/${conn.database ?? ''}`;
}

/**
 * Runs `tarsier <args>` as a real process (through tsx, so no build step) and waits until it
 * logs that it listens (options.waitFor: null, a command that does not listen, does not wait).
 * options.onLog sees every log line as it comes, to act on an event.
 * Ports default to 0 (free ports, read back from the log). The process is killed when the test (or
 * file) that started it ends if it is still running.
 */
export async function startTarsier(
  env: Record<string, string>,
  args: string[] = ['serve'],
  options: { waitFor?: null; onLog?: (entry: Record<string, unknown>) => void } = {},
): Promise<TarsierProcess> {
  // Tests never let the updater reach the real upstream feeds: without a config of their own,
  // processes get one that turns the schedule off.
  const config = env.TARSIER_CONFIG ? {} : { TARSIER_CONFIG: NO_UPDATES_CONFIG };
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    env: { PATH: process.env.PATH, TARSIER_API_PORT: '0', TARSIER_HEALTH_PORT: '0', TARSIER_LOG_LEVEL: 'info', ...config, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  whenDone(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const listening = new Promise<Record<string, unknown>>((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (d: Buffer) => {
      buffer += d.toString();
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          options.onLog?.(entry);
          if (entry.msg === 'tarsier listening') resolve(entry);
        } catch {
          // not a log line
        }
      }
    });
    void exited.then((code) => reject(new Error(`tarsier exited (${code}) before listening: ${stderr}${JSON.stringify(logs.slice(-5))}`)));
  });
  if (options.waitFor === null) {
    listening.catch(() => undefined);
    return { child, apiPort: 0, healthPort: 0, logs, exited };
  }
  const entry = await listening;
  return { child, apiPort: entry.apiPort as number, healthPort: entry.healthPort as number, logs, exited };
}

/** Runs `tarsier <args>` to completion; returns its exit code and output. Killed if still running when its test ends. */
export function runTarsier(env: Record<string, string>, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((ended) => child.once('exit', () => ended()));
    // A test that gives up on it (a timeout) does not leave it running.
    whenDone(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    });
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The TCP sockets of this machine, from /proc/net/tcp and tcp6: local address and port, state (0A: listening), inode. */
function tcpSockets(): Array<{ address: string; port: number; state: string; inode: string }> {
  const sockets = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const [hex, port] = fields[1]!.split(':') as [string, string];
      sockets.push({ address: addressOf(hex), port: parseInt(port, 16), state: fields[3]!, inode: fields[9]! });
    }
  }
  return sockets;
}

/** An address as /proc/net/tcp writes it (32-bit words in host order, little-endian here). */
function addressOf(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((word) => Buffer.from(word, 'hex').reverse());
  if (words.length === 1) return [...words[0]!].join('.');
  const v6 = Buffer.concat(words);
  if (v6.subarray(0, 12).equals(Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]))) return `::ffff:${[...v6.subarray(12)].join('.')}`;
  const groups = (v6.toString('hex').match(/.{4}/g) ?? []).map((group) => group.replace(/^0+(?=.)/, ''));
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
}

/** The addresses something listens on at port (0.0.0.0, 127.0.0.1, ::, ::1…). */
export function listeningAddresses(port: number): string[] {
  return tcpSockets()
    .filter((socket) => socket.port === port && socket.state === '0A')
    .map((socket) => socket.address)
    .sort();
}

/** How many descriptors of process pid are TCP connections accepted on port (listening sockets aside), in any state. */
export function connectionDescriptors(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (socket) inodes.add(socket[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return tcpSockets().filter((socket) => socket.port === port && socket.state !== '0A' && inodes.has(socket.inode)).length;
}
