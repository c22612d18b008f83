import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { LayerFiles, Package } from '../../src/model/indexing.js';
import { dpkgLister, parseControl } from '../../src/ecosystems/dpkg/lister.js';

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url));
const STATUS = 'var/lib/dpkg/status';

function byNameThenVersion(a: Package, b: Package): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  if (a.version !== b.version) return a.version < b.version ? -1 : 1;
  return 0;
}

/** A layer holding the files of a fixture directory, as the indexer would hand them over. */
function layerFromDirectory(dir: string): LayerFiles {
  const paths = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
  return new Map(paths.filter(dpkgLister.wants).map((path) => [path, readFileSync(join(dir, path))]));
}

function statusLayer(status: string | Buffer): LayerFiles {
  return new Map([[STATUS, Buffer.from(status)]]);
}

function statusFixture(name: string): LayerFiles {
  return statusLayer(readFileSync(join(fixtures, 'dpkg', `${name}.status`)));
}

function list(files: LayerFiles): Package[] {
  const packages = dpkgLister.list(files);
  if (packages === undefined) throw new Error('no dpkg database');
  return packages;
}

function golden(name: string): Package[] {
  return JSON.parse(readFileSync(join(fixtures, 'expected', 'dpkg', `${name}.json`), 'utf8')) as Package[];
}

describe('dpkg lister', () => {
  it('declares itself', () => {
    expect(dpkgLister).toMatchObject({ name: 'dpkg', version: 3, format: 'dpkg', wholeDatabaseFiles: ['var/lib/dpkg/status'] });
    expect(dpkgLister.databasePaths).toEqual(['var/lib/dpkg/status', 'var/lib/dpkg/status.d/']);
  });

  it('wants the status file and the stanza files of status.d', () => {
    expect(dpkgLister.wants(STATUS)).toBe(true);
    expect(dpkgLister.wants('var/lib/dpkg/status.d/dash')).toBe(true);
    expect(dpkgLister.wants('var/lib/dpkg/status.d/libssl1.1')).toBe(true);
    expect(dpkgLister.wants('var/lib/dpkg/status.d/libsqlite3-0.md5sums')).toBe(false);
    expect(dpkgLister.wants('var/lib/dpkg/status.d/')).toBe(false);
    expect(dpkgLister.wants('var/lib/dpkg/status.d/a/b')).toBe(false);
    expect(dpkgLister.wants('var/lib/dpkg/status-old')).toBe(false);
    expect(dpkgLister.wants('var/lib/dpkg/available')).toBe(false);
  });

  it('returns undefined when the layer holds no dpkg database', () => {
    expect(dpkgLister.list(new Map())).toBeUndefined();
    expect(dpkgLister.list(new Map([['lib/apk/db/installed', Buffer.from('P:musl\n')]]))).toBeUndefined();
  });

  it('returns no packages for an empty status file', () => {
    expect(list(statusLayer(''))).toEqual([]);
  });
});

describe('dpkg lister golden files (test/fixtures/expected/dpkg)', () => {
  const statusFiles = ['debian-7-wheezy', 'debian-8-jessie', 'debian-9-stretch', 'debian-10-postgresql'];
  for (const name of [...statusFiles, 'ubuntu-18.04', 'ubuntu-18.04-texlive']) {
    it(`${name}.status`, () => {
      expect(list(statusFixture(name)).sort(byNameThenVersion)).toEqual(golden(name));
    });
  }
  for (const name of ['distroless-debian9', 'distroless-debian11-arm64']) {
    it(`${name}/var/lib/dpkg/status.d`, () => {
      expect(list(layerFromDirectory(join(fixtures, 'dpkg', name))).sort(byNameThenVersion)).toEqual(golden(name));
    });
  }
});

describe('dpkg lister on real databases', () => {
  it('Debian 9: the 12 stanzas whose Source carries its own version get that version', () => {
    const text = readFileSync(join(fixtures, 'dpkg', 'debian-9-stretch.status'), 'utf8');
    const differing = parseControl(text).filter((s) => {
      const sourceVersion = /\((.*)\)/.exec(s.get('source') ?? '')?.[1];
      return sourceVersion !== undefined && sourceVersion !== s.get('version');
    });
    expect(differing).toHaveLength(12);

    const packages = list(statusFixture('debian-9-stretch'));
    expect(packages).toEqual(
      expect.arrayContaining([
        { name: 'attr', version: '1:2.4.47-2' }, // libattr1 1:2.4.47-2+b2
        { name: 'xz-utils', version: '5.2.2-1.2' }, // liblzma5 5.2.2-1.2+b1
        { name: 'hostname', version: '3.18' }, // hostname 3.18+b1
        { name: 'util-linux', version: '2.29.2-1+deb9u1' }, // bsdutils 1:2.29.2-1+deb9u1
        { name: 'gcc-6', version: '6.3.0-18+deb9u1' }, // libgcc1 1:6.3.0-18+deb9u1
        { name: 'acl', version: '2.2.52-3' }, // libacl1 2.2.52-3+b1
      ]),
    );
    for (const binaryVersion of ['1:2.4.47-2+b2', '3.18+b1', '1:2.29.2-1+deb9u1', '1:6.3.0-18+deb9u1']) {
      expect(packages.map((p) => p.version)).not.toContain(binaryVersion);
    }
  });

  it('Debian 10: two binaries of postgresql-common collapse into one source package', () => {
    expect(list(statusFixture('debian-10-postgresql')).sort(byNameThenVersion)).toEqual([
      { name: 'postgresql-11', version: '11.22-0+deb10u2' },
      { name: 'postgresql-common', version: '200+deb10u5' },
    ]);
  });

  it('Ubuntu 18.04: 91 stanzas, one of them config-files, make 61 source packages', () => {
    const text = readFileSync(join(fixtures, 'dpkg', 'ubuntu-18.04.status'), 'utf8');
    expect(parseControl(text)).toHaveLength(91);
    const packages = list(statusFixture('ubuntu-18.04'));
    expect(packages).toHaveLength(61);
    expect(new Set(packages.map((p) => `${p.name} ${p.version}`)).size).toBe(61);
    expect(packages.map((p) => p.name)).not.toContain('git'); // Status: deinstall ok config-files
    expect(packages).toEqual(
      expect.arrayContaining([
        { name: 'glibc', version: '2.27-3ubuntu1' }, // libc6, libc-bin
        { name: 'e2fsprogs', version: '1.44.1-1' },
        { name: 'libgcrypt20', version: '1.8.1-4ubuntu1.1' },
      ]),
    );
  });

  it('distroless status.d: one package per stanza file, md5sums ignored', () => {
    expect(list(layerFromDirectory(join(fixtures, 'dpkg', 'distroless-debian9'))).sort(byNameThenVersion)).toEqual([
      { name: 'dash', version: '0.5.8-2.4' },
      { name: 'netbase', version: '5.4' },
    ]);
    const dir = join(fixtures, 'dpkg', 'distroless-debian11-arm64', 'var/lib/dpkg/status.d');
    const everything = new Map(readdirSync(dir).map((name) => [`var/lib/dpkg/status.d/${name}`, readFileSync(join(dir, name))]));
    expect(everything.size).toBe(2);
    expect(list(everything)).toEqual([{ name: 'sqlite3', version: '3.34.1-3' }]);
  });

  it('reads status and status.d together', () => {
    const files = new Map([
      [STATUS, Buffer.from('Package: a\nStatus: install ok installed\nVersion: 1.0\n')],
      ['var/lib/dpkg/status.d/b', Buffer.from('Package: b\nVersion: 2.0\n')],
    ]);
    expect(list(files)).toEqual([
      { name: 'a', version: '1.0' },
      { name: 'b', version: '2.0' },
    ]);
  });
});

describe('dpkg lister on edge cases', () => {
  const stanza = (fields: string): string => `Package: p\n${fields}\n`;

  it('lists only packages whose files are installed', () => {
    const installed = ['installed', 'half-configured', 'unpacked', 'half-installed', 'triggers-awaited', 'triggers-pending'];
    const removed = ['config-files', 'not-installed'];
    const text = [...installed, ...removed].map((state, i) => `Package: p${i}\nStatus: install ok ${state}\nVersion: 1.${i}\n`).join('\n');
    expect(list(statusLayer(text)).map((p) => p.name)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5']);
  });

  it('skips a config-files stanza whose source is also installed under another version', () => {
    const text = [
      'Package: git\nStatus: deinstall ok config-files\nVersion: 1:2.20.1-2\n',
      'Package: git-man\nStatus: install ok installed\nSource: git\nVersion: 1:2.17.1-1ubuntu0.4\n',
    ].join('\n');
    expect(list(statusLayer(text))).toEqual([{ name: 'git', version: '1:2.17.1-1ubuntu0.4' }]);
  });

  it('takes the source name, and the source version when given', () => {
    expect(list(statusLayer(stanza('Source: src\nVersion: 1.0-1')))).toEqual([{ name: 'src', version: '1.0-1' }]);
    expect(list(statusLayer(stanza('Source: src (1.0-1)\nVersion: 1.0-1+b1')))).toEqual([{ name: 'src', version: '1.0-1' }]);
    expect(list(statusLayer(stanza('Version: 1.0-1\nSource: src (1:1.0-1)')))).toEqual([{ name: 'src', version: '1:1.0-1' }]);
  });

  it('skips stanzas without Package or Version, and invalid versions', () => {
    const text = ['Version: 1.0', 'Package: noversion', 'Package: bad\nVersion: 1.0 beta', 'Package: ok\nVersion: 2'];
    expect(list(statusLayer(text.join('\n\n')))).toEqual([{ name: 'ok', version: '2' }]);
    expect(list(statusLayer(stanza('Source: s (not a version!)\nVersion: 1.0')))).toEqual([]);
  });

  it('handles CRLF, continuation lines, blank-looking separators and a missing final newline', () => {
    const text =
      'Package: a\r\nDescription: x\r\n more\r\n .\r\n\tand more\r\nVersion: 1.0\r\n \r\n' +
      'Package: b\r\nStatus: install ok installed\r\nVersion: 2.0';
    expect(list(statusLayer(text))).toEqual([
      { name: 'a', version: '1.0' },
      { name: 'b', version: '2.0' },
    ]);
    expect(parseControl(text)[0]?.get('description')).toBe('x\nmore\n.\nand more');
  });

  it('reads field names case-insensitively and skips lines it cannot read', () => {
    expect(list(statusLayer('PACKAGE: a\ngarbage line\nversion:   3.0  \n'))).toEqual([{ name: 'a', version: '3.0' }]);
  });

  it('never throws on bytes that are not UTF-8', () => {
    const bytes = Buffer.concat([
      Buffer.from('Package: a\nMaintainer: Jos\xe9 '),
      Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0x00]),
      Buffer.from('\nVersion: 1.0\n\nPackage: b\nVersion: 2.0\n'),
    ]);
    expect(list(statusLayer(bytes))).toEqual([
      { name: 'a', version: '1.0' },
      { name: 'b', version: '2.0' },
    ]);
    expect(list(statusLayer(Buffer.from([0x80, 0x81, 0xff, 0x0a, 0x3a, 0x0a])))).toEqual([]);
  });

  it('lists a name and version once', () => {
    const text = [
      'Package: a1\nSource: a\nVersion: 1',
      'Package: a2\nSource: a\nVersion: 1',
      'Package: a3\nSource: a (2)\nVersion: 1',
    ].join('\n\n');
    expect(list(statusLayer(text))).toEqual([
      { name: 'a', version: '1' },
      { name: 'a', version: '2' },
    ]);
  });
});
