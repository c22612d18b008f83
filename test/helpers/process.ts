import { spawn, type ChildProcess } from 'node:child_process';
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
