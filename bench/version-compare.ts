import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { apk } from '../src/ecosystems/apk/version.js';
import { dpkg } from '../src/ecosystems/dpkg/version.js';
import { rpm } from '../src/ecosystems/rpm/version.js';
import type { VersionFormat } from '../src/model/version-format.js';
import { median, provenance, recordTargets, runIsolated, writeBenchmarkSection } from './lib.js';
import { prng } from '../test/helpers/prng.js';

/**
 * Version comparison throughput per format. The corpus mimics the matcher's
 * work: an installed package version against a fixed-in version of the same
 * package, so most pairs share a long prefix and differ late (a revision, a
 * security-update suffix, a patch level), which is the expensive case.
 * The dpkg row stands beside a floor: the same ordering in C on the same pairs.
 */

const COMMAND = 'npm run bench -- version-compare';
const PAIRS = 10_000;
const PASSES_PER_RUN = 50;
const WARMUP_PASSES = 20;
const RUNS = 7;

type Random = () => number;
type Pair = readonly [string, string];

function int(random: Random, max: number): number {
  return Math.floor(random() * max);
}

function pick<T>(random: Random, items: readonly T[]): T {
  return items[int(random, items.length)] as T;
}

function upstream(random: Random): string {
  const parts = [int(random, 10), int(random, 40), int(random, 30)].slice(0, 2 + int(random, 2));
  return parts.join('.');
}

/** Debian/Ubuntu style: `1:2.36.1-8+deb11u1`, `7.81.0-1ubuntu1.15`, `3.0.2-0ubuntu1~22.04.1`. */
function dpkgVersion(random: Random, base: string): string {
  const epoch = random() < 0.15 ? '1:' : '';
  const revision = int(random, 12) + 1;
  const suffix = pick(random, [
    '',
    `+deb${10 + int(random, 3)}u${int(random, 9) + 1}`,
    `ubuntu${int(random, 5)}.${int(random, 20)}`,
    `~deb${10 + int(random, 3)}u${int(random, 3)}`,
    `build${int(random, 3) + 1}`,
  ]);
  const extra = pick(random, ['', '', '+dfsg', '~rc1', 'a']);
  return `${epoch}${base}${extra}-${revision}${suffix}`;
}

/** RHEL/Fedora/Amazon style: `1:1.1.1k-6.el8_5`, `4.16.1.3-11.fc34`, `0.9.29-1.amzn2023.0.3`, `1.0^20210101git1234-1.fc35`. */
function rpmVersion(random: Random, base: string): string {
  const epoch = random() < 0.2 ? `${int(random, 3)}:` : '';
  const caret = random() < 0.05 ? `^2024${int(random, 9)}01git${int(random, 9999)}` : '';
  const release = pick(random, [
    `${int(random, 200)}.el8`,
    `${int(random, 200)}.el8_${int(random, 10)}`,
    `${int(random, 60)}.el9_${int(random, 5)}.${int(random, 3)}`,
    `${int(random, 30)}.fc${34 + int(random, 8)}`,
    `${int(random, 5)}.amzn2023.0.${int(random, 6)}`,
  ]);
  return `${epoch}${base}${caret}-${release}`;
}

/** Alpine style: `1.36.1-r29`, `1.1.1w-r1`, `6.4_p20231125-r0`, `13.2.1_git20231014-r0`, `1.10.0_rc1-r0`. */
function apkVersion(random: Random, base: string): string {
  const suffix = pick(random, [
    '',
    '',
    pick(random, ['a', 'k', 'w']),
    `_p${20230000 + int(random, 20000)}`,
    `_git${20230000 + int(random, 20000)}`,
    `_rc${int(random, 4) + 1}`,
    `_pre${int(random, 4) + 1}`,
  ]);
  return `${base}${suffix}-r${int(random, 30)}`;
}

/**
 * v as the matcher gets it: decoded from bytes (a database row, a feed), so a
 * flat string. Left as built by concatenation, it would be a rope (a V8
 * ConsString) whose every character read takes an extra indirection.
 */
function decoded(v: string): string {
  return Buffer.from(v, 'utf8').toString('utf8');
}

/** Pairs of versions of one package: the same upstream most of the time. */
function corpus(format: VersionFormat, seed: number, version: (random: Random, base: string) => string): Pair[] {
  const random = prng(seed);
  const pairs: Pair[] = [];
  while (pairs.length < PAIRS) {
    const base = upstream(random);
    const otherBase = random() < 0.7 ? base : upstream(random);
    const pair = [decoded(version(random, base)), decoded(version(random, otherBase))] as const;
    // A benchmark of the malformed-input path would measure the wrong thing.
    for (const v of pair) if (!format.valid(v)) throw new Error(`corpus holds an invalid ${format.name} version: ${v}`);
    pairs.push(pair);
  }
  return pairs;
}

/** Compares every pair once; the returned sum keeps the work observable. */
function pass(format: VersionFormat, pairs: readonly Pair[]): number {
  let sum = 0;
  for (const [a, b] of pairs) sum += format.compare(a, b);
  return sum;
}

interface Rates {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

function summarize(rates: readonly number[]): Rates {
  return { median: median(rates), min: Math.min(...rates), max: Math.max(...rates) };
}

/**
 * Comparisons per CPU-second (user + system, all of the process's threads, so
 * garbage collection and compilation count), one rate per run. CPU time
 * rather than wall time because the machine is shared: waiting for a core is
 * not the comparator's cost.
 */
function measure(format: VersionFormat, pairs: readonly Pair[]): Rates {
  let sink = 0;
  for (let i = 0; i < WARMUP_PASSES; i++) sink += pass(format, pairs);
  const rates: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const started = process.cpuUsage();
    for (let i = 0; i < PASSES_PER_RUN; i++) sink += pass(format, pairs);
    const used = process.cpuUsage(started);
    rates.push((pairs.length * PASSES_PER_RUN) / ((used.user + used.system) / 1e6));
  }
  if (Number.isNaN(sink)) throw new Error('unreachable: keeps the comparisons alive');
  return summarize(rates);
}

const ORDER_SIGNS = '<=>';

function orderings(format: VersionFormat, pairs: readonly Pair[]): string {
  return pairs.map(([a, b]) => ORDER_SIGNS[format.compare(a, b) + 1]).join('');
}

const C_SOURCE = fileURLToPath(new URL('dpkg-compare.c', import.meta.url));

function findCompiler(): string | undefined {
  return ['cc', 'gcc'].find((name) => spawnSync(name, ['--version'], { stdio: 'ignore' }).status === 0);
}

/**
 * Runs the C floor (bench/dpkg-compare.c, compiled here with -O2) on the same
 * pairs and the same passes and runs. Its orderings must equal Tarsier's: a
 * floor that computes something else would make the ratio meaningless.
 */
function measureC(compiler: string, pairs: readonly Pair[]): Rates {
  const dir = mkdtempSync(join(tmpdir(), 'tarsier-bench-dpkg-'));
  try {
    const binary = join(dir, 'dpkg-compare');
    const input = join(dir, 'pairs.tsv');
    execFileSync(compiler, ['-O2', '-std=c11', '-o', binary, C_SOURCE], { stdio: ['ignore', 'inherit', 'inherit'] });
    writeFileSync(input, pairs.map(([a, b]) => `${a}\t${b}\n`).join(''));
    const output = execFileSync(binary, [input, String(PASSES_PER_RUN), String(RUNS), String(WARMUP_PASSES)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const [answers = '', ...rates] = output.trimEnd().split('\n');
    const expected = orderings(dpkg, pairs);
    if (answers !== expected) {
      const first = [...expected].findIndex((sign, i) => sign !== answers[i]);
      const [a, b] = pairs[first] ?? ['?', '?'];
      throw new Error(`the C floor orders ${a} ${answers[first]} ${b}, Tarsier ${expected[first]}: fix bench/dpkg-compare.c`);
    }
    return summarize(rates.map(Number));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function formatRate(perSecond: number): string {
  return `${(perSecond / 1e6).toFixed(2)} M`;
}

function row(label: string, r: Rates): string {
  return `| ${label} | ${formatRate(r.median)} | ${formatRate(r.min)} – ${formatRate(r.max)} | ${(1e9 / r.median).toFixed(0)} ns |`;
}

type FormatName = 'dpkg' | 'rpm' | 'apk';

const FORMATS: Record<FormatName, { format: VersionFormat; seed: number; version: (random: Random, base: string) => string }> = {
  dpkg: { format: dpkg, seed: 1, version: dpkgVersion },
  rpm: { format: rpm, seed: 2, version: rpmVersion },
  apk: { format: apk, seed: 3, version: apkVersion },
};

function formatCorpus(name: FormatName): Pair[] {
  const { format, seed, version } = FORMATS[name];
  return corpus(format, seed, version);
}

const SELF = fileURLToPath(import.meta.url);

/**
 * Measures one format in a process of its own (runIsolated): no format runs with the type feedback
 * and optimized code the formats measured before it left behind, which cost the later ones as
 * much as half their rate.
 */
function measureIsolated(name: FormatName): Rates {
  return runIsolated<Rates>(SELF, [name]);
}

if (process.argv[1] === SELF) {
  const name = process.argv[2] ?? '';
  if (!Object.hasOwn(FORMATS, name)) throw new Error(`usage: version-compare.ts dpkg|rpm|apk (got ${name})`);
  const { format } = FORMATS[name as FormatName];
  process.stdout.write(JSON.stringify(measure(format, formatCorpus(name as FormatName))));
}

export async function run(): Promise<void> {
  const results: [FormatName, Rates][] = [];
  for (const name of ['dpkg', 'rpm', 'apk'] as const) results.push([name, measureIsolated(name)]);
  const dpkgPairs = formatCorpus('dpkg');
  const compiler = findCompiler();
  const floor = compiler === undefined ? undefined : measureC(compiler, dpkgPairs);
  const dpkgRates = results[0]?.[1] as Rates;
  const floorLines =
    floor === undefined
      ? ['No C compiler (cc, gcc) was found, so the dpkg row has no C floor beside it.']
      : [
          `The C floor is bench/dpkg-compare.c, compiled at bench time (\`${compiler} -O2\`): the same ordering written in plain C over raw bytes, run on the same pairs with the same passes and runs, timed with CLOCK_PROCESS_CPUTIME_ID. It agreed with Tarsier on all ${dpkgPairs.length.toLocaleString('en')} pairs.`,
          '',
          `**dpkg: Tarsier ÷ C = ${(dpkgRates.median / floor.median).toFixed(2)}** (median ÷ median).`,
        ];
  const body = [
    ...provenance(COMMAND),
    '',
    `Each format is measured in a process of its own and compares ${PAIRS.toLocaleString('en')} seeded, realistic version pairs (installed vs fixed-in version of the same package, mostly sharing the upstream version), ${PASSES_PER_RUN} passes per run after ${WARMUP_PASSES} warm-up passes; the median of ${RUNS} runs is reported. Versions are flat strings, as decoded from a database row or a feed. Rates are comparisons per CPU-second of the process (process.cpuUsage, user + system), so waiting for a core on a busy machine does not count; on a shared machine they still move between runs and between invocations (see the ranges).`,
    '',
    '| Format | Median comparisons per CPU-second | Range over runs | Median CPU time per comparison |',
    '|---|---|---|---|',
    ...results.map(([format, rates]) => row(format, rates)),
    ...(floor === undefined ? [] : [row('dpkg, C floor', floor)]),
    '',
    ...floorLines,
  ].join('\n');
  await writeBenchmarkSection('Version comparison', body);
  const millions = (rate: number) => `${(rate / 1e6).toFixed(2)} M`;
  await recordTargets([
    {
      measure: 'dpkg comparisons per CPU-second',
      before: '0.93 M (C: 9.1 M)',
      target: '≥ 5 M',
      now: millions(dpkgRates.median),
      floor: floor === undefined ? '—' : `${millions(floor.median)} (C)`,
      ratio: floor === undefined ? '—' : `${(dpkgRates.median / floor.median).toFixed(2)} × C`,
      met: dpkgRates.median >= 5e6,
      benchmark: 'version-compare',
    },
  ]);
}
