import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readBuildInfo } from '../../src/ecosystems/go/buildinfo.js';
import { ELF_PROGRAM_HEAD_BYTES, isElfProgram, readElf } from '../../src/ecosystems/elf.js';
import { goBinaryLister } from '../../src/ecosystems/go/lister.js';
import type { ApplicationPackage } from '../../src/model/indexing.js';
import { listEachFile } from '../helpers/file-listers.js';
import { prng } from '../helpers/prng.js';
import { ELF_SHAPES, buildInfoBlob, elfWithData, framed, withoutSectionHeaders } from './go-elf.js';
import { expectedPackages, parseGoVersionM } from './go-oracle.js';

/**
 * The lister against `go version -m` (go1.19.8), recorded by test/fixtures/go/record.sh for the
 * fixture binaries it builds and for the Debian Go programs: the committed amd64 fixture is read
 * always, the other builds and the Debian programs (installed in CI) when present.
 * go-lister-oracle.test.ts runs `go version -m` itself where Go is installed.
 */
const FIXTURES = fileURLToPath(new URL('../fixtures/go/', import.meta.url));
const RECORDED = JSON.parse(readFileSync(`${FIXTURES}go-version-m.json`, 'utf8')) as { binaries: Record<string, string> };
const COMMITTED = 'bin/gofixture-amd64';

const fileOf = (key: string): string => (key.startsWith('/') ? key : FIXTURES + key);
const layerPath = (key: string): string => (key.startsWith('/') ? key.slice(1) : `app/${key}`);
const pairs = (packages: readonly ApplicationPackage[]): Set<string> => new Set(packages.map((p) => `${p.name}@${p.version}`));
const listOne = (location: string, content: Buffer) => goBinaryLister.list(location, content);

/** The packages each recorded binary holds, by what go printed: the counts the report quotes. */
const EXPECTED_COUNTS: Record<string, number> = {
  'bin/gofixture-amd64': 4,
  'bin/gofixture-amd64-unstripped': 4,
  'bin/gofixture-386': 4,
  'bin/gofixture-s390x': 4,
  '/usr/bin/docker-registry': 1,
  '/usr/bin/skopeo': 1,
  '/usr/bin/promtool': 1,
};

describe('Go lister on real binaries, against go version -m', () => {
  it('has the committed fixture', () => expect(existsSync(fileOf(COMMITTED))).toBe(true));

  for (const [key, output] of Object.entries(RECORDED.binaries)) {
    it.skipIf(!existsSync(fileOf(key)))(`lists exactly what go version -m shows of ${key}`, () => {
      const oracle = parseGoVersionM(output);
      const binary = readFileSync(fileOf(key));
      const elf = readElf(binary);
      expect(elf).toBeDefined();
      expect(readBuildInfo(elf!)).toEqual(oracle);
      const location = layerPath(key);
      const { packages, unreadable } = listOne(location, binary);
      expect(unreadable).toEqual([]);
      expect(pairs(packages)).toEqual(expectedPackages(oracle));
      expect(packages).toHaveLength(EXPECTED_COUNTS[key]!);
      expect(packages.every((p) => p.ecosystem === 'go' && p.location === location)).toBe(true);
    });
  }

  it('lists the fixture modules as vulnerability matching needs them', () => {
    const { packages } = listOne('app/server', readFileSync(fileOf(COMMITTED)));
    expect(packages.map((p) => `${p.name}@${p.version}`)).toEqual([
      'stdlib@go1.19.8',
      // dep example.com/tarsier/localfork v0.1.0 => ./localfork: a directory, not a published version.
      'github.com/dgrijalva/jwt-go@v3.2.0+incompatible',
      'github.com/kballard/go-shellquote@v0.0.0-20180428030007-95032a82bc51',
      // dep github.com/pkg/errors v0.8.0 => v0.9.1: the replacement is what was linked.
      'github.com/pkg/errors@v0.9.1',
    ]);
  });

  it('finds the build information through the data segment when section headers are gone', () => {
    const binary = withoutSectionHeaders(readFileSync(fileOf(COMMITTED)));
    expect(readElf(binary)?.sections).toEqual([]);
    const { packages, unreadable } = listOne('app/server', binary);
    expect(unreadable).toEqual([]);
    expect(pairs(packages)).toEqual(expectedPackages(parseGoVersionM(RECORDED.binaries[COMMITTED]!)));
  });
});

const MODINFO = framed(
  [
    'path\texample.com/cmd/tool',
    'mod\texample.com/cmd\tv1.4.2\th1:main=',
    'dep\tgolang.org/x/net\tv0.0.0-20190620200207-3b0461eec859\th1:net=',
    '=>\tgolang.org/x/net\tv0.7.0\th1:netfix=',
    'dep\tgolang.org/x/text\tv0.3.7',
    'dep\texample.com/patched\tv1.0.0\th1:p=',
    '=>\t../patched\t\t',
    'build\tGOARCH=amd64',
    '',
  ].join('\n'),
);
const MODINFO_PACKAGES = ['stdlib@go1.16.15', 'example.com/cmd@v1.4.2', 'golang.org/x/net@v0.7.0', 'golang.org/x/text@v0.3.7'];

describe('Go build information layouts', () => {
  for (const shape of ELF_SHAPES) {
    for (const inline of [true, false]) {
      it(`reads ${inline ? 'inline (Go 1.18 on)' : 'pointed-to (before Go 1.18)'} build information of a ${shape.name} binary`, () => {
        const binary = elfWithData(shape, buildInfoBlob(shape, inline, 'go1.16.15', MODINFO));
        expect(readElf(binary)).toMatchObject({ is64: shape.is64, bigEndian: shape.bigEndian });
        for (const file of [binary, withoutSectionHeaders(binary)]) {
          const { packages, unreadable } = listOne('bin/tool', file);
          expect(unreadable).toEqual([]);
          expect(packages.map((p) => `${p.name}@${p.version}`)).toEqual(MODINFO_PACKAGES);
        }
      });
    }
  }

  it('keeps the toolchain release without the experiments runtime.Version() appends', () => {
    const shape = ELF_SHAPES[0]!;
    const { packages } = listOne('b', elfWithData(shape, buildInfoBlob(shape, true, 'go1.21.3 X:boringcrypto', framed(''))));
    expect(pairs(packages)).toEqual(new Set(['stdlib@go1.21.3']));
  });

  it('lists no stdlib for a development toolchain, which has no release to match', () => {
    const shape = ELF_SHAPES[0]!;
    const info = framed('mod\texample.com/m\tv1.0.0\t\n');
    const { packages, unreadable } = listOne(
      'b',
      elfWithData(shape, buildInfoBlob(shape, true, 'devel go1.22-1c00f0a Tue Jan 2 2024', info)),
    );
    expect(unreadable).toEqual([]);
    expect(pairs(packages)).toEqual(new Set(['example.com/m@v1.0.0']));
  });

  it('lists only stdlib for a binary built outside module mode (no framed module information)', () => {
    const shape = ELF_SHAPES[2]!;
    const { packages } = listOne('b', elfWithData(shape, buildInfoBlob(shape, false, 'go1.12.17', Buffer.alloc(0))));
    expect(pairs(packages)).toEqual(new Set(['stdlib@go1.12.17']));
  });
});

describe('files that are not Go binaries', () => {
  const shape = ELF_SHAPES[0]!;

  it('lists nothing, and reports nothing, for a file that is not ELF or an ELF file without build information', async () => {
    const files = new Map([
      ['usr/bin/script', Buffer.from('#!/bin/sh\necho hello\n')],
      ['usr/bin/empty', Buffer.alloc(0)],
      ['usr/bin/elf-magic-only', Buffer.from('\x7fELF', 'latin1')],
      ['usr/bin/c-program', elfWithData(shape, Buffer.from('plain data, no build information'), '.data')],
      ['usr/lib/libfoo.so', elfWithData(ELF_SHAPES[3]!, Buffer.alloc(64), '.data')],
    ]);
    expect(await listEachFile(goBinaryLister, files)).toEqual({ packages: [], unreadable: [] });
  });

  it('reports a .go.buildinfo section it cannot decode, with why', async () => {
    const good = buildInfoBlob(shape, true, 'go1.20.4', MODINFO);
    const noMagic = Buffer.from(good);
    noMagic.write('not magic', 1, 'latin1');
    const tooLong = Buffer.from(good);
    tooLong[32] = 0xff; // a varint that runs far past the section
    tooLong[33] = 0xff;
    tooLong[34] = 0x7f;
    const badLine = buildInfoBlob(shape, true, 'go1.20.4', framed('dep\tonly-a-path\n'));
    const orphan = buildInfoBlob(shape, true, 'go1.20.4', framed('=>\tx\tv1.0.0\t\n'));
    const oldOutside = buildInfoBlob(shape, false, 'go1.16', MODINFO, 0x7000_0000);
    const files = new Map([
      ['a/no-magic', elfWithData(shape, noMagic)],
      ['b/too-long', elfWithData(shape, tooLong)],
      ['c/bad-line', elfWithData(shape, badLine)],
      ['d/orphan', elfWithData(shape, orphan)],
      ['e/old-outside', elfWithData(shape, oldOutside)],
    ]);
    expect(await listEachFile(goBinaryLister, files)).toEqual({
      packages: [],
      unreadable: [
        { location: 'a/no-magic', why: 'its .go.buildinfo section has no build information header' },
        { location: 'b/too-long', why: 'its Go version string runs past the build information' },
        { location: 'c/bad-line', why: 'line 1 of its module information has 1 columns, not 2 or 3' },
        { location: 'd/orphan', why: 'line 1 of its module information replaces no module' },
        { location: 'e/old-outside', why: 'its Go version pointer leads outside the file' },
      ],
    });
  });
});

describe('which files the Go lister reads', () => {
  it('considers executable files wherever they are, and nothing without an execute permission', () => {
    for (const path of ['usr/local/bin/caddy', 'bin/app', 'app/server', 'ko-app/controller', 'opt/tool/tool.bin']) {
      expect(goBinaryLister.considers(path, 0o755), path).toBe(true);
      expect(goBinaryLister.considers(path, 0o700), path).toBe(true);
      expect(goBinaryLister.considers(path, 0o644), path).toBe(false);
    }
  });

  it('recognises candidates by their first bytes: ELF executables and shared objects', () => {
    const binary = readFileSync(fileOf(COMMITTED));
    expect(isElfProgram(binary.subarray(0, ELF_PROGRAM_HEAD_BYTES))).toBe(true);
    expect(isElfProgram(elfWithData(ELF_SHAPES[3]!, Buffer.alloc(16)))).toBe(true);
    expect(isElfProgram(binary.subarray(0, ELF_PROGRAM_HEAD_BYTES - 1))).toBe(false);
    expect(isElfProgram(Buffer.from('#!/bin/sh\necho this is a script'))).toBe(false);
    const object = Buffer.from(binary.subarray(0, ELF_PROGRAM_HEAD_BYTES));
    object.writeUInt16LE(1, 16); // ET_REL: an object file, not linked
    expect(isElfProgram(object)).toBe(false);
  });
});

describe('hostile input', () => {
  /**
   * Corruption where the reader looks: the ELF header, the program and section header tables,
   * the section names, and the build information, plus truncation. Every outcome is allowed but
   * throwing or hanging; each run must stay fast.
   */
  it('never throws or hangs on a corrupted or truncated real binary', () => {
    const binary = readFileSync(fileOf(COMMITTED));
    const elf = readElf(binary)!;
    const regions: [number, number][] = [[0, 0x40]];
    if (elf.segments.length > 0) regions.push([0x40, 0x40 + 56 * elf.segments.length]);
    const shoff = Number(binary.readBigUInt64LE(0x28));
    regions.push([shoff, binary.length]);
    const names = elf.sections[elf.sectionNames]!;
    regions.push([names.offset, names.offset + names.size]);
    const info = elf.sections.find((s) => s.size > 0 && binary.toString('latin1', s.offset + 1, s.offset + 14) === ' Go buildinf:');
    expect(info).toBeDefined();
    regions.push([info!.offset, info!.offset + 512]);
    const next = prng(0x60b1);
    let outcomes = 0;
    for (let run = 0; run < 400; run++) {
      const copy = Buffer.from(binary);
      const flips = 1 + Math.floor(next() * 8);
      for (let i = 0; i < flips; i++) {
        const [start, end] = regions[Math.floor(next() * regions.length)]!;
        copy[start + Math.floor(next() * (end - start))] = Math.floor(next() * 256);
      }
      const file = next() < 0.2 ? copy.subarray(0, Math.floor(next() * copy.length)) : copy;
      const started = performance.now();
      const result = listOne('app/server', file);
      expect(performance.now() - started).toBeLessThan(1000);
      outcomes += result.packages.length + result.unreadable.length;
    }
    expect(outcomes).toBeGreaterThan(0);
  });

  it('never throws on random bytes behind an ELF header, or on absurd counts and offsets', () => {
    const next = prng(0xe1f);
    for (let run = 0; run < 2000; run++) {
      const shape = ELF_SHAPES[run % ELF_SHAPES.length]!;
      const file = elfWithData(shape, buildInfoBlob(shape, run % 2 === 0, 'go1.20.4', MODINFO));
      const flips = 1 + Math.floor(next() * 16);
      for (let i = 0; i < flips; i++) file[4 + Math.floor(next() * (file.length - 4))] = next() < 0.5 ? 0xff : Math.floor(next() * 256);
      expect(() => listOne('x', file)).not.toThrow();
    }
  });
});
