import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VERSION_FORMATS } from '../src/ecosystems/index.js';
import { freshDatabase } from './helpers/db.js';
import { relayedDatabase } from './helpers/relay.js';
import { connectionDescriptors, databaseUrl, listeningAddresses, runTarsier, startTarsier } from './helpers/process.js';
import { whenDone } from './helpers/when-done.js';

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-server-'));
  // mkdtemp makes it private; the embedded PostgreSQL runs as another user and must reach into it.
  await chmod(dir, 0o755);
  whenDone(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function postmasterPid(dataDir: string): number | undefined {
  const file = join(dataDir, 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('tarsier serve', () => {
  it('serves the API and health ports on a configured database and stops cleanly on SIGTERM', async () => {
    const url = databaseUrl(await freshDatabase());
    // The migrations record every format's matches as computed by revision 1: the formats whose
    // comparator has changed since have theirs computed again at start-up.
    const recomputed: string[] = [];
    let allRecomputed: () => void = () => undefined;
    const rematched = new Promise<void>((resolve) => (allRecomputed = resolve));
    const outdated = VERSION_FORMATS.filter((f) => f.revision !== 1).map((f) => f.name);
    const server = await startTarsier({ DATABASE_URL: url }, ['serve'], {
      onLog: (entry) => {
        if (entry.msg === 'matches recomputed') recomputed.push(entry.format as string);
        if (recomputed.length === outdated.length) allRecomputed();
      },
    });
    expect(await get(server.apiPort, '/v1/namespaces')).toEqual({ status: 200, body: '{"Namespaces":[]}' });
    expect(await get(server.healthPort, '/health')).toEqual({ status: 200, body: '{"status":"ok"}' });
    await rematched;
    expect(recomputed.sort()).toEqual(outdated.sort());
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.logs.map((l) => l.msg)).toContain('tarsier stopped');
  });

  it('waits at start-up for a database that is not reachable yet', async () => {
    const relay = await relayedDatabase(await freshDatabase(), { down: true });
    // The database comes up once the server has said it is waiting for it (no fixed sleep).
    const server = await startTarsier({ DATABASE_URL: databaseUrl(relay.connection) }, ['serve'], {
      onLog: (entry) => entry.msg === 'database not reachable yet; waiting' && relay.restore(),
    });
    expect(server.logs.map((l) => l.msg)).toContain('database not reachable yet; waiting');
    expect(await get(server.healthPort, '/health')).toEqual({ status: 200, body: '{"status":"ok"}' });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('takes its settings from a Clair config file given by TARSIER_CONFIG', async () => {
    const url = databaseUrl(await freshDatabase());
    const dir = await tempDir();
    const file = join(dir, 'config.yaml');
    await writeFile(
      file,
      `clair:\n  database:\n    type: pgsql\n    options:\n      source: ${url}\n  api:\n    port: 0\n    healthport: 0\n    v1revision: A\n  updater:\n    interval: 0\n`,
    );
    const server = await startTarsier({ TARSIER_CONFIG: file, TARSIER_API_PORT: '', TARSIER_HEALTH_PORT: '' });
    await fetch(`http://127.0.0.1:${server.apiPort}/v1/namespaces/debian%3A12/vulnerabilities`, {
      method: 'POST',
      body: JSON.stringify({ Vulnerability: { Name: 'CVE-1', Severity: 'Low' } }),
    });
    expect(await get(server.apiPort, '/v1/namespaces')).toEqual({ status: 200, body: '{"Namespaces":["debian:12"]}' });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('starts an embedded PostgreSQL when no database is configured, survives being killed, and stops it on exit', async () => {
    const dataDir = join(await tempDir(), 'postgres');
    const first = await startTarsier({ TARSIER_DATA_DIR: dataDir });
    expect((await get(first.healthPort, '/health')).status).toBe(200);
    await fetch(`http://127.0.0.1:${first.apiPort}/v1/namespaces/alpine%3Av3.19/vulnerabilities`, {
      method: 'POST',
      body: JSON.stringify({ Vulnerability: { Name: 'CVE-2', Severity: 'High' } }),
    });
    // SIGKILL leaves the embedded postmaster running: the next start must deal with it.
    first.child.kill('SIGKILL');
    await first.exited;
    const stale = postmasterPid(dataDir);
    expect(stale !== undefined && alive(stale)).toBe(true);

    const second = await startTarsier({ TARSIER_DATA_DIR: dataDir });
    expect(second.logs.map((l) => l.msg)).toContain('stopping stale embedded postgres left by an earlier run');
    expect(alive(stale!)).toBe(false);
    // Data written before the kill is still there.
    expect(await get(second.apiPort, '/v1/namespaces')).toEqual({
      status: 200,
      body: '{"Namespaces":[{"Name":"alpine:v3.19","VersionFormat":"apk"}]}',
    });
    const running = postmasterPid(dataDir)!;
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(alive(running)).toBe(false);
  }, 60_000);

  it('refuses a second process on the same embedded data directory', async () => {
    const dataDir = join(await tempDir(), 'postgres');
    const first = await startTarsier({ TARSIER_DATA_DIR: dataDir });
    await expect(startTarsier({ TARSIER_DATA_DIR: dataDir })).rejects.toThrow(/is in use by Tarsier process/);
    expect((await get(first.healthPort, '/health')).status).toBe(200);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  }, 60_000);

  it('stops at start-up with a message that names a bad configuration key', async () => {
    const dir = await tempDir();
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'clair:\n  api:\n    port: sixty\n');
    const result = await runTarsier({}, ['serve', '--config', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^tarsier: invalid configuration: clair\.api\.port: /);
  });
});

/** A port of 127.0.0.1 something else listens on. */
async function takenPort(): Promise<number> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  whenDone(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  return (holder.address() as net.AddressInfo).port;
}

/** A config file of the given lines under clair: (the updater timer off). */
async function configFile(lines: string[]): Promise<string> {
  const file = join(await tempDir(), 'config.yaml');
  await writeFile(file, ['clair:', ...lines, '  updater:', '    interval: 0', ''].join('\n'));
  return file;
}

const OPEN_API_WARNING = 'API listening beyond loopback without authentication';

describe('tarsier serve: a promise rejection nothing handles', () => {
  it('is logged with its stack and counted, and the server goes on serving', async () => {
    // Something inside the server that rejects with no handler: a module loaded before the server
    // that, on SIGUSR2, leaves a rejected promise behind.
    const defect = join(await tempDir(), 'defect.mjs');
    await writeFile(defect, "process.on('SIGUSR2', () => { Promise.reject(new Error('a defect nobody handled')); });\n");
    let logged!: (entry: Record<string, unknown>) => void;
    const rejection = new Promise<Record<string, unknown>>((resolve) => (logged = resolve));
    const server = await startTarsier({ DATABASE_URL: databaseUrl(await freshDatabase()), NODE_OPTIONS: `--import ${defect}` }, ['serve'], {
      onLog: (entry) => {
        if (entry.msg === 'unhandled promise rejection') logged(entry);
      },
    });
    server.child.kill('SIGUSR2');
    const entry = await Promise.race([
      rejection,
      server.exited.then((code) => Promise.reject(new Error(`tarsier exited (${code}) on the rejection`))),
    ]);
    expect(entry.level).toBe(50);
    expect((entry.err as { message: string; stack: string }).message).toBe('a defect nobody handled');
    expect((entry.err as { stack: string }).stack).toContain('defect.mjs');

    expect(server.child.exitCode).toBeNull();
    expect(await get(server.apiPort, '/v1/namespaces')).toEqual({ status: 200, body: '{"Namespaces":[]}' });
    const metrics = await get(server.apiPort, '/metrics');
    expect(metrics.body).toMatch(/^tarsier_unhandled_rejections_total 1$/m);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});

describe('tarsier serve: where it listens, and a start that fails', () => {
  it('exits 1 at once when its API port is taken, and stops the embedded PostgreSQL it had started', async () => {
    const dataDir = join(await tempDir(), 'postgres');
    const server = await startTarsier({ TARSIER_DATA_DIR: dataDir, TARSIER_API_PORT: String(await takenPort()) }, ['serve'], {
      waitFor: null,
    });
    expect(await server.exited).toBe(1);
    const messages = server.logs.map((l) => l.msg);
    expect(messages).toContain('embedded postgres started');
    const failed = server.logs.find((l) => l.msg === 'start-up failed') as { err?: { message?: string } } | undefined;
    expect(failed?.err?.message).toMatch(/EADDRINUSE/);
    const postmaster = postmasterPid(dataDir);
    expect(postmaster !== undefined && alive(postmaster)).toBe(false);
  }, 60_000);

  it('listens on 127.0.0.1 when no address is configured and the API needs no credential', async () => {
    const server = await startTarsier({ DATABASE_URL: databaseUrl(await freshDatabase()) });
    expect(listeningAddresses(server.apiPort)).toEqual(['127.0.0.1']);
    expect(listeningAddresses(server.healthPort)).toEqual(['127.0.0.1']);
    expect(server.logs.map((l) => l.msg)).not.toContain(OPEN_API_WARNING);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('listens where TARSIER_API_ADDR says, and warns when that is beyond loopback and the API needs no credential', async () => {
    const url = databaseUrl(await freshDatabase());
    const open = await startTarsier({ DATABASE_URL: url, TARSIER_API_ADDR: '0.0.0.0' });
    expect(listeningAddresses(open.apiPort)).toEqual(['0.0.0.0']);
    expect(listeningAddresses(open.healthPort)).toEqual(['127.0.0.1']);
    expect(open.logs.filter((l) => l.msg === OPEN_API_WARNING)).toEqual([
      expect.objectContaining({ level: 40, host: '0.0.0.0', port: open.apiPort }),
    ]);
    open.child.kill('SIGTERM');
    expect(await open.exited).toBe(0);

    // With a credential required, every interface is the default and nothing is worth a warning.
    const file = await configFile([
      '  database:',
      '    options:',
      `      source: "${url}"`,
      '  api:',
      '    auth:',
      '      tokens: [t0ken]',
    ]);
    const guarded = await startTarsier({ TARSIER_CONFIG: file });
    expect(listeningAddresses(guarded.apiPort)).toEqual(['0.0.0.0']);
    expect(guarded.logs.map((l) => l.msg)).not.toContain(OPEN_API_WARNING);
    guarded.child.kill('SIGTERM');
    expect(await guarded.exited).toBe(0);
  });
});

/** The HTTP/2 client connection preface: the magic, then an empty SETTINGS frame. */
const H2_MAGIC = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const H2_PREFACE = Buffer.concat([H2_MAGIC, Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);

/** Clients that send part of the HTTP/2 preface, all of it, or it and its SETTINGS, and then nothing; closed: the server has let each go. */
async function stalledHttp2Clients(port: number, each: number): Promise<{ sockets: net.Socket[]; closed: Promise<unknown> }> {
  const sockets: net.Socket[] = [];
  const closes: Array<Promise<void>> = [];
  for (const bytes of [H2_MAGIC.subarray(0, 10), H2_MAGIC, H2_PREFACE]) {
    for (let i = 0; i < each; i++) {
      const socket = net.connect(port, '127.0.0.1');
      // Read what the server sends, or the client would never see the server close the connection.
      socket.on('error', () => undefined).resume();
      closes.push(new Promise((resolve) => socket.on('close', () => resolve())));
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      socket.write(bytes);
      sockets.push(socket);
    }
  }
  return { sockets, closed: Promise.all(closes) };
}

/** Waits until process pid holds count connections accepted on port. */
async function untilConnections(pid: number, port: number, count: number): Promise<void> {
  while (connectionDescriptors(pid, port) !== count) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('tarsier serve: HTTP/2 clients that stall', () => {
  it('frees the descriptors of clients that leave at once, and stops at once on SIGTERM while others stall', async () => {
    const url = databaseUrl(await freshDatabase());
    // Deadlines and the gRPC grace period far beyond the test's time: only letting go at once passes.
    const file = await configFile([
      '  database:',
      '    options:',
      `      source: "${url}"`,
      '  api:',
      '    headertimeout: 10m',
      '    idletimeout: 10m',
    ]);
    const server = await startTarsier({ TARSIER_CONFIG: file });
    const pid = server.child.pid!;
    const leaving = await stalledHttp2Clients(server.apiPort, 10);
    await untilConnections(pid, server.apiPort, 30);
    for (const socket of leaving.sockets) socket.end();
    await leaving.closed;
    await untilConnections(pid, server.apiPort, 0);

    const staying = await stalledHttp2Clients(server.apiPort, 10);
    await untilConnections(pid, server.apiPort, 30);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    await staying.closed;
  }, 20_000);
});

describe('tarsier migrate', () => {
  it('applies the migrations to an empty database and exits', async () => {
    const conn = await freshDatabase();
    const url = databaseUrl(conn);
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: url });
    await client.connect();
    await client.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    const result = await runTarsier({ DATABASE_URL: url, TARSIER_LOG_LEVEL: 'info' }, ['migrate']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('"migration":"0001_init.sql"');
    const { rows } = await client.query('SELECT count(*)::int AS n FROM schema_migrations');
    expect(rows[0].n).toBeGreaterThan(0);
    await client.end();
  });
});
