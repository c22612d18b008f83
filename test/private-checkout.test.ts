/**
 * A new user's first start as root, in a checkout inside a private directory (root's home is
 * mode 0700): PostgreSQL refuses to run as root, and the user it runs as cannot reach the
 * checkout. Tarsier puts the binaries and the default data directory where that user can reach
 * them (RUNTIME_DIR), says where, and answers /health.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RUNTIME_DIR } from '../src/store/embedded.js';
import { whenDone } from './helpers/when-done.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NO_UPDATES_CONFIG = fileURLToPath(new URL('./fixtures/config/no-updates.yaml', import.meta.url));

describe.runIf(process.getuid?.() === 0)('as root, in a checkout inside a private directory', () => {
  it('starts its embedded PostgreSQL where the postgres user can reach it, and answers /health', async () => {
    const home = await mkdtemp(join(tmpdir(), 'tarsier-home-')); // mode 0700, like /root
    expect((await stat(home)).mode & 0o777).toBe(0o700);
    whenDone(() => rm(home, { recursive: true, force: true }));
    const checkout = join(home, 'tarsier');
    // The checkout's files as a clone has them (hard links: the directories are new, under the private one).
    await mkdir(checkout);
    execFileSync('cp', [
      '-al',
      ...['package.json', 'tsconfig.json', 'src', 'migrations', 'proto', 'node_modules'].map((e) => join(ROOT, e)),
      checkout,
    ]);
    const dataDir = join(
      RUNTIME_DIR,
      `postgres-${createHash('sha256')
        .update(join(checkout, 'data', 'postgres'))
        .digest('hex')
        .slice(0, 12)}`,
    );
    whenDone(() => rm(dataDir, { recursive: true, force: true }));

    const child = spawn(process.execPath, ['--import', 'tsx', join(checkout, 'src', 'cli.ts'), 'serve'], {
      cwd: checkout,
      env: { PATH: process.env.PATH, TARSIER_CONFIG: NO_UPDATES_CONFIG, TARSIER_API_PORT: '0', TARSIER_HEALTH_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    whenDone(() => void (child.exitCode === null && child.kill('SIGKILL')));
    const logs: Array<Record<string, unknown>> = [];
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
      let buffer = '';
      child.stdout.on('data', (d: Buffer) => {
        buffer += d.toString();
        let newline: number;
        while ((newline = buffer.indexOf('\n')) >= 0) {
          const entry = JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>;
          buffer = buffer.slice(newline + 1);
          logs.push(entry);
          if (entry.msg === 'tarsier listening') resolve(entry);
        }
      });
      void exited.then((code) => reject(new Error(`tarsier exited (${code}): ${stderr}`)));
    });
    expect((await fetch(`http://127.0.0.1:${listening.healthPort as number}/health`)).status).toBe(200);
    // Where it put things, said in the log.
    const started = logs.find((l) => l.msg === 'embedded postgres started')!;
    expect(started.dataDir).toBe(dataDir);
    expect(String(started.binaries).startsWith(`${RUNTIME_DIR}/postgresql-`)).toBe(true);
    const moved = logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('embedded postgres data kept where user '));
    expect(moved?.instead).toBe(join(checkout, 'data', 'postgres'));
    expect(existsSync(join(checkout, 'data'))).toBe(false);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 120_000);
});
