/**
 * `npm start`, as a supervisor runs it: it starts without compiling when the build is current,
 * and a SIGTERM to the npm process stops Tarsier and its embedded PostgreSQL, leaving no process.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { whenDone } from './helpers/when-done.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NO_UPDATES_CONFIG = fileURLToPath(new URL('./fixtures/config/no-updates.yaml', import.meta.url));

/** Processes whose command line or environment contains marker. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue; // ended, not yet reaped
      if (cmdline.includes(marker) || environ.includes(marker)) found.push(Number(pid));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

describe('npm start', () => {
  it('starts the server with its embedded database, and a SIGTERM to npm stops everything', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tarsier-npm-start-'));
    await chmod(dir, 0o755);
    whenDone(() => rm(dir, { recursive: true, force: true }));
    const dataDir = join(dir, `postgres-${randomUUID()}`);
    const marker = `TARSIER_TEST_RUN=${randomUUID()}`;
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TARSIER_DATA_DIR: dataDir,
        TARSIER_CONFIG: NO_UPDATES_CONFIG,
        TARSIER_API_PORT: '0',
        TARSIER_HEALTH_PORT: '0',
        [marker.split('=')[0]!]: marker.split('=')[1]!,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    whenDone(() => {
      for (const pid of [...processesWith(marker), ...processesWith(dataDir)]) process.kill(pid, 'SIGKILL');
    });
    const exited = new Promise<number | string>((resolve) => npm.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
      let buffer = '';
      npm.stdout.on('data', (d: Buffer) => {
        buffer += d.toString();
        for (const line of buffer.split('\n')) {
          if (line.includes('"tarsier listening"')) resolve(JSON.parse(line) as Record<string, unknown>);
        }
      });
      void exited.then((code) => reject(new Error(`npm start exited (${code}): ${buffer}`)));
    });
    expect((await fetch(`http://127.0.0.1:${listening.healthPort as number}/health`)).status).toBe(200);
    // The server and its PostgreSQL are running...
    expect(processesWith(marker).length).toBeGreaterThan(0);
    expect(processesWith(dataDir).length).toBeGreaterThan(0);
    npm.kill('SIGTERM');
    await exited;
    // ...and nothing is left once npm has exited.
    while (processesWith(marker).length + processesWith(dataDir).length > 0) await new Promise((r) => setTimeout(r, 20));
    expect(processesWith(marker)).toEqual([]);
    expect(processesWith(dataDir)).toEqual([]);
  }, 120_000);
});
