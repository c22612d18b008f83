import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Shared helpers for the scripts under bench/, which report into docs/benchmarks.md. */

const BENCHMARKS_MD = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));

const PREAMBLE = `# Benchmarks

Figures on this page come from \`npm run bench\` (each section names the script
that produced it and the machine it ran on); rerun it to refresh them.
`;

/** One line describing the machine, so figures can be read in context. */
export function machineInfo(): string {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim() ?? 'unknown CPU';
  const memoryGiB = (os.totalmem() / 2 ** 30).toFixed(1);
  return `${model}, ${cpus.length} logical cores, ${memoryGiB} GiB RAM, Node ${process.version}, ${os.type()} ${os.release()} ${os.arch()}`;
}

/** The first lines of every benchmark section: how to run it again, and where it ran. */
export function provenance(command: string): string[] {
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(', ');
  return [`Command: \`${command}\``, '', `Machine: ${machineInfo()}; load average when the section was written (1, 5, 15 min): ${load}`];
}

const CLI = fileURLToPath(new URL('../dist/src/cli.js', import.meta.url));

/** One `tarsier update` run: its wall time, the process's peak RSS, and what it printed. */
export interface UpdateRun {
  seconds: number;
  peakMiB: number;
  stdout: string;
}

/** Runs `tarsier update --source NAME` (the built CLI, a process of its own) under GNU time, which reports the peak RSS. */
export function updateSource(source: string, databaseUrl: string, config: string): UpdateRun {
  const started = process.hrtime.bigint();
  const result = spawnSync('/usr/bin/time', ['-f', 'MAXRSS %M', process.execPath, CLI, 'update', '--source', source, '--config', config], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, TARSIER_LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (result.status !== 0) throw new Error(`tarsier update failed (${result.status}): ${result.stderr}${result.stdout}`);
  return { seconds, peakMiB: Number(/MAXRSS (\d+)/.exec(result.stderr)?.[1] ?? NaN) / 1024, stdout: result.stdout };
}

/**
 * The two tables of an import benchmark: a row of runs (median wall time, each run, median peak
 * RSS), and a row of a floor (median, each, and how many times the first import's median it is).
 */
export function importRows(
  firstMedian: number,
  digits = 1,
): {
  row: (label: string, runs: readonly UpdateRun[]) => string;
  floor: (label: string, seconds: readonly number[]) => string;
} {
  return {
    row: (label, runs) =>
      `| ${label} | ${median(runs.map((r) => r.seconds)).toFixed(digits)} s | ${runs.map((r) => r.seconds.toFixed(digits)).join(', ')} | ${median(runs.map((r) => r.peakMiB)).toFixed(0)} MiB |`,
    floor: (label, seconds) =>
      `| ${label} | ${median(seconds).toFixed(digits)} s | ${seconds.map((t) => t.toFixed(digits)).join(', ')} | ${(firstMedian / median(seconds)).toFixed(1)}× |`,
  };
}

/** One run of a program: its wall time (the whole process), peak RSS, CPU time (user + system, its children's included) and output. */
export interface Timed {
  seconds: number;
  peakMiB: number;
  cpuSeconds: number;
  stdout: string;
}

/** Runs a program under GNU time, with only PATH of the environment unless env adds more; rejects on a non-zero exit. */
export function timed(program: string, args: readonly string[], env: Record<string, string> = {}): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn('/usr/bin/time', ['-f', 'MAXRSS %M CPU %U %S', program, ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (code !== 0) return reject(new Error(`${program} ${args.join(' ')} exited ${code}: ${stderr}`));
      const time = /MAXRSS (\d+) CPU ([\d.]+) ([\d.]+)/.exec(stderr);
      if (!time) return reject(new Error(`no GNU time line in ${stderr}`));
      resolve({ seconds, peakMiB: Number(time[1]) / 1024, cpuSeconds: Number(time[2]) + Number(time[3]), stdout });
    });
  });
}

/**
 * Reads the file once, to nothing: the first read of a new sparse file fills the page cache with
 * zeros, which the scan and the floor must not pay one and not the other. Returns seconds.
 */
export async function warm(file: string): Promise<number> {
  const started = process.hrtime.bigint();
  for await (const _chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    // discarded
  }
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/**
 * Runs a bench script in a process of its own (with this process's loader flags, so a .ts file
 * runs as here) and returns the JSON it prints: a fresh V8 heap, free of the type feedback and
 * optimized code of whatever this process ran before, and a peak RSS of its own.
 */
export function runIsolated<T>(script: string, args: readonly string[]): T {
  const output = execFileSync(process.execPath, [...process.execArgv, script, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(output) as T;
}

/** Wall time of run, in seconds. */
export function secondsOf(run: () => void): number {
  const started = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

export function installed(program: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0;
}

/** A layer's floor: the system's own programs decompress and list the archive (`gzip -dc | tar -t`). */
export function listingFloor(decompressor: string, path: string): number {
  return secondsOf(() => execFileSync('sh', ['-c', `${decompressor} -dc < '${path}' | tar -t > /dev/null`]));
}

/** The bytes a gzip file expands to. */
export function expandedBytes(path: string): number {
  return Number(execFileSync('sh', ['-c', `gzip -dc '${path}' | wc -c`], { encoding: 'utf8' }).trim());
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error('median of no values');
  const sorted = [...xs].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/**
 * Writes `## title` followed by body into docs/benchmarks.md, replacing the
 * section of that title (up to the next `## ` heading) or adding it (last, first, or right after
 * the section titled `after`, when that one is there), and leaving the other benchmarks' sections
 * as they are; prints the body too.
 */
export async function writeBenchmarkSection(
  title: string,
  body: string,
  where: 'last' | 'first' | { after: string } = 'last',
): Promise<void> {
  const existing = await readFile(BENCHMARKS_MD, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return PREAMBLE;
    throw error;
  });
  const section = `## ${title}\n\n${body.trim()}\n`;
  const lines = existing.split('\n');
  const start = lines.findIndex((line) => line === `## ${title}`);
  let updated: string;
  const anchor = typeof where === 'object' ? lines.findIndex((line) => line === `## ${where.after}`) : -1;
  const afterAnchor = anchor < 0 ? -1 : lines.findIndex((line, i) => i > anchor && line.startsWith('## '));
  const insertAt = where === 'first' ? lines.findIndex((line) => line.startsWith('## ')) : afterAnchor;
  if (start < 0 && insertAt >= 0) {
    updated = `${lines.slice(0, insertAt).join('\n').trimEnd()}\n\n${section}\n${lines.slice(insertAt).join('\n').trimEnd()}\n`;
  } else if (start < 0) {
    updated = `${existing.trimEnd()}\n\n${section}`;
  } else {
    const next = lines.findIndex((line, i) => i > start && line.startsWith('## '));
    const before = lines.slice(0, start).join('\n').trimEnd();
    const after = next < 0 ? '' : `\n${lines.slice(next).join('\n').trimEnd()}\n`;
    updated = `${before}\n\n${section}${after}`;
  }
  await mkdir(dirname(BENCHMARKS_MD), { recursive: true });
  await writeFile(BENCHMARKS_MD, updated);
  console.log(body);
}

/** One row of the targets table: a figure, what it was, what it must reach, and its floor from the same run. */
export interface TargetRow {
  measure: string;
  before: string;
  target: string;
  now: string;
  /** The floor measured in the same run ('—' when there is none), and now ÷ floor (or floor ÷ now for rates). */
  floor: string;
  ratio: string;
  met: boolean;
  /** The benchmark that measures it (npm run bench -- NAME). */
  benchmark: string;
}

const TARGETS_TITLE = 'Targets';
const TARGETS_HEADER = [
  'Each row is written by the benchmark named in it, from the run that produced its section below; "before" is the figure before reports were assembled from fragments, versions compared in place, and the other changes of that round.',
  '',
  '| Measure | Before | Target | Now | Floor (same run) | Ratio | Met | Benchmark |',
  '|---|---|---|---|---|---|---|---|',
];

/**
 * Replaces the rows of these measures in the Targets section of docs/benchmarks.md (rows of
 * measures another benchmark wrote stay as they are), so each benchmark updates its own figures.
 * A row this benchmark wrote before under another measure is dropped: a measure names its data
 * (e.g. how many features a report has), which a run on another machine changes.
 */
export async function recordTargets(rows: readonly TargetRow[]): Promise<void> {
  const existing = await readFile(BENCHMARKS_MD, 'utf8').catch(() => '');
  const lines = existing.split('\n');
  const start = lines.findIndex((line) => line === `## ${TARGETS_TITLE}`);
  const kept = new Map<string, string>();
  const measures = new Set(rows.map((r) => r.measure));
  const benchmarks = new Set(rows.map((r) => r.benchmark));
  if (start >= 0) {
    for (const line of lines.slice(start + 1)) {
      if (line.startsWith('## ')) break;
      const measure = /^\| ([^|]+?) \|/.exec(line)?.[1];
      if (!measure || measure === 'Measure' || line.startsWith('|---')) continue;
      const benchmark = /\| ([^|]+?) \|$/.exec(line)?.[1];
      if (benchmark && benchmarks.has(benchmark) && !measures.has(measure)) continue;
      kept.set(measure, line);
    }
  }
  for (const r of rows) {
    kept.set(
      r.measure,
      `| ${r.measure} | ${r.before} | ${r.target} | ${r.now} | ${r.floor} | ${r.ratio} | ${r.met ? 'yes' : 'no'} | ${r.benchmark} |`,
    );
  }
  await writeBenchmarkSection(TARGETS_TITLE, [...TARGETS_HEADER, ...kept.values()].join('\n'), 'first');
}
