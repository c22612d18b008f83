/**
 * Application packages the OS package manager installed are reported once, as the OS package:
 * the layer's dpkg file lists (`var/lib/dpkg/info/*.list`), rpm's file lists and apk's `F:`/`R:`
 * lines say which files the OS packages own. Oracles: `dpkg-query -S` recorded for real Debian 12
 * python3-* packages (test/fixtures/dpkg/python-owned), and `rpm -qal` on a real Amazon Linux
 * 2023 database where rpm is installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NAMESPACE_DETECTORS, PACKAGE_LISTERS, APPLICATION_LISTERS } from '../../src/ecosystems/index.js';
import { apkLister } from '../../src/ecosystems/apk/lister.js';
import { rpmLister } from '../../src/ecosystems/rpm/lister.js';
import { scanContents } from '../../src/indexer/scan.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const OWNED = join(FIXTURES, 'dpkg/python-owned');
const DEBIAN_PYTHON = join(FIXTURES, 'python/debian-12');
const RPM_DB = join(FIXTURES, 'rpm/amazonlinux2023-sqlite');

/** Every file under dir, keyed by its path relative to dir. */
function filesUnder(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) files.set(relative(dir, join(e.parentPath, e.name)), readFileSync(join(e.parentPath, e.name)));
  }
  return files;
}

const noWhiteouts = { deleted: new Set<string>(), opaque: new Set<string>() };
const scan = (files: Map<string, Buffer>) =>
  scanContents({ files, whiteouts: noWhiteouts }, PACKAGE_LISTERS, NAMESPACE_DETECTORS, APPLICATION_LISTERS);

const rpmAvailable = (): boolean => spawnSync('rpm', ['--version'], { stdio: 'ignore' }).status === 0;

describe('application packages the OS package manager installed', () => {
  it("are left out where the layer's dpkg file lists name their metadata, as dpkg-query -S says, and the OS packages stay", () => {
    const python = filesUnder(DEBIAN_PYTHON);
    const files = new Map(python);
    files.set('var/lib/dpkg/status', readFileSync(join(OWNED, 'status')));
    for (const name of readdirSync(join(OWNED, 'info'))) files.set(`var/lib/dpkg/info/${name}`, readFileSync(join(OWNED, 'info', name)));
    const owners = readFileSync(join(OWNED, 'dpkg-query-S.txt'), 'utf8').trim().split('\n');
    const ownedPaths = new Set(owners.map((line) => line.slice(line.indexOf(': /') + 3)));
    expect(ownedPaths.size).toBe(5);

    const withLists = scan(files);
    const without = scan(new Map([...python, ['var/lib/dpkg/status', readFileSync(join(OWNED, 'status'))]]));
    const locations = (s: ReturnType<typeof scan>) => new Set(s.applications?.packages.map((p) => p.location));
    // Without the file lists every distribution is listed; with them, exactly dpkg-query's are gone.
    expect([...locations(without)].filter((l) => ownedPaths.has(l)).sort()).toEqual([...ownedPaths].sort());
    expect([...locations(withLists)].filter((l) => ownedPaths.has(l))).toEqual([]);
    expect(locations(withLists).size).toBe(locations(without).size - ownedPaths.size);
    // The OS packages themselves: the source packages dpkg lists, once each.
    const dpkg = withLists.packageDbs.dpkg;
    expect(dpkg?.state).toBe('present');
    expect(dpkg && 'packages' in dpkg ? dpkg.packages.map((p) => p.name).sort() : []).toEqual([
      'pyjwt',
      'python-cryptography',
      'pyyaml',
      'six',
    ]);
  });

  it('keeps a package installed beside the OS ones (pip into /usr/local), and a database that owns nothing changes nothing', () => {
    const files = new Map<string, Buffer>([
      ['var/lib/dpkg/status', readFileSync(join(OWNED, 'status'))],
      ['var/lib/dpkg/info/python3-yaml.list', readFileSync(join(OWNED, 'info/python3-yaml.list'))],
      [
        'usr/local/lib/python3.11/dist-packages/PyYAML-6.0.1.dist-info/METADATA',
        Buffer.from('Metadata-Version: 2.1\nName: PyYAML\nVersion: 6.0.1\n'),
      ],
    ]);
    expect(scan(files).applications?.packages.map((p) => `${p.name} ${p.version}`)).toEqual(['pyyaml 6.0.1']);
  });

  it.skipIf(!rpmAvailable())('reads rpm file lists as rpm -qal prints them', () => {
    const files = new Map([['var/lib/rpm/rpmdb.sqlite', readFileSync(join(RPM_DB, 'rpmdb.sqlite'))]]);
    const owned = rpmLister.ownedFiles(files);
    const oracle = execFileSync('rpm', ['--dbpath', RPM_DB, '-qal'], { encoding: 'utf8', maxBuffer: 64 << 20 })
      .split('\n')
      .filter((line) => line.startsWith('/'))
      .map((line) => line.slice(1));
    expect(oracle.length).toBeGreaterThan(1000);
    expect(owned).toEqual(new Set(oracle));
  });

  it("reads apk's files as each R: line in the F: directory before it", () => {
    const installed = Buffer.from(
      [
        'P:py3-yaml',
        'V:6.0.1-r1',
        'F:usr/lib/python3.11/site-packages/PyYAML-6.0.1.dist-info',
        'R:METADATA',
        'R:RECORD',
        'F:usr/bin',
        'R:yq',
        '',
        'P:musl',
        'V:1.2.4-r2',
        'F:lib',
        'R:ld-musl-x86_64.so.1',
        '',
      ].join('\n'),
    );
    const files = new Map([['lib/apk/db/installed', installed]]);
    expect(apkLister.ownedFiles(files)).toEqual(
      new Set([
        'usr/lib/python3.11/site-packages/PyYAML-6.0.1.dist-info/METADATA',
        'usr/lib/python3.11/site-packages/PyYAML-6.0.1.dist-info/RECORD',
        'usr/bin/yq',
        'lib/ld-musl-x86_64.so.1',
      ]),
    );
    files.set('usr/lib/python3.11/site-packages/PyYAML-6.0.1.dist-info/METADATA', Buffer.from('Name: PyYAML\nVersion: 6.0.1\n'));
    expect(scan(files).applications).toBeUndefined();
  });
});
