#!/usr/bin/env node
/**
 * tarsier serve | migrate | update | export | import | scan. The process environment is read here and handed to loadConfig; no other
 * module reads process.env.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import type { Config } from './config.js';

// Each command loads what it runs (below, with import()): a process that only re-runs itself with
// a bounded heap, or prints help, loads none of it, and `scan` loads neither the configuration
// reader nor the logger unless it scans standalone. Loading the server and the updaters twice was
// most of the time of an update that finds every feed unchanged; the configuration reader and the
// logger alone were a third of the start-up of `tarsier scan`.
const server = () => import('./server.js');
const updaters = async () => ({ ...(await import('./updater/runner.js')), ...(await import('./updater/sources.js')) });
const createLogger = async (...args: Parameters<typeof import('./logger.js').createLogger>) =>
  (await import('./logger.js')).createLogger(...args);
const runnerSettings = async (config: Config) => (await import('./settings.js')).runnerSettings(config);

/**
 * Feed imports allocate far more short-lived garbage than they keep (a full Debian import keeps
 * ~150 MiB live), and with V8's default heap limit on a large machine the process grows to several
 * times its live data before collecting. `update` and `import` therefore run with a bounded heap,
 * unless the operator chose a limit (NODE_OPTIONS or node flags).
 */
const IMPORT_HEAP_MIB = 448;

/** Set in the re-run process: the PID of the process that started it. */
const PARENT_ENV = 'TARSIER_PARENT_PID';
/** How often a re-run process checks that the process that started it is still there. */
const ORPHAN_CHECK_MS = 500;

/**
 * Re-runs update/import with the bounded heap. Signals to this process reach the re-run one; if
 * this process is killed outright (SIGKILL), the re-run one sees it is orphaned and exits, so it
 * neither runs on unseen nor keeps holding the source's lease.
 */
function runWithBoundedHeap(): boolean {
  const parent = process.env[PARENT_ENV];
  if (parent !== undefined) {
    setInterval(() => {
      if (String(process.ppid) !== parent) process.exit(1);
    }, ORPHAN_CHECK_MS).unref();
    return false;
  }
  const command = process.argv[2];
  if (command !== 'update' && command !== 'import') return false;
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  if (flags.some((f) => f.startsWith('--max-old-space-size'))) return false;
  const child = spawn(process.execPath, [...process.execArgv, `--max-old-space-size=${IMPORT_HEAP_MIB}`, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, [PARENT_ENV]: String(process.pid) },
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal));
  child.once('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  return true;
}

const reRun = runWithBoundedHeap();

async function configFrom(options: { config?: string }): Promise<Config> {
  const { ConfigError, loadConfig } = await import('./config.js');
  try {
    return loadConfig({ file: options.config, env: process.env });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tarsier: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

const program = new Command()
  .name('tarsier')
  .description('Container-image vulnerability scanner with Clair-compatible APIs')
  .showHelpAfterError();

program
  .command('serve', { isDefault: true })
  .description('run the API server (default command)')
  .option('-c, --config <file>', 'YAML configuration file (Clair v2/v3 config.yaml accepted); also TARSIER_CONFIG')
  .action(async (options: { config?: string }) => {
    const config = await configFrom(options);
    const log = await createLogger(config.log.level);
    try {
      const { startServer, stopOnSignals } = await server();
      stopOnSignals(await startServer(config, log), log);
    } catch (err) {
      // startServer has undone what it started (the embedded database too); a supervisor needs the exit.
      log.fatal({ err }, 'start-up failed');
      process.exit(1);
    }
  });

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .option('-c, --config <file>', 'YAML configuration file; also TARSIER_CONFIG')
  .action(async (options: { config?: string }) => {
    const config = await configFrom(options);
    const log = await createLogger(config.log.level);
    try {
      const database = await (await import('./database.js')).openDatabase(config, log);
      await database.close();
    } catch (err) {
      log.fatal({ err }, 'migration failed');
      process.exitCode = 1;
    }
  });

program
  .command('update')
  .description('run the vulnerability updaters once, print a summary per source, and exit (1 if a source failed)')
  .option('-c, --config <file>', 'YAML configuration file; also TARSIER_CONFIG')
  .option('-s, --source <name>', 'run only this source (any of them, enabled or not)')
  .action(async (options: { config?: string; source?: string }) => {
    const config = await configFrom(options);
    // The summary goes to stdout; logs go to stderr.
    const log = await createLogger(config.log.level, 2);
    const { enabledSources, formatSummary, SOURCES, UpdaterRunner } = await updaters();
    let sources = enabledSources(config.updater.enabledUpdaters);
    if (options.source !== undefined) {
      const named = SOURCES.find((s) => s.name === options.source);
      if (!named) {
        process.stderr.write(`tarsier: unknown source ${options.source}; sources: ${SOURCES.map((s) => s.name).join(', ')}\n`);
        process.exit(2);
      }
      sources = [named];
    }
    const database = await (await import('./database.js')).openDatabase(config, log);
    try {
      const runner = new UpdaterRunner({ pool: database.pool, settings: await runnerSettings(config), log });
      const summaries = [];
      for (const source of sources) summaries.push(await runner.run(source));
      process.stdout.write(formatSummary(summaries));
      if (summaries.some((s) => s.status === 'failed' || s.status === 'busy')) process.exitCode = 1;
    } finally {
      await database.close();
    }
  });

program
  .command('export')
  .description("write every source's vulnerability data to an offline bundle FILE (gzip JSON lines), for tarsier import elsewhere")
  .argument('<file>', 'bundle to write')
  .option('-c, --config <file>', 'YAML configuration file; also TARSIER_CONFIG')
  .action(async (file: string, options: { config?: string }) => {
    const config = await configFrom(options);
    const log = await createLogger(config.log.level, 2);
    const { SOURCES } = await updaters();
    const { exportBundle } = await import('./updater/bundle.js');
    const database = await (await import('./database.js')).openDatabase(config, log);
    try {
      await exportBundle(database.pool, SOURCES, file);
      process.stdout.write(`exported to ${file}\n`);
    } finally {
      await database.close();
    }
  });

program
  .command('import')
  .description(
    "load vulnerability data offline: a bundle written by tarsier export, or with --source, that source's native files (a file, or a directory laid out as upstream)",
  )
  .argument('<path>', 'bundle file, or native file or directory with --source')
  .option('-c, --config <file>', 'YAML configuration file; also TARSIER_CONFIG')
  .option('-s, --source <name>', "read <path> as this source's native data")
  .action(async (path: string, options: { config?: string; source?: string }) => {
    const config = await configFrom(options);
    const log = await createLogger(config.log.level, 2);
    const { formatSummary, SOURCES, UpdaterRunner } = await updaters();
    const { importBundle } = await import('./updater/bundle.js');
    const database = await (await import('./database.js')).openDatabase(config, log);
    try {
      const runner = new UpdaterRunner({ pool: database.pool, settings: await runnerSettings(config), log });
      let summaries;
      if (options.source !== undefined) {
        const source = SOURCES.find((s) => s.name === options.source);
        if (!source) {
          process.stderr.write(`tarsier: unknown source ${options.source}; sources: ${SOURCES.map((s) => s.name).join(', ')}\n`);
          process.exit(2);
        }
        summaries = [await runner.run(source, { base: pathToFileURL(resolve(path)).toString() })];
      } else {
        summaries = await importBundle(runner, SOURCES, path);
      }
      process.stdout.write(formatSummary(summaries));
      if (summaries.some((s) => s.status === 'failed' || s.status === 'busy')) process.exitCode = 1;
    } finally {
      await database.close();
    }
  });

program
  .command('scan')
  .description(
    'scan an image — a docker save archive, an OCI layout (directory or tar) or a registry reference — against a server ' +
      '(--server) or standalone, write a report, and exit 0 (clean), 1 (--fail-on or --fail-on-kev matched) or 2 (could not scan)',
  )
  .argument('<target>', 'image.tar, oci-dir, docker://registry/repo:tag or registry/repo:tag')
  .option('--server <url>', 'Tarsier server to scan with (also TARSIER_URL); without one, scan standalone')
  .option('--token <token>', "the server's API token (also TARSIER_TOKEN)")
  .option('--platform <os/arch[/variant]>', "which image of a multi-platform image (default: this machine's, else linux/amd64)")
  .option('-f, --format <format>', 'table, json, sarif or cyclonedx', 'table')
  .option('-o, --output <file>', 'write the report here instead of stdout')
  .option('--fail-on <severity>', 'exit 1 when a vulnerability at least this severe remains (Low, Medium, High, Critical)')
  .option('--fail-on-kev', "exit 1 when a vulnerability in CISA's Known Exploited Vulnerabilities catalog remains")
  .option('--ignore-unfixed', 'leave out vulnerabilities that have no fix yet', false)
  .option('--ignore <file>', 'YAML list of {id, package?, expires?, reason?} to leave out')
  .option('-q, --quiet', 'no progress or data age on stderr', false)
  .option('--registry-user <user>', 'registry user for a registry image (also TARSIER_REGISTRY_USER; default: docker login credentials)')
  .option(
    '--registry-password <password>',
    'registry password for a registry image (also TARSIER_REGISTRY_PASSWORD, kept out of the process list)',
  )
  .option('--insecure', 'pull a registry image over plain HTTP', false)
  .option('--db <file>', 'standalone: load vulnerability data from a bundle written by tarsier export')
  .option('--update', 'standalone: download the vulnerability feeds first', false)
  .option(
    '--max-data-age <duration>',
    'exit 2 when the vulnerability data of a namespace the image uses is older than this (default 120h; 0: any age)',
  )
  .option(
    '--allow-missing-data',
    'scan even when a namespace of the image has no vulnerability data or data too old (a warning instead of exit 2)',
    false,
  )
  .option('--cache-dir <dir>', 'standalone: where the local store lives (also TARSIER_CACHE_DIR; default ~/.cache/tarsier)')
  .option('-c, --config <file>', 'standalone: YAML configuration (feeds, registries, a database); also TARSIER_CONFIG')
  // A pipeline tells "could not scan" (2) from "vulnerabilities found" (1): a mistyped option is the former.
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
  .action(async (target: string, options: import('./scanner/command.js').ScanOptions) => {
    const { runScan } = await import('./scanner/command.js');
    const abort = new AbortController();
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => abort.abort());
    process.exitCode = await runScan(target, options, {
      env: process.env,
      stdout: process.stdout,
      stderr: process.stderr,
      signal: abort.signal,
    });
  });

// The re-run process does the command; this one only waits for it.
if (!reRun) {
  try {
    await program.parseAsync(process.argv);
  } catch (err) {
    // A command that cannot go on says why in one line; the stack is for the log.
    process.stderr.write(`tarsier: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
