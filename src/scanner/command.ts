import { stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { TarsierError } from '../errors.js';
import { parseDuration } from '../duration.js';
import { dataProblems, imageData } from '../model/coverage.js';
import { parseSeverity, SEVERITIES, type Severity } from '../model/vulnerability.js';
import { parsePlatform, type Platform } from '../registry/manifest.js';
import { InvalidReference, parseImageReference } from '../registry/reference.js';
import { ScanError, type LocalSbom, type Progress, type ScanBackend, type ScannedContents } from './backend.js';
import { basicAuthorization, dockerCredentials } from './docker-credentials.js';
import { buildReport } from './findings.js';
import { formatReport, OUTPUT_FORMATS, type OutputFormat } from './formats/index.js';
import { readIgnoreFile, type IgnoreEntry } from './ignore.js';
import { ImageArchiveError, openImageFiles } from './image-files.js';
import { readLocalImage, type LocalImageKind } from './local-image.js';
import { silentProgress, terminalProgress } from './progress.js';
import { readSbomFile } from './sbom-file.js';
import type { ScanReport } from './report.js';

/**
 * `tarsier scan TARGET`: the image (a docker save archive, an OCI layout or archive, or a registry
 * reference), or the packages an SBOM file lists (CycloneDX or SPDX JSON), scanned against a server or in this process, the report written in the chosen format,
 * and the exit code: 0 clean, 1 the gate failed (--fail-on, --fail-on-kev), 2 the scan could not be done.
 */

export const EXIT_CLEAN = 0;
export const EXIT_GATE_FAILED = 1;
export const EXIT_CANNOT_SCAN = 2;

export interface ScanOptions {
  server?: string;
  token?: string;
  platform?: string;
  format: string;
  output?: string;
  failOn?: string;
  failOnKev?: boolean;
  ignoreUnfixed: boolean;
  ignore?: string;
  quiet: boolean;
  registryUser?: string;
  registryPassword?: string;
  insecure: boolean;
  db?: string;
  update: boolean;
  cacheDir?: string;
  config?: string;
  /** Data older than this (a duration, e.g. 120h; 0: any age) cannot be relied on. */
  maxDataAge?: string;
  /** Scan even where data is missing or stale, with a warning. */
  allowMissingData?: boolean;
}

/** As Grype: vulnerability data older than five days is not relied on. */
export const DEFAULT_MAX_DATA_AGE = '120h';

export interface ScanIo {
  env: Readonly<Record<string, string | undefined>>;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WriteStream;
  signal: AbortSignal;
  now?: () => Date;
}

/** What the TARGET names: a local image (path), an SBOM file, or a registry image (reference). */
type Target = { kind: 'local'; path: string } | { kind: 'sbom'; sbom: LocalSbom } | { kind: 'registry'; reference: string };

/** Prefixes skopeo and containers/image use for the same things (docker-archive:file.tar, oci:dir). */
const LOCAL_PREFIXES = ['docker-archive:', 'oci-archive:', 'oci:'];

async function resolveTarget(target: string): Promise<Target> {
  if (target.startsWith('docker://')) return { kind: 'registry', reference: target.slice('docker://'.length) };
  const prefix = LOCAL_PREFIXES.find((p) => target.startsWith(p));
  if (prefix) return { kind: 'local', path: target.slice(prefix.length) };
  const found = await stat(target).catch(() => undefined);
  if (found?.isFile()) {
    const sbom = await readSbomFile(target);
    if (sbom) return { kind: 'sbom', sbom };
  }
  if (found) return { kind: 'local', path: target };
  // A file name that is missing must not turn into a registry pull of docker.io/library/image.tar.
  if (/\.(?:tar|tgz|txz|tbz2?|tar\.(?:gz|zst|zstd|xz|bz2))$/i.test(target) || /^\.{0,2}\//.test(target))
    throw new ScanError(`${target} does not exist`);
  return { kind: 'registry', reference: target };
}

function checkedOptions(options: ScanOptions): {
  format: OutputFormat;
  failOn: Severity | undefined;
  platform: Platform | undefined;
  maxDataAgeMs: number;
} {
  const format = OUTPUT_FORMATS.find((f) => f === options.format);
  if (!format) throw new ScanError(`--format ${options.format} is not one of ${OUTPUT_FORMATS.join(', ')}`);
  let failOn: Severity | undefined;
  if (options.failOn !== undefined) {
    failOn = parseSeverity(options.failOn);
    if (!failOn) throw new ScanError(`--fail-on ${options.failOn} is not a severity (${SEVERITIES.join(', ')})`);
  }
  let platform: Platform | undefined;
  if (options.platform !== undefined) {
    try {
      platform = parsePlatform(options.platform);
    } catch (err) {
      throw new ScanError(`--platform: ${(err as Error).message}`);
    }
  }
  let maxDataAgeMs: number;
  try {
    maxDataAgeMs = parseDuration(options.maxDataAge ?? DEFAULT_MAX_DATA_AGE);
  } catch (err) {
    throw new ScanError(`--max-data-age: ${(err as Error).message}`);
  }
  if (maxDataAgeMs < 0) throw new ScanError('--max-data-age: a duration of 0 or more (0: any age)');
  return { format, failOn, platform, maxDataAgeMs };
}

/** The cache directory: --cache-dir, $TARSIER_CACHE_DIR, $XDG_CACHE_HOME/tarsier, else ~/.cache/tarsier. */
function cacheDirOf(options: ScanOptions, env: ScanIo['env']): { dir: string; chosen: boolean } {
  const chosen = options.cacheDir || env.TARSIER_CACHE_DIR;
  if (chosen) return { dir: chosen, chosen: true };
  return { dir: join(env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache'), 'tarsier'), chosen: false };
}

/**
 * The standalone store's configuration: the configuration file's (--config, TARSIER_CONFIG) when
 * it names a database, else the embedded PostgreSQL under the cache directory. DATABASE_URL and
 * TARSIER_DATA_DIR are a server's settings and do not redirect a scan.
 */
async function standaloneConfig(options: ScanOptions, env: ScanIo['env']): Promise<Config> {
  const { ConfigError, loadConfig } = await import('../config.js');
  const { DATABASE_URL: _url, TARSIER_DATA_DIR: _dir, ...rest } = env;
  let config: Config;
  try {
    config = loadConfig({ file: options.config, env: rest });
  } catch (err) {
    if (err instanceof ConfigError) throw new ScanError(`invalid configuration: ${err.message}`);
    throw err;
  }
  if (config.database.connection) return config;
  const cache = cacheDirOf(options, env);
  return { ...config, database: { ...config.database, dataDir: join(cache.dir, 'postgres'), dataDirIsDefault: !cache.chosen } };
}

/**
 * The registry Authorization for a pull: --registry-user/--registry-password (or TARSIER_REGISTRY_USER
 * and TARSIER_REGISTRY_PASSWORD, which keep the password out of the process list), else docker's stored login.
 */
async function registryAuthorization(reference: string, options: ScanOptions, env: ScanIo['env']): Promise<string | undefined> {
  const user = options.registryUser ?? (env.TARSIER_REGISTRY_USER || undefined);
  const password = options.registryPassword ?? (env.TARSIER_REGISTRY_PASSWORD || undefined);
  if ((user === undefined) !== (password === undefined)) {
    throw new ScanError(
      'a registry user and password go together (--registry-user/--registry-password or TARSIER_REGISTRY_USER/TARSIER_REGISTRY_PASSWORD)',
    );
  }
  if (user !== undefined) return basicAuthorization(user, password!);
  let registry: string;
  try {
    registry = parseImageReference(reference).registry;
  } catch (err) {
    if (err instanceof InvalidReference) throw new ScanError(err.message);
    throw err;
  }
  return dockerCredentials(registry, env);
}

/** Runs the scan; returns the exit code. Messages for the user go to stderr, the report to stdout or --output. */
export async function runScan(input: string, options: ScanOptions, io: ScanIo): Promise<number> {
  try {
    return await scan(input, options, io);
  } catch (err) {
    if (io.signal.aborted) {
      io.stderr.write('tarsier scan: interrupted\n');
      return EXIT_CANNOT_SCAN;
    }
    // A registry's refusal is a TarsierError too (RegistryError).
    const known = err instanceof ScanError || err instanceof TarsierError || err instanceof ImageArchiveError;
    io.stderr.write(`tarsier scan: ${known ? err.message : `could not scan: ${(err as Error).message}`}\n`);
    return EXIT_CANNOT_SCAN;
  }
}

async function scan(input: string, options: ScanOptions, io: ScanIo): Promise<number> {
  const { format, failOn, platform, maxDataAgeMs } = checkedOptions(options);
  const allowMissingData = options.allowMissingData === true;
  const ignore: IgnoreEntry[] = options.ignore !== undefined ? await readIgnoreFile(options.ignore) : [];
  const target = await resolveTarget(input);
  const server = options.server || io.env.TARSIER_URL || undefined;
  const token = options.token || io.env.TARSIER_TOKEN || undefined;
  const progressTo = !options.quiet && io.stderr.isTTY ? io.stderr : undefined;
  const progress: Progress = progressTo ? terminalProgress(progressTo, server ? 'sending' : 'reading') : silentProgress;

  // Each backend is loaded by the scan that uses it: the server's HTTP client, or the store, the
  // indexer and the configuration reader of a standalone scan.
  let backend: ScanBackend;
  if (server) {
    if (options.db !== undefined || options.update)
      throw new ScanError('--db and --update are for standalone scans; the server keeps its own data');
    const { ServerBackend } = await import('./remote.js');
    backend = new ServerBackend({ url: server, token });
  } else {
    const [{ StandaloneBackend }, { createLogger }] = await Promise.all([import('./standalone.js'), import('../logger.js')]);
    const log = createLogger('warn', 2);
    backend = await StandaloneBackend.open(
      await standaloneConfig(options, io.env),
      log,
      { bundle: options.db, update: options.update, allowMissingData },
      progress,
    );
  }
  try {
    let contents: ScannedContents;
    let kind: LocalImageKind | 'registry' | 'sbom';
    if (target.kind === 'sbom') {
      kind = 'sbom';
      contents = await backend.scanSbom(target.sbom, progress, io.signal);
      const skipped = contents.skipped ?? [];
      // Never dropped unseen: what the SBOM lists and the scan did not match is said, on stderr and in the report.
      if (skipped.length > 0) {
        const listed = skipped.map((s) => `  ${s.at}${s.name !== undefined ? ` (${s.name})` : ''}: ${s.why}`).join('\n');
        io.stderr.write(`tarsier scan: warning: ${skipped.length} of the SBOM's components were not matched:\n${listed}\n`);
      }
    } else if (target.kind === 'local') {
      const files = await openImageFiles(target.path);
      try {
        const image = await readLocalImage(files, platform);
        kind = image.kind;
        contents = await backend.scanLocal(image, progress, io.signal);
      } finally {
        await files.close();
      }
    } else {
      kind = 'registry';
      const authorization = await registryAuthorization(target.reference, options, io.env);
      contents = await backend.scanRegistry(
        { reference: target.reference, platform: options.platform, insecure: options.insecure, authorization },
        progress,
        io.signal,
      );
    }
    const unread = contents.unread;
    // Never a silent gap: a file that may hold packages and could not be read is said, on stderr and in the report.
    if (unread && unread.count > 0) {
      const listed = unread.files.slice(0, 20).map((f) => `  ${f.location}: ${f.why}`);
      if (unread.count > listed.length) listed.push(`  … and ${unread.count - listed.length} more (see --format json)`);
      io.stderr.write(
        `tarsier scan: warning: ${unread.count} file(s) of the image that may hold packages could not be read:\n${listed.join('\n')}\n`,
      );
    }
    const now = io.now?.() ?? new Date();
    const namespaces = checkedData(contents, now, maxDataAgeMs, options.maxDataAge ?? DEFAULT_MAX_DATA_AGE, allowMissingData, io);
    const report = buildReport(contents, {
      input,
      kind,
      database: { mode: backend.mode, ...(backend.server ? { server: backend.server } : {}), ...namespaces },
      ignoreUnfixed: options.ignoreUnfixed,
      ignore,
      failOn,
      failOnKev: options.failOnKev === true,
      now,
    });
    await writeReport(report, format, options, io);
    if (!options.quiet) for (const line of dataAgeLines(report.database.namespaces, now)) io.stderr.write(`${line}\n`);
    return report.gate.failed ? EXIT_GATE_FAILED : EXIT_CLEAN;
  } finally {
    await backend.close();
  }
}

async function writeReport(report: ScanReport, format: OutputFormat, options: ScanOptions, io: ScanIo): Promise<void> {
  // Colours only for a person reading a terminal, and never when NO_COLOR is set (no-color.org).
  const color = format === 'table' && options.output === undefined && io.stdout.isTTY === true && !io.env.NO_COLOR;
  const text = formatReport(report, format, { color });
  if (options.output !== undefined) await writeFile(options.output, text);
  else await new Promise<void>((resolve, reject) => io.stdout.write(text, (err) => (err ? reject(err) : resolve())));
}

/**
 * The data behind the answer, per namespace of the image: a namespace without data, or with data
 * older than --max-data-age, makes the scan unanswerable (exit 2, naming it) unless
 * --allow-missing-data, which only warns. A server that does not say what data it holds is the same.
 */
function checkedData(
  contents: ScannedContents,
  now: Date,
  maxAgeMs: number,
  maxAge: string,
  allowMissingData: boolean,
  io: ScanIo,
): Pick<ScanReport['database'], 'updatedAt' | 'namespaces'> {
  const advice = 'pass --allow-missing-data to scan anyway';
  if (contents.coverage === undefined) {
    const problem = 'the server does not say what vulnerability data it holds (it predates this scanner): upgrade it';
    if (!allowMissingData) throw new ScanError(`${problem}, or ${advice}`);
    io.stderr.write(`tarsier scan: warning: ${problem}; the findings may be incomplete\n`);
    return { updatedAt: null, namespaces: [] };
  }
  const data = imageData(contents.coverage, now, maxAgeMs);
  const problems = dataProblems(data, `--max-data-age ${maxAge}`);
  if (problems.length > 0) {
    const listed = problems.map((p) => `  ${p}`).join('\n');
    if (!allowMissingData) {
      throw new ScanError(
        `cannot tell whether the image is affected: the vulnerability data it needs is missing or too old\n${listed}\n` +
          `update the data (tarsier update, --update, --db), or ${advice}`,
      );
    }
    io.stderr.write(`tarsier scan: warning: the findings may be incomplete: the vulnerability data is missing or too old\n${listed}\n`);
  }
  const namespaces = data.namespaces.map((n) => ({
    namespace: n.namespace,
    state: n.state,
    updatedAt: n.updatedAt?.toISOString() ?? null,
    sources: n.sources.map((source) => source.name),
  }));
  // The oldest of them (ISO strings of one format order as their times), unknown when one is.
  const times = namespaces.map((n) => n.updatedAt);
  const updatedAt = times.length === 0 || times.includes(null) ? null : [...times].sort()[0]!;
  return { updatedAt, namespaces };
}

const HOUR_MS = 60 * 60 * 1000;

/** How old the data of each namespace is, in words, for stderr. */
export function dataAgeLines(namespaces: ScanReport['database']['namespaces'], now: Date): string[] {
  if (namespaces.length === 0) return ['vulnerability data: none needed (no package of a known distribution was found)'];
  return namespaces.map((n) => {
    if (n.updatedAt === null) return `vulnerability data for ${n.namespace}: ${n.sources.length === 0 ? 'none' : 'age not recorded'}`;
    const updatedAt = new Date(n.updatedAt);
    const hours = Math.max(0, (now.getTime() - updatedAt.getTime()) / HOUR_MS);
    const whole = Math.floor(hours);
    const age = hours < 1 ? 'less than an hour' : hours < 2 ? '1 hour' : hours < 48 ? `${whole} hours` : `${Math.floor(hours / 24)} days`;
    return `vulnerability data for ${n.namespace}: updated ${n.updatedAt} (${age} ago, from ${n.sources.join(', ')})`;
  });
}
