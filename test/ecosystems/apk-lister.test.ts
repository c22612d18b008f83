import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { LayerFiles, Package } from '../../src/model/indexing.js';
import { apkLister } from '../../src/ecosystems/apk/lister.js';

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url));
const INSTALLED = 'lib/apk/db/installed';

function byNameThenVersion(a: Package, b: Package): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  if (a.version !== b.version) return a.version < b.version ? -1 : 1;
  return 0;
}

function installedLayer(content: string | Buffer): LayerFiles {
  return new Map([[INSTALLED, Buffer.from(content)]]);
}

function fixtureText(release: string): string {
  return readFileSync(join(fixtures, 'apk', release, INSTALLED), 'utf8');
}

function list(files: LayerFiles): Package[] {
  const packages = apkLister.list(files);
  if (packages === undefined) throw new Error('no apk database');
  return packages;
}

describe('apk lister', () => {
  it('declares itself', () => {
    expect(apkLister).toMatchObject({ name: 'apk', version: 2, format: 'apk', databasePaths: [INSTALLED] });
  });

  it('wants the installed database only', () => {
    expect(apkLister.wants(INSTALLED)).toBe(true);
    expect(apkLister.wants('lib/apk/db/installed.new')).toBe(false);
    expect(apkLister.wants('lib/apk/db/scripts.tar')).toBe(false);
  });

  it('returns undefined when the layer holds no apk database', () => {
    expect(apkLister.list(new Map())).toBeUndefined();
  });

  it('returns no packages for an empty database', () => {
    expect(list(installedLayer(''))).toEqual([]);
  });
});

describe('apk lister golden files (test/fixtures/expected/apk)', () => {
  for (const release of ['alpine-3.4', 'alpine-3.16', 'alpine-3.18']) {
    it(release, () => {
      const golden = readFileSync(join(fixtures, 'expected', 'apk', `${release}.json`), 'utf8');
      const expected = JSON.parse(golden) as Package[];
      expect(list(installedLayer(fixtureText(release))).sort(byNameThenVersion)).toEqual(expected);
    });
  }
});

describe('apk lister on real databases', () => {
  it('Alpine 3.4: 16 records make 13 origins; the record without o: has no V: either and is skipped', () => {
    const text = fixtureText('alpine-3.4');
    expect(text.match(/^P:/gm)).toHaveLength(16);
    expect(text.match(/^o:/gm)).toHaveLength(15);
    const packages = list(installedLayer(text));
    expect(packages).toHaveLength(13);
    expect(packages.map((p) => p.name)).not.toContain('invalidPackageWithoutAVersion');
    expect(packages).toEqual(
      expect.arrayContaining([
        { name: 'openssl', version: '1.0.2h-r1' }, // libcrypto1.0 and libssl1.0
        { name: 'pax-utils', version: '1.1.6-r0' }, // scanelf
        { name: 'libc-dev', version: '0.7-r0' }, // libc-utils
        { name: 'musl', version: '1.1.14-r10' }, // musl and musl-utils
        { name: 'test-parent', version: '2.9.11_pre20061021-r2' }, // P:test
      ]),
    );
    expect(packages.map((p) => p.name)).not.toContain('libssl1.0');
  });

  it('Alpine 3.18: busybox-binsh and ssl_client collapse into busybox', () => {
    const packages = list(installedLayer(fixtureText('alpine-3.18')));
    expect(packages.filter((p) => p.name === 'busybox')).toEqual([{ name: 'busybox', version: '1.36.0-r9' }]);
    expect(packages).toContainEqual({ name: 'openssl', version: '3.1.0-r4' });
    expect(packages).toContainEqual({ name: 'ca-certificates', version: '20230506-r0' });
  });
});

describe('apk lister on edge cases', () => {
  it('falls back to P: when a record has no o:', () => {
    expect(list(installedLayer('P:lonely\nV:1.0-r0\n\nP:child\nV:2.0-r1\no:parent\n'))).toEqual([
      { name: 'lonely', version: '1.0-r0' },
      { name: 'parent', version: '2.0-r1' },
    ]);
  });

  it('skips records without a version or with one apk rejects', () => {
    expect(list(installedLayer('P:a\n\nP:b\nV:not a version\n\nV:1.0\n\nP:c\nV:1.0_rc1-r0\n'))).toEqual([
      { name: 'c', version: '1.0_rc1-r0' },
    ]);
  });

  it('handles CRLF, extra blank lines and a missing final newline', () => {
    expect(list(installedLayer('\r\n\r\nP:a\r\nV:1.0-r0\r\no:a\r\n\r\n\r\nP:b\r\nV:2.0-r0'))).toEqual([
      { name: 'a', version: '1.0-r0' },
      { name: 'b', version: '2.0-r0' },
    ]);
  });

  it('never throws on bytes that are not UTF-8', () => {
    const bytes = Buffer.concat([Buffer.from('P:a\nT:caf'), Buffer.from([0xe9, 0xff, 0xfe, 0x00]), Buffer.from('\nV:1.0-r0\n')]);
    expect(list(installedLayer(bytes))).toEqual([{ name: 'a', version: '1.0-r0' }]);
    expect(list(installedLayer(Buffer.from([0xff, 0x3a, 0x0a, 0x80])))).toEqual([]);
  });
});
