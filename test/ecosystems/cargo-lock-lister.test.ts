import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { LayerFiles } from '../../src/model/indexing.js';
import { cargoLockLister } from '../../src/ecosystems/semver/cargo-lock.js';
import { expectedPackages } from './listed-packages.js';

/**
 * Real Cargo.lock files (PROVENANCE.md) of three lock formats, each beside
 * `<name>.tomllib-packages.txt`: its crates.io packages as Python's own TOML parser (tomllib) read
 * them when the fixture was taken (test/fixtures/cargo/tomllib-packages.py), one `name version` a
 * line. The lister's TOML reader is its own, so the two readings are independent.
 */
const FIXTURES = fileURLToPath(new URL('../fixtures/cargo/', import.meta.url));

const layer = (entries: Record<string, string>): LayerFiles =>
  new Map(Object.entries(entries).map(([path, text]) => [path, Buffer.from(text)]));
const lock = (body: string) => cargoLockLister.list(layer({ 'src/app/Cargo.lock': body }));
const CRATES_IO = 'registry+https://github.com/rust-lang/crates.io-index';

describe('Cargo.lock lister on real lock files, against tomllib', () => {
  it.each([
    // Lock format 4 (2026): 63 packages, 11 of them ripgrep's workspace crates (no source).
    ['ripgrep-15.2.0', 52],
    // Lock format 1 (2018): dependencies as "name version (source)", the checksums in [metadata].
    ['ripgrep-0.10.0', 83],
    // Before Cargo 0.13 (2016): the workspace root as [root], its path crates as [[package]].
    ['ripgrep-0.3.2', 35],
    // regex and two of its crates both from crates.io and from a git repository.
    ['git-deps', 8],
    // Two path dependencies and one crate.
    ['path-deps', 1],
  ])('%s: every crates.io package, name, version and location', (name, count) => {
    const location = `usr/src/${name}/Cargo.lock`;
    const files = new Map([[location, readFileSync(`${FIXTURES}${name}.Cargo.lock`)]]);
    const expected = expectedPackages(`${FIXTURES}${name}.tomllib-packages.txt`, 'crates.io', location);
    const { packages, unreadable } = cargoLockLister.list(files);
    expect(unreadable).toEqual([]);
    expect(expected).toHaveLength(count);
    expect(packages).toEqual(expected);
  });

  it('skips the workspace crates and git sources', () => {
    const files = new Map([
      ['a/Cargo.lock', readFileSync(`${FIXTURES}ripgrep-15.2.0.Cargo.lock`)],
      ['b/Cargo.lock', readFileSync(`${FIXTURES}ripgrep-0.3.2.Cargo.lock`)],
      ['c/Cargo.lock', readFileSync(`${FIXTURES}git-deps.Cargo.lock`)],
    ]);
    const listed = cargoLockLister.list(files).packages.map((p) => `${p.location} ${p.name}@${p.version}`);
    expect(listed.filter((p) => / (ripgrep|grep-\w+|globset|ignore|grep)@/.test(p))).toEqual([]);
    expect(listed.filter((p) => p.startsWith('c/') && / regex@/.test(p))).toEqual(['c/Cargo.lock regex@1.11.1']);
  });
});

describe('Cargo.lock lister', () => {
  it('wants Cargo.lock anywhere, and nothing else', () => {
    expect(cargoLockLister.wants('Cargo.lock')).toBe(true);
    expect(cargoLockLister.wants('usr/src/app/Cargo.lock')).toBe(true);
    expect(cargoLockLister.wants('usr/src/app/Cargo.toml')).toBe(false);
    expect(cargoLockLister.wants('usr/src/app/NotCargo.lock')).toBe(false);
    expect(cargoLockLister.wants('usr/src/app/cargo.lock')).toBe(false);
  });

  it('reads the sparse index, escapes, literal strings, comments and arrays across lines; skips other registries and patch.unused', () => {
    const { packages, unreadable } = lock(
      [
        '# comment',
        'version = 3 # trailing comment',
        '',
        '[[package]]',
        'name = "sparse-crate"',
        'version = "1.0.0-alpha.1+build.5"',
        'source = "sparse+https://index.crates.io/"',
        'dependencies = [',
        ' "a 1.0.0 (registry+https://github.com/rust-lang/crates.io-index)", # why',
        ' ["nested", \'literal\'],',
        ']',
        '',
        '[[package]]',
        "name = 'lit\\eral'",
        'version = "0.1.\\u0030"',
        `source = "${CRATES_IO}"`,
        '',
        '[[package]]',
        'name = "private"',
        'version = "1.0.0"',
        'source = "registry+https://my-intranet/index"',
        '',
        '[[patch.unused]]',
        'name = "unused"',
        'version = "1.0.0"',
        `source = "${CRATES_IO}"`,
        '',
        '[metadata]',
        `"checksum x 1.0.0 (${CRATES_IO})" = "abc"`,
      ].join('\r\n'),
    );
    expect(unreadable).toEqual([]);
    expect(packages.map((p) => `${p.name}@${p.version}`)).toEqual(['sparse-crate@1.0.0-alpha.1+build.5', 'lit\\eral@0.1.0']);
  });

  it('reports a file outside the part of TOML Cargo writes, with the line', () => {
    const cases: [string, string][] = [
      ['[[package]]\nname = "a"\nversion = """1.0.0"""\n', 'line 3: multi-line strings'],
      ['[[package]]\nname = { x = 1 }\n', 'line 2: a value of a kind'],
      ['[[package]]\nname = "a\n', 'line 2: unterminated string'],
      ['[[package]]\nname.x = "a"\n', 'line 2: dotted keys'],
      ['[[package]\n', 'line 1: ]] expected'],
      ['[[package]]\nname = "a" "b"\n', 'line 2: unexpected'],
      ['[[package]]\nname = "a"\nname = "b"\n', 'line 3: name defined twice'],
      ['[[package]]\ndependencies = [\n "a"\n "b"]\n', 'line 4: , or ] expected'],
      ['[[package]]\nname = "\\x41"\n', 'line 2: invalid escape \\x'],
      ['[[package]]\nname = "\\uD800"\n', 'line 2: invalid escape \\uD800'],
      ['{"not": "toml"}', 'line 1: a key expected'],
    ];
    for (const [text, why] of cases) {
      const { packages, unreadable } = lock(text);
      expect(packages).toEqual([]);
      expect(unreadable).toHaveLength(1);
      expect(unreadable[0]?.why).toContain(`not a Cargo.lock: ${why}`);
    }
  });

  it('reports packages without a name, a version, or with a version that is no semantic version', () => {
    const { packages, unreadable } = lock(
      [
        '[[package]]',
        'version = "1.0.0"',
        `source = "${CRATES_IO}"`,
        '[[package]]',
        'name = "noversion"',
        `source = "${CRATES_IO}"`,
        '[[package]]',
        'name = "badversion"',
        'version = "1.0"',
        `source = "${CRATES_IO}"`,
        '[[package]]',
        'name = "serde"',
        'version = "1.0.130"',
        `source = "${CRATES_IO}"`,
      ].join('\n'),
    );
    expect(packages).toEqual([{ ecosystem: 'crates.io', name: 'serde', version: '1.0.130', location: 'src/app/Cargo.lock' }]);
    expect(unreadable.map((u) => u.why)).toEqual([
      'package[0]: no name',
      'noversion: no version',
      'badversion: version "1.0" is not a semver version',
    ]);
  });
});
