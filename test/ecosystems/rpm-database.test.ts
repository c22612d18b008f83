import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readBerkeleyDb } from '../../src/ecosystems/rpm/bdb.js';
import { parseRpmHeader, type RpmHeader } from '../../src/ecosystems/rpm/header.js';
import { rpmLister, sourcePackage } from '../../src/ecosystems/rpm/lister.js';
import { readNdb } from '../../src/ecosystems/rpm/ndb.js';
import { readSqliteRpmdb } from '../../src/ecosystems/rpm/sqlite.js';
import type { Package } from '../../src/model/indexing.js';
import { prng } from '../helpers/prng.js';
import { ndbDatabase, rpmHeader } from '../helpers/rpmdb.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/rpm/', import.meta.url));
/** Every corrupt-input test must finish quickly: a hang is a failure, not a slow pass. */
const QUICK = 5_000;

type Reader = (buf: Buffer) => Buffer[];
const READERS: Readonly<Record<string, Reader>> = {
  Packages: readBerkeleyDb,
  'Packages.db': readNdb,
  'rpmdb.sqlite': readSqliteRpmdb,
};

interface ExpectedPackage {
  name: string;
  epoch: number | null;
  version: string;
  release: string;
  arch: string | null;
  sourceRpm: string | null;
  /** Absent in the fixtures, whose packages were built outside any module: null. */
  modularityLabel?: string | null;
}

interface Fixture {
  readonly dir: string;
  readonly file: string;
  readonly read: Reader;
  readonly bytes: Buffer;
  readonly count: number;
  readonly packages: ExpectedPackage[];
}

function loadFixtures(): Fixture[] {
  return readdirSync(FIXTURES, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => {
      const dir = entry.name;
      const file = readdirSync(join(FIXTURES, dir)).find((name) => name in READERS);
      if (!file) throw new Error(`fixture ${dir} has no rpm database`);
      const expected = JSON.parse(readFileSync(join(FIXTURES, dir, 'expected.json'), 'utf8')) as {
        count: number;
        packages: ExpectedPackage[];
      };
      const { count } = expected;
      const packages = expected.packages.map((p) => ({ ...p, modularityLabel: p.modularityLabel ?? null }));
      return { dir, file, read: READERS[file]!, bytes: readFileSync(join(FIXTURES, dir, file)), count, packages };
    });
}

const fixtures = loadFixtures();

function fixture(dir: string): Fixture {
  const found = fixtures.find((f) => f.dir === dir);
  if (!found) throw new Error(`no fixture ${dir}`);
  return found;
}

function headersOf(f: Fixture, bytes: Buffer = f.bytes): RpmHeader[] {
  return f.read(bytes).map(parseRpmHeader);
}

/** Runs fn, which must throw a plain Error (not a RangeError or TypeError from a stray read). */
function corruptionError(fn: () => unknown): Error {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, 'expected an Error to be thrown').toBeInstanceOf(Error);
  const err = caught as Error;
  expect(err.constructor, `${err.name}: ${err.message}`).toBe(Error);
  expect(err.message.length).toBeGreaterThan(10);
  return err;
}

/** Reads db (and parses its headers): either succeeds or throws a plain Error. */
function readsOrFailsCleanly(read: Reader, db: Buffer): void {
  try {
    read(db).forEach(parseRpmHeader);
  } catch (err) {
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).constructor, `${(err as Error).name}: ${(err as Error).message}`).toBe(Error);
  }
}

// ---- builders for small databases with chosen contents ----

/** Rewrites a little-endian Berkeley DB hash database as the big-endian machine would have written it. */
function toBigEndianBdb(le: Buffer): Buffer {
  const be = Buffer.from(le);
  const swap32 = (at: number): void => void be.writeUInt32BE(le.readUInt32LE(at), at);
  const swap16 = (at: number): void => void be.writeUInt16BE(le.readUInt16LE(at), at);
  for (const at of [8, 12, 16, 20, 28, 32, 36, 40, 44, 48]) swap32(at);
  for (let at = 72; at < 224; at += 4) swap32(at); // max_bucket … spares[]
  const pageSize = le.readUInt32LE(20);
  const lastPgno = le.readUInt32LE(32);
  for (let pgno = 1; pgno <= lastPgno; pgno++) {
    const base = pgno * pageSize;
    const type = le.readUInt8(base + 25);
    if (type === 0) continue;
    [8, 12, 16].forEach((at) => swap32(base + at));
    [20, 22].forEach((at) => swap16(base + at));
    if (type !== 13) continue;
    const entries = le.readUInt16LE(base + 20);
    let end = pageSize;
    for (let i = 0; i < entries; i++) {
      swap16(base + 26 + 2 * i);
      const start = le.readUInt16LE(base + 26 + 2 * i);
      const itemType = le.readUInt8(base + start);
      if (itemType === 3) [4, 8].forEach((at) => swap32(base + start + at));
      if (itemType === 1 && end - start === 5) swap32(base + start + 1); // 4-byte integer key or counter
      end = start;
    }
  }
  return be;
}

/** The overflow page numbers of the first off-page item of a little-endian BDB fixture, in chain order. */
function bdbOverflowChain(db: Buffer): number[] {
  const pageSize = db.readUInt32LE(20);
  for (let pgno = 1; pgno <= db.readUInt32LE(32); pgno++) {
    const base = pgno * pageSize;
    if (db.readUInt8(base + 25) !== 13) continue;
    for (let i = 0; i < db.readUInt16LE(base + 20); i++) {
      const start = db.readUInt16LE(base + 26 + 2 * i);
      if (db.readUInt8(base + start) !== 3) continue;
      const chain: number[] = [];
      for (let p = db.readUInt32LE(base + start + 4); p !== 0; p = db.readUInt32LE(p * pageSize + 16)) chain.push(p);
      return chain;
    }
  }
  throw new Error('no off-page item');
}

function commandExists(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// ---- tests ----

describe('rpm header blobs', () => {
  it('decodes name, epoch, version, release, arch and source rpm', () => {
    const blob = rpmHeader({
      name: 'bash',
      epoch: 2,
      version: '5.1.8',
      release: '6.el9',
      arch: 'x86_64',
      sourceRpm: 'bash-5.1.8-6.el9.src.rpm',
    });
    expect(parseRpmHeader(blob)).toEqual({
      name: 'bash',
      epoch: 2,
      version: '5.1.8',
      release: '6.el9',
      arch: 'x86_64',
      sourceRpm: 'bash-5.1.8-6.el9.src.rpm',
      modularityLabel: null,
    });
  });

  it('decodes the modularity label (tag 5096) of a package built in a module stream', () => {
    const label = 'idm:DL1:8010020191114162016:5a9b8b9b';
    const blob = rpmHeader({
      name: 'ipa-client',
      version: '4.8.0',
      release: '13.module+el8.1.0+4923+c6efe041',
      arch: 'x86_64',
      modularityLabel: label,
    });
    expect(parseRpmHeader(blob).modularityLabel).toBe(label);
  });

  it('reports absent EPOCH, ARCH and SOURCERPM as null, and keeps an explicit epoch 0', () => {
    expect(parseRpmHeader(rpmHeader({ name: 'gpg-pubkey', version: 'd832c631', release: '63977702' }))).toEqual({
      name: 'gpg-pubkey',
      epoch: null,
      version: 'd832c631',
      release: '63977702',
      arch: null,
      sourceRpm: null,
      modularityLabel: null,
    });
    expect(parseRpmHeader(rpmHeader({ name: 'a', version: '1', release: '1', epoch: 0 })).epoch).toBe(0);
  });

  const valid = rpmHeader({ name: 'zlib', version: '1.2.11', release: '40.el9', epoch: 1, arch: 'x86_64' });
  const mutate = (edit: (b: Buffer) => void): Buffer => {
    const b = Buffer.from(valid);
    edit(b);
    return b;
  };
  // Entry 0 is NAME (offset 0), entry 3 is ARCH, entry 4 is EPOCH: see rpmHeader().
  const corrupt: [string, Buffer, RegExp][] = [
    ['is empty', Buffer.alloc(0), /shorter than its 8-byte preamble/],
    ['has no entries', mutate((b) => b.writeUInt32BE(0, 0)), /bad index count 0/],
    ['claims 2^31 entries', mutate((b) => b.writeUInt32BE(0x80000000, 0)), /bad index count/],
    ['claims a huge data store', mutate((b) => b.writeUInt32BE(0xfffffff0, 4)), /bad data length/],
    ['is truncated', valid.subarray(0, valid.length - 3), /need/],
    ['has trailing bytes', Buffer.concat([valid, Buffer.alloc(4)]), /need/],
    ['points past its data', mutate((b) => b.writeUInt32BE(0x7fffffff, 8 + 8)), /beyond its/],
    ['has an unknown type', mutate((b) => b.writeUInt32BE(42, 8 + 4)), /unknown type 42/],
    ['has a misaligned INT32', mutate((b) => b.writeUInt32BE(b.readUInt32BE(8 + 4 * 16 + 8) + 1, 8 + 4 * 16 + 8)), /misaligned/],
    ['has too many INT32 items', mutate((b) => b.writeUInt32BE(1000, 8 + 4 * 16 + 12)), /overrun/],
    ['has an unterminated string', mutate((b) => b.fill(0x41, 8 + 5 * 16 + b.readUInt32BE(8 + 3 * 16 + 8))), /runs past/],
    ['has no NAME', mutate((b) => b.writeInt32BE(999, 8)), /no NAME tag/],
    ['has a numeric NAME', mutate((b) => b.writeUInt32BE(4, 8 + 4)), /NAME tag has type 4/],
  ];
  it(
    'does not scan the data store once per index entry',
    () => {
      // 65535 entries all claiming 1 MiB of empty strings: checking every entry's strings would
      // take 65535 passes over the blob; only the strings that are read get scanned.
      const il = 0xffff;
      const dl = 1 << 20;
      const blob = Buffer.alloc(8 + il * 16 + dl);
      blob.writeUInt32BE(il, 0);
      blob.writeUInt32BE(dl, 4);
      for (let i = 0; i < il; i++) {
        blob.writeInt32BE(1100 + i, 8 + i * 16);
        blob.writeUInt32BE(8, 12 + i * 16); // STRING_ARRAY
        blob.writeUInt32BE(dl, 20 + i * 16);
      }
      const started = performance.now();
      expect(corruptionError(() => parseRpmHeader(blob)).message).toBe('rpm header has no NAME tag');
      expect(performance.now() - started).toBeLessThan(1_000);
    },
    QUICK,
  );

  for (const [what, blob, message] of corrupt) {
    it(
      `rejects a header that ${what}`,
      () => {
        expect(corruptionError(() => parseRpmHeader(blob)).message).toMatch(message);
      },
      QUICK,
    );
  }
});

describe('rpm database fixtures', () => {
  it('covers every format', () => {
    expect(new Set(fixtures.map((f) => f.file))).toEqual(new Set(Object.keys(READERS)));
  });

  for (const f of fixtures) {
    it(`${f.dir}/${f.file}: reads exactly the ${f.count} packages rpm -qa listed, in order`, () => {
      const headers = headersOf(f);
      expect(headers).toHaveLength(f.count);
      expect(headers).toEqual(f.packages);
    });
  }

  it('reads a big-endian Berkeley DB like the little-endian one', () => {
    for (const dir of ['bdb-dive', 'bdb-epoch', 'rhel8-libuuid-bdb']) {
      const f = fixture(dir);
      const be = toBigEndianBdb(f.bytes);
      expect(be.equals(f.bytes)).toBe(false);
      expect(readBerkeleyDb(be).map(parseRpmHeader)).toEqual(f.packages);
    }
  });
});

/** What the lister must report for an expected package list, computed independently. */
function listedFrom(expected: readonly ExpectedPackage[]): Package[] {
  const out = new Map<string, Package>();
  for (const p of expected) {
    if (p.name === 'gpg-pubkey') continue;
    const epoch = p.epoch ? `${p.epoch}:` : '';
    const version = `${epoch}${p.version}-${p.release}`;
    // SOURCERPM is <name>-<version>-<release>.src.rpm; the source takes the binary's epoch.
    const source = /^(.+)-([^-]+)-([^-]+)\.(?:no)?src\.rpm$/.exec(p.sourceRpm ?? '');
    const key = `${p.name} ${version}`;
    // One package per name and version, with the architectures of all its copies.
    const arches = [...new Set([...(out.get(key)?.arches ?? []), ...(p.arch ? [p.arch] : [])])].sort();
    out.set(key, {
      ...(out.get(key) ?? {
        name: p.name,
        version,
        ...(source ? { source: { name: source[1]!, version: `${epoch}${source[2]}-${source[3]}` } } : {}),
      }),
      ...(arches.length > 0 ? { arches } : {}),
    });
  }
  return [...out.values()];
}

const files = (entries: Record<string, Buffer>): Map<string, Buffer> => new Map(Object.entries(entries));

describe('sourcePackage', () => {
  it('reads the name and version-release of a SOURCERPM file name, with the binary epoch', () => {
    expect(sourcePackage('perl-5.38.2-506.azl3.src.rpm', null)).toEqual({ name: 'perl', version: '5.38.2-506.azl3' });
    expect(sourcePackage('kernel-headers-6.6.47.1-1.azl3.src.rpm', 0)).toEqual({ name: 'kernel-headers', version: '6.6.47.1-1.azl3' });
    expect(sourcePackage('openssl-3.0.8-1.amzn2023.0.4.src.rpm', 1)).toEqual({ name: 'openssl', version: '1:3.0.8-1.amzn2023.0.4' });
    expect(sourcePackage('foo-1.0-1.nosrc.rpm', null)).toEqual({ name: 'foo', version: '1.0-1' });
    expect(sourcePackage('(none)', null)).toBeUndefined();
  });
});

describe('rpmLister', () => {
  const SQLITE_PATHS = ['usr/lib/sysimage/rpm/rpmdb.sqlite', 'var/lib/rpm/rpmdb.sqlite'];
  const NDB_PATHS = ['usr/lib/sysimage/rpm/Packages.db', 'var/lib/rpm/Packages.db'];
  const BDB_PATHS = ['usr/lib/sysimage/rpm/Packages', 'var/lib/rpm/Packages'];
  const sqlite = fixture('amazonlinux2023-sqlite');
  const ndb = fixture('sle15-bci-ndb');
  const bdb = fixture('bdb-epoch');

  it('describes itself', () => {
    expect(rpmLister.name).toBe('rpm');
    expect(rpmLister.format).toBe('rpm');
    expect(rpmLister.databasePaths).toEqual([
      'usr/lib/sysimage/rpm/rpmdb.sqlite',
      'var/lib/rpm/rpmdb.sqlite',
      'usr/lib/sysimage/rpm/Packages.db',
      'var/lib/rpm/Packages.db',
      'usr/lib/sysimage/rpm/Packages',
      'var/lib/rpm/Packages',
    ]);
  });

  it('wants the database files and nothing else', () => {
    for (const path of [...SQLITE_PATHS, ...NDB_PATHS, ...BDB_PATHS]) expect(rpmLister.wants(path)).toBe(true);
    for (const path of [
      'var/lib/rpm/Name',
      'var/lib/rpm/',
      'var/lib/rpm/rpmdb.sqlite-wal',
      'etc/var/lib/rpm/Packages',
      '/var/lib/rpm/Packages',
    ]) {
      expect(rpmLister.wants(path)).toBe(false);
    }
  });

  it('returns undefined when the layer holds no rpm database', () => {
    expect(rpmLister.list(files({}))).toBeUndefined();
    expect(rpmLister.list(files({ 'var/lib/rpm/Name': Buffer.alloc(8) }))).toBeUndefined();
  });

  it('lists a SQLite database: epochs kept, gpg-pubkey skipped', () => {
    const listed = rpmLister.list(files({ 'var/lib/rpm/rpmdb.sqlite': sqlite.bytes }));
    expect(listed).toEqual(listedFrom(sqlite.packages));
    expect(listed).toHaveLength(102);
    expect(listed).toContainEqual({
      name: 'openssl-libs',
      version: '1:3.0.8-1.amzn2023.0.4',
      source: { name: 'openssl', version: '1:3.0.8-1.amzn2023.0.4' },
      arches: ['x86_64'],
    });
    expect(listed).toContainEqual({
      name: 'crypto-policies',
      version: '20220428-1.gitdfb10ea.amzn2023.0.2',
      source: { name: 'crypto-policies', version: '20220428-1.gitdfb10ea.amzn2023.0.2' },
      arches: ['noarch'],
    });
    expect(listed?.some((p) => p.name === 'gpg-pubkey')).toBe(false);
  });

  it('lists an ndb database', () => {
    const listed = rpmLister.list(files({ 'usr/lib/sysimage/rpm/Packages.db': ndb.bytes }));
    expect(listed).toEqual(listedFrom(ndb.packages));
    expect(listed).toHaveLength(36);
    expect(listed?.[0]).toEqual({
      name: 'system-user-root',
      version: '20190513-3.3.1',
      source: { name: 'system-user-root', version: '20190513-3.3.1' },
      arches: ['noarch'],
    });
  });

  it('lists a Berkeley DB database', () => {
    expect(rpmLister.list(files({ 'var/lib/rpm/Packages': bdb.bytes }))).toEqual([
      { name: 'hello', version: '1:0.0.1-rls', source: { name: 'hello', version: '1:0.0.1-rls' }, arches: ['x86_64'] },
    ]);
    expect(rpmLister.list(files({ 'var/lib/rpm/Packages': fixture('rhel8-libuuid-bdb').bytes }))).toEqual([
      { name: 'libuuid', version: '2.32.1-42.el8_8', source: { name: 'util-linux', version: '2.32.1-42.el8_8' }, arches: ['x86_64'] },
    ]);
  });

  it('reads each format at each of its locations', () => {
    for (const [paths, f] of [
      [SQLITE_PATHS, sqlite],
      [NDB_PATHS, ndb],
      [BDB_PATHS, bdb],
    ] as const) {
      for (const path of paths) expect(rpmLister.list(files({ [path]: f.bytes }))).toEqual(listedFrom(f.packages));
    }
  });

  it('prefers SQLite, then ndb, then Berkeley DB when a layer holds several', () => {
    const olderOnly = { 'var/lib/rpm/Packages': bdb.bytes, 'var/lib/rpm/Packages.db': ndb.bytes };
    expect(rpmLister.list(files({ ...olderOnly, 'var/lib/rpm/rpmdb.sqlite': sqlite.bytes }))).toEqual(listedFrom(sqlite.packages));
    expect(rpmLister.list(files(olderOnly))).toEqual(listedFrom(ndb.packages));
    // The preferred database is read even when it is corrupt: falling back would report a stale list.
    expect(() => rpmLister.list(files({ ...olderOnly, 'usr/lib/sysimage/rpm/rpmdb.sqlite': Buffer.alloc(4096) }))).toThrow(
      /^usr\/lib\/sysimage\/rpm\/rpmdb\.sqlite: not an SQLite database$/,
    );
  });

  it('prefers usr/lib/sysimage/rpm over var/lib/rpm for the same format', () => {
    const other = ndbDatabase([rpmHeader({ name: 'stale', version: '1', release: '1', arch: 'noarch' })]);
    const both = { 'var/lib/rpm/Packages.db': other, 'usr/lib/sysimage/rpm/Packages.db': ndb.bytes };
    expect(rpmLister.list(files(both))).toEqual(listedFrom(ndb.packages));
    expect(rpmLister.list(files({ 'var/lib/rpm/Packages.db': other }))).toEqual([{ name: 'stale', version: '1-1', arches: ['noarch'] }]);
  });

  it('lists a multilib package once, with both architectures, and drops an explicit epoch 0', () => {
    const db = ndbDatabase([
      rpmHeader({ name: 'glibc', version: '2.28', release: '225.el8', arch: 'x86_64' }),
      rpmHeader({ name: 'glibc', version: '2.28', release: '225.el8', arch: 'i686' }),
      rpmHeader({ name: 'kernel', version: '4.18.0', release: '513.el8', arch: 'x86_64' }),
      rpmHeader({ name: 'kernel', version: '4.18.0', release: '477.el8', arch: 'x86_64' }),
      rpmHeader({ name: 'libgcc', version: '8.5.0', release: '20.el8', arch: 'x86_64', epoch: 0 }),
      rpmHeader({ name: 'libgcc', version: '8.5.0', release: '20.el8', arch: 'i686' }),
      rpmHeader({ name: 'gpg-pubkey', version: 'fd431d51', release: '4ae0493b' }),
      rpmHeader({ name: 'perl-libs', version: '5.26.3', release: '422.el8', arch: 'x86_64', epoch: 4 }),
    ]);
    expect(readNdb(db)).toHaveLength(8);
    expect(rpmLister.list(files({ 'var/lib/rpm/Packages.db': db }))).toEqual([
      { name: 'glibc', version: '2.28-225.el8', arches: ['i686', 'x86_64'] },
      { name: 'kernel', version: '4.18.0-513.el8', arches: ['x86_64'] },
      { name: 'kernel', version: '4.18.0-477.el8', arches: ['x86_64'] },
      { name: 'libgcc', version: '8.5.0-20.el8', arches: ['i686', 'x86_64'] },
      { name: 'perl-libs', version: '4:5.26.3-422.el8', arches: ['x86_64'] },
    ]);
  });

  it('gives a package built in a module stream the stream (name:stream) of its modularity label; one without a label none', () => {
    const db = ndbDatabase([
      rpmHeader({
        name: 'ipa-client',
        version: '4.8.0',
        release: '13.module+el8.1.0+4923+c6efe041',
        arch: 'x86_64',
        modularityLabel: 'idm:DL1:8010020191114162016:5a9b8b9b',
      }),
      rpmHeader({ name: 'bash', version: '4.4.19', release: '10.el8', arch: 'x86_64' }),
      rpmHeader({ name: 'odd', version: '1', release: '1', arch: 'noarch', modularityLabel: 'nameonly' }),
    ]);
    expect(rpmLister.list(files({ 'var/lib/rpm/Packages.db': db }))).toEqual([
      { name: 'ipa-client', version: '4.8.0-13.module+el8.1.0+4923+c6efe041', arches: ['x86_64'], module: 'idm:DL1' },
      { name: 'bash', version: '4.4.19-10.el8', arches: ['x86_64'] },
      { name: 'odd', version: '1-1', arches: ['noarch'] },
    ]);
  });

  it('names the file in every corruption error', () => {
    expect(() => rpmLister.list(files({ 'var/lib/rpm/Packages': Buffer.alloc(8192, 0x5a) }))).toThrow(
      /^var\/lib\/rpm\/Packages: not a Berkeley DB hash database$/,
    );
    for (const path of [...SQLITE_PATHS, ...NDB_PATHS, ...BDB_PATHS]) {
      const err = corruptionError(() => rpmLister.list(files({ [path]: Buffer.alloc(0) })));
      expect(err.message.startsWith(`${path}: `), err.message).toBe(true);
    }
    const badHeader = ndbDatabase([rpmHeader({ name: 'a', version: '1', release: '1' }), Buffer.from('not a header')]);
    expect(corruptionError(() => rpmLister.list(files({ 'var/lib/rpm/Packages.db': badHeader }))).message).toMatch(
      /^var\/lib\/rpm\/Packages\.db: package record 2: rpm header/,
    );
  });
});

describe('corrupt rpm databases', () => {
  it(
    'rejects zero-length files',
    () => {
      for (const read of Object.values(READERS)) corruptionError(() => read(Buffer.alloc(0)));
    },
    QUICK,
  );

  for (const f of fixtures) {
    it(
      `${f.dir}/${f.file}: rejects the file cut short at any of several offsets`,
      () => {
        const len = f.bytes.length;
        const cuts = [1, 15, 16, 32, 99, 100, 511, 512, 4095, 4096, 4112, len >> 1, len - 4096, len - 512, len - 16, len - 1];
        for (const cut of new Set(cuts.filter((c) => c > 0 && c < len))) {
          const err = corruptionError(() => headersOf(f, f.bytes.subarray(0, cut)));
          expect(err.message, `cut at ${cut}`).not.toMatch(/undefined|NaN/);
        }
      },
      QUICK,
    );

    it(`${f.dir}/${f.file}: survives random byte changes without stray exceptions or hangs`, () => {
      const random = prng(f.bytes.length);
      const structural = Math.min(f.bytes.length, 16384); // metadata, slot and first b-tree pages
      for (let round = 0; round < 60; round++) {
        const db = Buffer.from(f.bytes);
        const edits = 1 + Math.floor(random() * 8);
        for (let e = 0; e < edits; e++) {
          const span = random() < 0.6 ? structural : db.length;
          db[Math.floor(random() * span)] = Math.floor(random() * 256);
        }
        readsOrFailsCleanly(f.read, db);
      }
    }, 20_000);
  }

  it(
    'rejects random garbage, with and without a valid magic number',
    () => {
      const random = prng(7);
      const garbage = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
      for (let i = 0; i < 40; i++) {
        const bytes = garbage(Math.floor(random() * 20_000));
        for (const read of Object.values(READERS)) corruptionError(() => read(bytes));

        const bdb = garbage(4096 * 4);
        bdb.writeUInt32LE(0x061561, 12);
        bdb[25] = 8;
        corruptionError(() => readBerkeleyDb(bdb));

        const sqlite = garbage(4096 * 4);
        sqlite.write('SQLite format 3\0', 0, 'latin1');
        corruptionError(() => readSqliteRpmdb(sqlite));

        const ndb = garbage(4096 * 4);
        ndb.write('RpmP', 0, 'latin1');
        ndb.writeUInt32LE(0, 4);
        corruptionError(() => readNdb(ndb));
      }
    },
    QUICK,
  );

  describe('Berkeley DB', () => {
    const f = fixture('rhel8-libuuid-bdb');
    const pageSize = f.bytes.readUInt32LE(20);
    const chain = bdbOverflowChain(f.bytes);
    const withNext = (pgno: number, next: number): Buffer => {
      const db = Buffer.from(f.bytes);
      db.writeUInt32LE(next, pgno * pageSize + 16);
      return db;
    };

    it('has a long overflow chain to corrupt', () => {
      expect(chain.length).toBeGreaterThan(10);
    });

    it(
      'rejects an overflow chain that loops back on itself',
      () => {
        expect(corruptionError(() => readBerkeleyDb(withNext(chain[0]!, chain[0]!))).message).toMatch(/loops/);
        expect(corruptionError(() => readBerkeleyDb(withNext(chain[7]!, chain[2]!))).message).toMatch(/loops/);
      },
      QUICK,
    );

    it(
      'rejects an overflow chain that leaves the file or ends early',
      () => {
        expect(corruptionError(() => readBerkeleyDb(withNext(chain[3]!, 0xfffffff))).message).toMatch(/out of range/);
        expect(corruptionError(() => readBerkeleyDb(withNext(chain[3]!, 0))).message).toMatch(/ends after/);
      },
      QUICK,
    );

    it(
      'rejects a chain that runs into a page of another kind',
      () => {
        expect(corruptionError(() => readBerkeleyDb(withNext(chain[3]!, 1))).message).toMatch(/not an overflow page/);
      },
      QUICK,
    );

    it(
      'rejects a metadata page that claims more pages than the file holds',
      () => {
        const db = Buffer.from(f.bytes);
        db.writeUInt32LE(1000, 32);
        expect(corruptionError(() => readBerkeleyDb(db)).message).toMatch(/truncated/);
      },
      QUICK,
    );

    it('rejects other Berkeley DB access methods by name', () => {
      const db = Buffer.from(f.bytes);
      db.writeUInt32LE(0x053162, 12);
      expect(corruptionError(() => readBerkeleyDb(db)).message).toBe('not a Berkeley DB hash database (it is a btree database)');
    });
  });

  describe('SQLite', () => {
    const f = fixture('amazonlinux2023-sqlite');
    const pageSize = f.bytes.readUInt16BE(16);
    const packagesRoot = 2; // rpm creates Packages first: see sqlite_schema in the fixture
    const withU32 = (at: number, value: number): Buffer => {
      const db = Buffer.from(f.bytes);
      db.writeUInt32BE(value, at);
      return db;
    };
    const rootAt = (packagesRoot - 1) * pageSize;

    it('has an interior Packages root to corrupt', () => {
      expect(f.bytes[rootAt]).toBe(0x05);
    });

    it(
      'rejects a child page pointer that is out of range',
      () => {
        expect(corruptionError(() => readSqliteRpmdb(withU32(rootAt + 8, 0x00ffffff))).message).toMatch(
          /page number 16777215 is out of range/,
        );
        const firstCell = f.bytes.readUInt16BE(rootAt + 12);
        expect(corruptionError(() => readSqliteRpmdb(withU32(rootAt + firstCell, 0))).message).toMatch(/out of range/);
      },
      QUICK,
    );

    it(
      'rejects a b-tree that points back at itself',
      () => {
        expect(corruptionError(() => readSqliteRpmdb(withU32(rootAt + 8, packagesRoot))).message).toMatch(/reached twice/);
        expect(corruptionError(() => readSqliteRpmdb(withU32(rootAt + 8, 1))).message).toMatch(/reached twice/);
      },
      QUICK,
    );

    it(
      'rejects a header whose page count exceeds the file',
      () => {
        expect(corruptionError(() => readSqliteRpmdb(withU32(28, 100_000))).message).toMatch(/truncated/);
      },
      QUICK,
    );

    it(
      'rejects a database without a Packages table',
      () => {
        const db = Buffer.from(f.bytes);
        // Rename the table in its sqlite_schema row, where the type, name and tbl_name texts sit
        // side by side (page 1 keeps a stale copy in its free space: rename every copy).
        let renamed = 0;
        for (let at = db.indexOf('tablePackagesPackages'); at >= 0; at = db.indexOf('tablePackagesPackages', at + 1)) {
          db.write('tablePackagezPackagez', at, 'latin1');
          renamed++;
        }
        expect(renamed).toBeGreaterThan(0);
        expect(corruptionError(() => readSqliteRpmdb(db)).message).toBe('SQLite database has no Packages table');
      },
      QUICK,
    );
  });

  describe('ndb', () => {
    const blobs = [rpmHeader({ name: 'a', version: '1', release: '1' }), rpmHeader({ name: 'b', version: '2', release: '2' })];
    const valid = ndbDatabase(blobs);
    const slot = (n: number): number => 32 + n * 16;
    const edit = (fn: (db: Buffer) => void): Buffer => {
      const db = Buffer.from(valid);
      fn(db);
      return db;
    };

    it('reads what the builder writes', () => {
      expect(readNdb(valid)).toEqual(blobs);
    });

    const cases: [string, Buffer, RegExp][] = [
      ['a slot pointing past the end', edit((db) => db.writeUInt32LE(0x0fffffff, slot(1) + 8)), /truncated/],
      ['a slot pointing into the slot pages', edit((db) => db.writeUInt32LE(3, slot(1) + 8)), /slot 3 is invalid/],
      ['overlapping blobs', edit((db) => db.writeUInt32LE(db.readUInt32LE(slot(0) + 8), slot(1) + 8)), /overlaps|belongs to another/],
      ['two slots for one package', edit((db) => db.writeUInt32LE(1, slot(1) + 4)), /two slots for package 1/],
      ['a blob of another package', edit((db) => db.writeUInt32LE(9, 4096 + 4)), /belongs to another package/],
      ['a blob longer than its blocks', edit((db) => db.writeUInt32LE(1 << 30, 4096 + 12)), /does not fit/],
      [
        'a blob without its tail',
        edit((db) => db.fill(0, 4096 + db.readUInt32LE(slot(0) + 12) * 16 - 4, 4096 + db.readUInt32LE(slot(0) + 12) * 16)),
        /bad tail/,
      ],
      ['a bad slot magic', edit((db) => db.write('Xlot', slot(100), 'latin1')), /slot 102 has a bad magic/],
      ['a huge slot page count', edit((db) => db.writeUInt32LE(0xffffffff, 12)), /truncated/],
      ['an unknown version', edit((db) => db.writeUInt32LE(1, 4)), /version 1 is not supported/],
    ];
    for (const [what, db, message] of cases) {
      it(
        `rejects ${what}`,
        () => {
          expect(corruptionError(() => readNdb(db)).message).toMatch(message);
        },
        QUICK,
      );
    }
  });
});

describe.runIf(commandExists('rpm'))('databases written by rpm', () => {
  it('reads an empty database made by rpm --initdb as zero packages', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tarsier-rpmdb-'));
    try {
      execFileSync('rpm', ['--initdb', '--dbpath', dir], { stdio: 'ignore' });
      const made = Object.keys(READERS).filter((file) => existsSync(join(dir, file)));
      expect(made.length).toBeGreaterThan(0);
      for (const file of made) expect(READERS[file]!(readFileSync(join(dir, file)))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe.runIf(commandExists('sqlite3'))('SQLite files written by sqlite3', () => {
  const RPM_SCHEMA = "CREATE TABLE 'Packages' (hnum INTEGER PRIMARY KEY AUTOINCREMENT, blob BLOB NOT NULL);";

  /** Builds a database with sqlite3 from SQL statements, returning its bytes. */
  function sqlite3(statements: string[], dotCommands: string[] = []): Buffer {
    const dir = mkdtempSync(join(tmpdir(), 'tarsier-sqlite-'));
    try {
      const path = join(dir, 'rpmdb.sqlite');
      execFileSync('sqlite3', [path], { input: [...dotCommands, ...statements].join('\n'), maxBuffer: 1 << 26 });
      return readFileSync(path);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  const insert = (blobs: readonly Buffer[]): string[] => blobs.map((b) => `INSERT INTO Packages(blob) VALUES (X'${b.toString('hex')}');`);

  /** Payload sizes around the overflow thresholds of usable size u (X = u-35, M, and multiples of u-4). */
  function boundarySizes(u: number): number[] {
    const x = u - 35;
    const m = Math.floor(((u - 12) * 32) / 255) - 23;
    const near = (n: number): number[] => [n - 2, n - 1, n, n + 1, n + 2];
    // The record adds a few header bytes to the blob, so aim a little below each threshold.
    return [0, 1, ...near(x - 4), ...near(x + u - 4 - 4), ...near(m + 2 * (u - 4)), 3 * u + 7, 12 * u + 3].filter((n) => n >= 0);
  }

  const variants: { pageSize: number; reserve: number; encoding: string; wal: boolean }[] = [
    { pageSize: 512, reserve: 0, encoding: 'UTF-8', wal: false },
    { pageSize: 1024, reserve: 32, encoding: 'UTF-16le', wal: false },
    { pageSize: 4096, reserve: 0, encoding: 'UTF-16be', wal: true },
    { pageSize: 65536, reserve: 8, encoding: 'UTF-8', wal: false },
  ];
  /** Compares blobs by length and hash: deep equality of megabyte Buffers is slow. */
  const digest = (b: Buffer): string => `${b.length}:${createHash('sha256').update(b).digest('hex')}`;

  /** n pseudo-random bytes. */
  function randomBytes(random: () => number, n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = Math.floor(random() * 256);
    return b;
  }

  for (const v of variants) {
    it(`reads every row of a ${v.pageSize}-byte-page ${v.encoding} database (reserve ${v.reserve}${v.wal ? ', WAL' : ''})`, () => {
      const random = prng(v.pageSize + v.reserve);
      // Enough rows for interior pages at every page size; sizes up to two pages (capped for 64 KiB).
      const maxSize = Math.min(2 * v.pageSize, 40_000);
      const sizes = [...boundarySizes(v.pageSize - v.reserve), ...Array.from({ length: 150 }, () => Math.floor(random() * maxSize))];
      const blobs = sizes.map((n) => randomBytes(random, n));
      const db = sqlite3(
        [
          `PRAGMA page_size=${v.pageSize};`,
          `PRAGMA encoding='${v.encoding}';`,
          ...(v.wal ? ['PRAGMA journal_mode=WAL;'] : []),
          RPM_SCHEMA,
          'CREATE TABLE Name (key TEXT NOT NULL, hnum INTEGER NOT NULL, idx INTEGER NOT NULL);',
          'BEGIN;',
          ...insert(blobs),
          'COMMIT;',
          'DELETE FROM Packages WHERE hnum % 5 = 2;', // leaves freelist pages and sparse rowids
        ],
        v.reserve > 0 ? [`.filectrl reserve_bytes ${v.reserve}`] : [],
      );
      expect(db.readUInt8(20)).toBe(v.reserve);
      expect(db.readUInt8(v.pageSize), 'the Packages root (page 2) is an interior page').toBe(0x05);
      const kept = blobs.filter((_, i) => (i + 1) % 5 !== 2);
      expect(readSqliteRpmdb(db).map(digest)).toEqual(kept.map(digest));
    }, 30_000);
  }

  it('reads real headers from a database with small pages and deep overflow chains', () => {
    const f = fixture('amazonlinux2023-sqlite');
    const blobs = f.read(f.bytes);
    const db = sqlite3(['PRAGMA page_size=512;', RPM_SCHEMA, 'BEGIN;', ...insert(blobs), 'COMMIT;']);
    expect(readSqliteRpmdb(db).map(parseRpmHeader)).toEqual(f.packages);
  }, 30_000);

  it('reads an empty Packages table as zero packages', () => {
    expect(readSqliteRpmdb(sqlite3([RPM_SCHEMA]))).toEqual([]);
    expect(rpmLister.list(files({ 'var/lib/rpm/rpmdb.sqlite': sqlite3([RPM_SCHEMA]) }))).toEqual([]);
  });

  it('names a missing Packages table', () => {
    expect(corruptionError(() => readSqliteRpmdb(sqlite3(['CREATE TABLE other (x);']))).message).toBe(
      'SQLite database has no Packages table',
    );
  });
});
