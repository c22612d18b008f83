import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readElf, sectionByName } from '../../src/ecosystems/elf.js';
import { cargoAuditableLister, MAX_AUDIT_DATA_BYTES } from '../../src/ecosystems/semver/cargo-auditable.js';
import type { ApplicationPackage } from '../../src/model/indexing.js';
import { listEachFile } from '../helpers/file-listers.js';
import { prng } from '../helpers/prng.js';
import { ELF_SHAPES, elfWithData } from './go-elf.js';

/**
 * The cargo auditable lister against a real program carrying audit data, built by
 * test/fixtures/cargo/record-auditable.py, which also decoded the section with Python's zlib and
 * json into the oracle: the crates.io runtime packages, one `name version` a line.
 */
const FIXTURES = fileURLToPath(new URL('../fixtures/cargo/', import.meta.url));
const PROGRAM = readFileSync(`${FIXTURES}bin/cratefixture`);
const ORACLE = readFileSync(`${FIXTURES}cratefixture.zlib-json-packages.txt`, 'utf8')
  .split('\n')
  .filter((line) => line !== '')
  .map((line) => line.replace(' ', '@'));
const GO_PROGRAM = readFileSync(new URL('../fixtures/go/bin/gofixture-amd64', import.meta.url));

const pairs = (packages: readonly ApplicationPackage[]): string[] => packages.map((p) => `${p.name}@${p.version}`).sort();
const listOne = (location: string, content: Buffer) => cargoAuditableLister.list(location, content);
/** A program whose `.dep-v0` section holds section, as a 64-bit little-endian executable. */
const withSection = (section: Buffer, shape = ELF_SHAPES[0]!) => elfWithData(shape, section, '.dep-v0');
const auditData = (value: unknown) => withSection(deflateSync(JSON.stringify(value)));
const crate = (name: string, version: string, more: Record<string, unknown> = {}) => ({ name, version, source: 'crates.io', ...more });

describe('cargo auditable lister on a real program', () => {
  it('lists exactly the crates.io runtime packages the recorder decoded from its section', () => {
    expect(ORACLE).toEqual(['aho-corasick@0.7.18', 'memchr@2.4.1', 'num-traits@0.2.15', 'regex@1.5.4', 'regex-syntax@0.6.25']);
    const { packages, unreadable } = listOne('usr/local/bin/cratefixture', PROGRAM);
    expect(unreadable).toEqual([]);
    expect(pairs(packages)).toEqual([...ORACLE].sort());
    expect(packages.every((p) => p.ecosystem === 'crates.io' && p.location === 'usr/local/bin/cratefixture')).toBe(true);
  });

  it('lists nothing, and reports nothing, for the same program without the section', () => {
    const renamed = Buffer.from(PROGRAM);
    const at = renamed.indexOf('\0.dep-v0\0', 0, 'latin1');
    expect(at).toBeGreaterThan(0);
    renamed.write('.dep-v9', at + 1, 'latin1');
    expect(sectionByName(readElf(renamed)!, '.dep-v0')).toBeUndefined();
    expect(listOne('usr/local/bin/cratefixture', renamed)).toEqual({ packages: [], unreadable: [] });
  });

  it('lists nothing from a Go program, which it considers and selects as it does any ELF program', async () => {
    expect(cargoAuditableLister.selects(GO_PROGRAM.subarray(0, cargoAuditableLister.headBytes))).toBe(true);
    expect(await listEachFile(cargoAuditableLister, new Map([['usr/local/bin/gofixture', GO_PROGRAM]]))).toEqual({
      packages: [],
      unreadable: [],
    });
  });
});

describe('what the audit data lists', () => {
  it('lists crates.io runtime packages, the root among them when it comes from crates.io', () => {
    const { packages, unreadable } = listOne(
      'usr/local/cargo/bin/ripgrep',
      auditData({
        format: 1,
        packages: [
          crate('ripgrep', '14.1.0', { root: true, dependencies: [1, 2] }),
          crate('regex', '1.10.2', { kind: 'runtime' }),
          // Ran at build time only: its code is not in the program.
          crate('cc', '1.0.83', { kind: 'build' }),
          // No kind cargo auditable writes, but a development-only crate is in no program either.
          crate('criterion', '0.5.1', { kind: 'dev' }),
          { name: 'grep-cli', version: '0.1.10', source: 'local' },
          { name: 'globset', version: '0.4.14', source: 'git' },
          { name: 'internal-crate', version: '1.0.0', source: 'registry' },
          { name: 'other-source', version: '1.0.0', source: 'svn' },
          // The same crate twice is listed once.
          crate('regex', '1.10.2'),
        ],
      }),
    );
    expect(unreadable).toEqual([]);
    expect(packages).toEqual([
      { ecosystem: 'crates.io', name: 'ripgrep', version: '14.1.0', location: 'usr/local/cargo/bin/ripgrep' },
      { ecosystem: 'crates.io', name: 'regex', version: '1.10.2', location: 'usr/local/cargo/bin/ripgrep' },
    ]);
  });

  it('leaves out a root built from a local checkout, as any local crate', () => {
    const program = auditData({ packages: [{ name: 'app', version: '0.1.0', source: 'local', root: true }, crate('libc', '0.2.150')] });
    expect(pairs(listOne('app/server', program).packages)).toEqual(['libc@0.2.150']);
  });

  it('finds the section in 32- and 64-bit programs of either byte order', () => {
    for (const shape of ELF_SHAPES) {
      const program = withSection(deflateSync(JSON.stringify({ packages: [crate('memchr', '2.7.1')] })), shape);
      expect(pairs(listOne('bin/tool', program).packages), shape.name).toEqual(['memchr@2.7.1']);
    }
  });

  it('lists nothing from an ELF program without the section', async () => {
    const files = new Map([
      ['usr/bin/c-program', elfWithData(ELF_SHAPES[0]!, Buffer.from('plain data'), '.data')],
      ['usr/lib/libfoo.so', elfWithData(ELF_SHAPES[3]!, Buffer.alloc(64), '.rodata')],
    ]);
    expect(await listEachFile(cargoAuditableLister, files)).toEqual({ packages: [], unreadable: [] });
  });
});

describe('audit data it cannot read', () => {
  /** The one reason the program at b/program is reported unreadable for. */
  const whyOf = (program: Buffer): string[] => {
    const { packages, unreadable } = listOne('b/program', program);
    expect(packages).toEqual([]);
    expect(unreadable.every((u) => u.location === 'b/program')).toBe(true);
    return unreadable.map((u) => u.why);
  };

  it('reports a section that is not zlib data, or ends early', () => {
    expect(whyOf(withSection(Buffer.from('{"packages":[]}')))).toEqual(['its .dep-v0 section: not zlib data: incorrect header check']);
    const truncated = deflateSync(JSON.stringify({ packages: [crate('regex', '1.5.4')] })).subarray(0, 12);
    expect(whyOf(withSection(truncated))).toEqual(['its .dep-v0 section: not zlib data: unexpected end of file']);
  });

  it('stops inflating a zlib bomb at the cap', () => {
    // Twice the cap from 16 KiB of section: a real bomb's ratio, made quickly.
    const bomb = deflateSync(Buffer.alloc(2 * MAX_AUDIT_DATA_BYTES, ' '), { level: 9 });
    expect(bomb.length).toBeLessThan(32 * 1024);
    expect(whyOf(withSection(bomb))).toEqual([`its .dep-v0 section: inflates to more than ${MAX_AUDIT_DATA_BYTES} bytes`]);
  });

  it('reports JSON that is not audit data', () => {
    expect(whyOf(withSection(deflateSync('{"packages": [')))).toEqual([
      expect.stringMatching(/^its \.dep-v0 section: not JSON: /) as string,
    ]);
    for (const value of [[], { packages: {} }, { dependencies: [] }, 'packages', null]) {
      expect(whyOf(auditData(value)), JSON.stringify(value)).toEqual(['its .dep-v0 section: not cargo auditable data: no packages array']);
    }
  });

  it('reports each package it cannot read, and lists the others', () => {
    const { packages, unreadable } = listOne(
      'b/program',
      auditData({
        packages: [
          { version: '1.0.0', source: 'crates.io' },
          { name: 'regex', source: 'crates.io' },
          { name: 'memchr', version: '2.4.1' },
          crate('log', '0.4.20', { kind: 'proc-macro' }),
          crate('serde', 'one'),
          'aho-corasick 0.7.18',
          crate('libc', '0.2.150'),
        ],
      }),
    );
    expect(pairs(packages)).toEqual(['libc@0.2.150']);
    expect(unreadable.map((u) => u.why)).toEqual([
      'its .dep-v0 section: packages[0]: no name',
      'its .dep-v0 section: regex: no version',
      'its .dep-v0 section: memchr: no source',
      'its .dep-v0 section: log: kind "proc-macro" is neither runtime nor build',
      'its .dep-v0 section: serde: version "one" is not a semver version',
      'its .dep-v0 section: packages[5]: not an object',
    ]);
  });

  it('reports a section that lies outside the file', () => {
    const program = withSection(deflateSync('{"packages":[]}'));
    // Section 1's sh_offset (64-bit little-endian section headers, e_shoff at 0x28).
    const shoff = Number(program.readBigUInt64LE(0x28));
    program.writeBigUInt64LE(BigInt(program.length), shoff + 64 + 0x18);
    expect(whyOf(program)).toEqual(['its .dep-v0 section: lies outside the file']);
  });

  it('never throws on a corrupted or truncated real program', () => {
    const elf = readElf(PROGRAM)!;
    const section = sectionByName(elf, '.dep-v0')!;
    const shoff = Number(PROGRAM.readBigUInt64LE(0x28));
    const names = elf.sections[elf.sectionNames]!;
    const regions: [number, number][] = [
      [0, 0x40],
      [section.offset, section.offset + section.size],
      [names.offset, names.offset + names.size],
      [shoff, PROGRAM.length],
    ];
    const next = prng(0xca5);
    // One copy, corrupted and restored in place each run: copying the program 400 times costs more than reading it.
    const copy = Buffer.from(PROGRAM);
    let outcomes = 0;
    for (let run = 0; run < 400; run++) {
      const flipped: number[] = [];
      for (let flips = 1 + Math.floor(next() * 8); flips > 0; flips--) {
        const [start, end] = regions[Math.floor(next() * regions.length)]!;
        const at = start + Math.floor(next() * (end - start));
        flipped.push(at);
        copy[at] = Math.floor(next() * 256);
      }
      const file = next() < 0.2 ? copy.subarray(0, Math.floor(next() * copy.length)) : copy;
      const result = listOne('app/program', file);
      outcomes += result.packages.length + result.unreadable.length;
      for (const at of flipped) copy[at] = PROGRAM[at]!;
    }
    expect(outcomes).toBeGreaterThan(0);
  });
});
