import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/store/embedded.js';

/** Benchmarks run real processes on a fresh database: DATABASE_URL's server, or an embedded one. */
export const CACHE_DIR = fileURLToPath(new URL('./.cache/', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/src/cli.js', import.meta.url));

export interface BenchDatabase {
  url: string;
  close(): Promise<void>;
}

function urlOf(conn: pg.PoolConfig, database: string): string {
  if (conn.connectionString) {
    const url = new URL(conn.connectionString);
    url.pathname = `/${database}`;
    return url.toString();
  }
  return `postgres://${conn.user}:${encodeURIComponent(String(conn.password))}@${conn.host}:${conn.port}/${database}`;
}

/** The server benchmarks create their databases on: DATABASE_URL's, or an embedded one started here. */
async function benchServer(env: Record<string, string | undefined>): Promise<{ admin: pg.PoolConfig; embedded?: EmbeddedPostgres }> {
  if (env.DATABASE_URL) return { admin: { connectionString: env.DATABASE_URL } };
  await mkdir(CACHE_DIR, { recursive: true });
  const embedded = await startEmbeddedPostgres({ dataDir: `${CACHE_DIR}pg`, log: pino({ level: 'warn' }) });
  return { admin: embedded.adminConnection, embedded };
}

export async function benchDatabase(env: Record<string, string | undefined>): Promise<BenchDatabase> {
  const { admin, embedded } = await benchServer(env);
  const name = `tarsier_bench_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client(admin);
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  return {
    url: urlOf(admin, name),
    async close() {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
      await embedded?.stop();
    },
  };
}

export interface KeptDatabase extends BenchDatabase {
  /** Drops the database and creates it again, empty. */
  recreate(): Promise<void>;
}

/**
 * A database of this name, created when missing and kept when closed: for data that takes long to
 * seed, used again by the next run.
 */
export async function keptBenchDatabase(env: Record<string, string | undefined>, name: string): Promise<KeptDatabase> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`${name} is not a plain database name`);
  const { admin, embedded } = await benchServer(env);
  const client = new pg.Client(admin);
  await client.connect();
  const create = async () => {
    const exists = (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount;
    if (!exists) await client.query(`CREATE DATABASE ${name}`);
  };
  await create();
  return {
    url: urlOf(admin, name),
    async recreate() {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await create();
    },
    async close() {
      await client.end();
      await embedded?.stop();
    },
  };
}

export interface BenchServer {
  apiPort: number;
  pid: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the built server (npm run build first) with a YAML config and waits until it listens. */
export async function startBenchServer(databaseUrl: string, yaml: string): Promise<BenchServer> {
  await mkdir(CACHE_DIR, { recursive: true });
  const config = `${CACHE_DIR}config-${process.pid}.yaml`;
  await writeFile(config, `clair:\n${yaml}\n`);
  const child = spawn(process.execPath, [CLI, 'serve', '--config', config], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, TARSIER_API_PORT: '0', TARSIER_HEALTH_PORT: '0', TARSIER_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The port comes from the "tarsier listening" log line; later lines are read and dropped.
  const apiPort = await new Promise<number>((resolve, reject) => {
    let buffer = '';
    let found = false;
    child.stdout!.on('data', (d: Buffer) => {
      if (found) return;
      buffer += d.toString();
      const match = /"apiPort":(\d+)/.exec(buffer);
      if (match) {
        found = true;
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${buffer}`)));
  });
  return {
    apiPort,
    pid: child.pid!,
    child,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resident set size of a process now and at its peak, in MiB (Linux /proc). */
export async function memoryOf(pid: number): Promise<{ rssMiB: number; peakMiB: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

/** Resets a process's peak RSS counter (VmHWM), so the next reading is the peak of what follows. */
export async function resetPeakMemory(pid: number): Promise<void> {
  await writeFile(`/proc/${pid}/clear_refs`, '5');
}

/** Brings a database to the current schema with the project's own migration runner (`tarsier migrate`, the built CLI). */
export async function migrateDatabase(databaseUrl: string): Promise<void> {
  await mkdir(CACHE_DIR, { recursive: true });
  const config = `${CACHE_DIR}migrate-${process.pid}.yaml`;
  await writeFile(config, 'clair:\n  updater:\n    interval: 0\n');
  const result = spawnSync(process.execPath, [CLI, 'migrate', '--config', config], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, TARSIER_LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`tarsier migrate failed (${result.status}): ${result.stderr}${result.stdout}`);
}
