import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { dpkg, parseDpkgVersion } from '../../src/ecosystems/dpkg/version.js';
import { compareRows, negate, readTable, show } from './vector-table.js';
import { expectAntisymmetric, junkVersions } from './version-properties.js';
import { prng } from '../helpers/prng.js';

const fixtures = fileURLToPath(new URL('../fixtures/versions/', import.meta.url));

describe('dpkg version format', () => {
  it('is named dpkg', () => {
    expect(dpkg.name).toBe('dpkg');
  });

  it('compares digit runs of any length by value', () => {
    expect(dpkg.compare('1.9007199254740993', '1.9007199254740992')).toBe(1);
    expect(dpkg.compare('18446744073709551616', '18446744073709551615')).toBe(1);
    expect(dpkg.compare('1.000000000000000000000000001', '1.1')).toBe(0);
  });

  it('orders malformed input without throwing', () => {
    expect(dpkg.compare('a:1', 'a:1')).toBe(0);
    expect(dpkg.compare('', '1')).toBe(-1);
    expect(dpkg.compare('1.0!', '1.0a')).toBe(1);
    expect(dpkg.valid('2147483648:1')).toBe(false);
    expect(dpkg.valid('2147483647:1')).toBe(true);
  });

  it('reads epochs by value, leading zeros included', () => {
    expect(dpkg.compare('007:1.0', '7:1.0')).toBe(0);
    expect(dpkg.compare('00:1.0', '1.0')).toBe(0);
    expect(dpkg.compare('010:1', '9:1')).toBe(1);
    expect(dpkg.compare('18446744073709551616:1', '18446744073709551615:2')).toBe(1);
    expect(dpkg.valid('0002147483647:1')).toBe(true);
    expect(dpkg.valid('0002147483648:1')).toBe(false);
  });

  it("sorts '~' before the end of a part, in upstream and revision alike", () => {
    const ascending = ['1.0~~', '1.0~', '1.0-~', '1.0-0~', '1.0', '1.0-1~', '1.0-1', '1.0a', '1.0+'];
    for (let i = 0; i + 1 < ascending.length; i++) {
      const [a, b] = [ascending[i] as string, ascending[i + 1] as string];
      expect([a, dpkg.compare(a, b), b]).toEqual([a, -1, b]);
    }
  });

  it('trims only the white space C isspace knows (ASCII)', () => {
    const trimmed: number[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      const ch = String.fromCharCode(c);
      // Untrimmed, the character hides the epoch, which then counts as 0.
      if (!/[0-9]/.test(ch) && dpkg.compare(`${ch}1:1`, '1:1') === 0) trimmed.push(c);
    }
    expect(trimmed).toEqual([0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20]);
    expect(dpkg.compare(' \t1:1-1\n', '1:1-1')).toBe(0);
  });

  it('is antisymmetric on any input, valid or not', () => {
    expectAntisymmetric(dpkg.compare, junkVersions(0xd9c6, 20_000));
  });
});

describe('dpkg compare: test/fixtures/versions/dpkg-compare.data (Clair)', () => {
  for (const { line, a, op, b, expected } of compareRows(readTable(`${fixtures}dpkg-compare.data`))) {
    it(`line ${line}: ${show(a)} ${op} ${show(b)}`, () => {
      if (expected === undefined) throw new Error(`unknown operator ${op}`);
      expect(dpkg.compare(a, b)).toBe(expected);
      expect(dpkg.compare(b, a)).toBe(negate(expected));
    });
  }
});

describe('dpkg parse: test/fixtures/versions/dpkg-parse.data (Clair)', () => {
  for (const { line, fields } of readTable(`${fixtures}dpkg-parse.data`)) {
    const [input = '', result, epoch, upstream, revision] = fields;
    if (result === 'error') {
      it(`line ${line}: ${show(input)} is invalid`, () => {
        expect(parseDpkgVersion(input)).toBeNull();
        expect(dpkg.valid(input)).toBe(false);
      });
    } else {
      it(`line ${line}: ${show(input)} parses`, () => {
        expect(parseDpkgVersion(input)).toEqual({ epoch: Number(epoch), upstream, revision });
        expect(dpkg.valid(input)).toBe(true);
      });
    }
  }
});

const hasDpkg = spawnSync('dpkg', ['--version'], { stdio: 'ignore' }).status === 0;

/** 6,000 dpkg processes: about 15 s on an idle machine, minutes on a loaded one. */
const ORACLE_DEADLINE_MS = 600_000;

describe.runIf(hasDpkg)('dpkg compare agrees with dpkg --compare-versions', () => {
  const pairs = randomPairs(0x7a75_1e5, 3000);

  it(`on ${pairs.length} seeded random pairs`, { timeout: ORACLE_DEADLINE_MS }, () => {
    for (const [a, b] of pairs) {
      expect(dpkg.valid(a) && dpkg.valid(b), `${a} / ${b} must be valid`).toBe(true);
    }
    const started = performance.now();
    const answers = askDpkg(pairs);
    const seconds = (performance.now() - started) / 1000;
    console.log(`dpkg oracle: ${pairs.length} pairs in ${seconds.toFixed(1)} s`);

    const disagreements = pairs.map(([a, b], i) => ({ a, b, dpkg: answers[i], ours: dpkg.compare(a, b) })).filter((d) => d.dpkg !== d.ours);
    expect(disagreements).toEqual([]);
  });
});

/**
 * Runs every comparison through the real dpkg in ONE shell process (spawning
 * dpkg per pair from node would cost a process start each in node as well).
 * Prints -1, 0 or 1 per pair, or "error" if dpkg rejects a version.
 */
const ORACLE_SCRIPT = `
while IFS="$(printf '\\t')" read -r a b; do
  if dpkg --compare-versions "$a" lt "$b"; then echo -1; continue; else rc=$?; fi
  if [ "$rc" -ne 1 ]; then echo error; continue; fi
  if dpkg --compare-versions "$a" eq "$b"; then echo 0; continue; else rc=$?; fi
  if [ "$rc" -ne 1 ]; then echo error; else echo 1; fi
done < "$1"
`;

function askDpkg(pairs: readonly (readonly [string, string])[]): (number | string)[] {
  const dir = mkdtempSync(join(tmpdir(), 'tarsier-dpkg-oracle-'));
  try {
    const input = join(dir, 'pairs.tsv');
    writeFileSync(input, pairs.map(([a, b]) => `${a}\t${b}\n`).join(''));
    const run = spawnSync('sh', ['-c', ORACLE_SCRIPT, 'oracle', input], { encoding: 'utf8', maxBuffer: 1 << 24 });
    if (run.status !== 0) throw new Error(`oracle script failed: ${run.stderr}`);
    const lines = run.stdout.trimEnd().split('\n');
    if (lines.length !== pairs.length) throw new Error(`expected ${pairs.length} answers, got ${lines.length}`);
    return lines.map((l) => (l === 'error' ? l : Number(l)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type Random = () => number;

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

const NUMBERS = ['0', '00', '1', '01', '007', '2', '9', '10', '010', '99', '100', '2024', '20240101', '18446744073709551616'];
const WORDS = ['a', 'b', 'z', 'A', 'Z', 'rc', 'pre', 'git', 'dfsg', 'ubuntu', 'deb', 'build', 'p', 'esm'];
const UPSTREAM_SEPARATORS = ['.', '.', '.', '+', '~', '~~'];
const REVISION_SEPARATORS = ['.', '+', '~'];

/**
 * A part that starts with a digit (dpkg warns otherwise) and alternates
 * numbers with words and separators drawn from `separators`.
 */
function randomPart(random: Random, separators: readonly string[]): string {
  let s = pick(random, NUMBERS);
  const length = Math.floor(random() * 5);
  for (let i = 0; i < length; i++) {
    const r = random();
    if (r < 0.4) s += pick(random, separators) + pick(random, NUMBERS);
    else if (r < 0.7) s += pick(random, WORDS);
    else if (r < 0.85) s += pick(random, separators) + pick(random, WORDS);
    else s += pick(random, NUMBERS);
  }
  // Digit runs written back to back merge, which is fine: any digits are.
  return random() < 0.1 ? `${s}~` : s;
}

function randomVersion(random: Random): string {
  const epoch = random() < 0.25 ? `${pick(random, ['0', '1', '2', '01', '10'])}:` : '';
  // ':' may appear in the upstream part only after an epoch, '-' only before a revision.
  const hasRevision = random() < 0.6;
  const extra = [...(epoch ? [':'] : []), ...(hasRevision ? ['-'] : [])];
  const upstream = randomPart(random, [...UPSTREAM_SEPARATORS, ...extra]);
  return epoch + upstream + (hasRevision ? `-${randomPart(random, REVISION_SEPARATORS)}` : '');
}

/** A version close to v: one character changed, inserted or removed, or padded with zeros. */
function neighbour(random: Random, v: string): string {
  const i = Math.floor(random() * v.length);
  const r = random();
  if (r < 0.3) return v.slice(0, i) + pick(random, ['0', '1', '9', 'a', 'Z', '.', '+', '~']) + v.slice(i + 1);
  if (r < 0.55) return v.slice(0, i) + pick(random, ['0', '5', 'b', '~', '+', '.']) + v.slice(i);
  if (r < 0.75) return v.slice(0, i) + v.slice(i + 1);
  if (r < 0.9) return v.replace(/\d+/g, (digits) => (random() < 0.5 ? `0${digits}` : digits));
  return v.includes(':') ? v.replace(/^\d+:/, '') : `0:${v}`;
}

/** dpkg rejects these outright (or only warns), so they make poor oracle questions. */
function goodForDpkg(v: string): boolean {
  return dpkg.valid(v) && /^(\d+:)?\d/.test(v) && !v.endsWith('-');
}

function randomPairs(seed: number, count: number): [string, string][] {
  const random = prng(seed);
  const pairs: [string, string][] = [];
  while (pairs.length < count) {
    const a = randomVersion(random);
    const r = random();
    const b = r < 0.1 ? a : r < 0.4 ? randomVersion(random) : neighbour(random, a);
    if (goodForDpkg(a) && goodForDpkg(b)) pairs.push([a, b]);
  }
  return pairs;
}
