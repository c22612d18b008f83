import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NAMESPACE_DETECTORS, PACKAGE_LISTERS } from '../../src/ecosystems/index.js';
import { scanContents } from '../../src/indexer/scan.js';
import type { LayerScan } from '../../src/model/layer.js';
import { ndbDatabase, rpmHeader, type HeaderSpec } from '../helpers/rpmdb.js';

/** The package database states a layer holding these files and whiteouts gives. */
function states(layer: { files?: Record<string, string>; deleted?: string[]; opaque?: string[] }): Record<string, string> {
  const files = new Map(Object.entries(layer.files ?? {}).map(([path, text]) => [path, Buffer.from(text)]));
  const whiteouts = { deleted: new Set(layer.deleted ?? []), opaque: new Set(layer.opaque ?? []) };
  const scan: LayerScan = scanContents({ files, whiteouts }, PACKAGE_LISTERS, NAMESPACE_DETECTORS);
  return Object.fromEntries(Object.entries(scan.packageDbs).map(([format, db]) => [format, db.state]));
}

const stanza = 'Package: bash\nStatus: install ok installed\nVersion: 5.2.15-2+b2\n';

describe('scanContents: what a layer does to each package database', () => {
  it('replaces the dpkg database with a status file, and adds to it with status.d files alone', () => {
    expect(states({ files: { 'var/lib/dpkg/status': stanza } })).toEqual({ dpkg: 'present' });
    expect(states({ files: { 'var/lib/dpkg/status': stanza, 'var/lib/dpkg/status.d/bash': stanza } })).toEqual({ dpkg: 'present' });
    expect(states({ files: { 'var/lib/dpkg/status.d/bash': stanza } })).toEqual({ dpkg: 'added' });
  });

  it('deletes a database whose file, or a directory above it, is whited out', () => {
    expect(states({ deleted: ['var/lib/dpkg/status'] })).toEqual({ dpkg: 'deleted' });
    expect(states({ deleted: ['var/lib'] })).toEqual({ dpkg: 'deleted', rpm: 'deleted' });
    expect(states({ deleted: ['var/lib/rpm/Packages'] })).toEqual({ rpm: 'deleted' });
    expect(states({ deleted: ['usr/lib/sysimage/rpm/rpmdb.sqlite'] })).toEqual({ rpm: 'deleted' });
    expect(states({ deleted: ['lib/apk/db/installed'] })).toEqual({ apk: 'deleted' });
  });

  it('deletes a database whose directory is made opaque and holds no database', () => {
    expect(states({ opaque: ['var/lib/rpm'] })).toEqual({ rpm: 'deleted' });
    expect(states({ opaque: ['var/lib/dpkg/status.d'] })).toEqual({ dpkg: 'deleted' });
    expect(states({ opaque: ['var/lib/dpkg'] })).toEqual({ dpkg: 'deleted' });
  });

  it('leaves a database alone when only its neighbours are whited out', () => {
    expect(states({ deleted: ['var/lib/rpm/__db.001', 'var/lib/rpm/.rpm.lock', 'var/lib/dpkg/status-old', 'var/lib/dpkg/lock'] })).toEqual(
      {},
    );
    expect(states({ opaque: ['var/lib/apt/lists', 'lib/apk/protected_paths.d', 'usr/lib/sysimage/rpm-plugins'] })).toEqual({});
  });
});

describe('scanContents: a SLES layer is named by the products its rpm database holds', () => {
  const fixture = (path: string): Buffer => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));
  const SLES_15_4_OS_RELEASE =
    'NAME="SLES"\nVERSION="15-SP4"\nVERSION_ID="15.4"\nID="sles"\nID_LIKE="suse"\nCPE_NAME="cpe:/o:suse:sles:15:sp4"\n';
  const release = (name: string, version: string): HeaderSpec => ({ name, version, release: '150400.1.1', arch: 'x86_64' });
  const namespace = (files: Record<string, string | Buffer>): string | null => {
    const map = new Map(Object.entries(files).map(([path, content]) => [path, Buffer.from(content)]));
    return scanContents({ files: map, whiteouts: { deleted: new Set(), opaque: new Set() } }, PACKAGE_LISTERS, NAMESPACE_DETECTORS)
      .namespace;
  };
  const rpmdb = (packages: HeaderSpec[]): Buffer => ndbDatabase(packages.map(rpmHeader));

  it('reads sles-release from a real SLE 15 SP3 BCI database', () => {
    const db = fixture('rpm/sle15-bci-ndb/Packages.db');
    expect(namespace({ 'etc/os-release': fixture('osrelease/sles-15.3/etc/os-release'), 'var/lib/rpm/Packages.db': db })).toBe('sles:15.3');
    expect(namespace({ 'var/lib/rpm/Packages.db': db })).toBe('sles:15.3');
  });

  it("adds the LTSS or BCL variant whose release package has the service pack's version; os-release cannot tell", () => {
    const sp4 = release('sles-release', '15.4');
    const withOsRelease = (packages: HeaderSpec[]) =>
      namespace({ 'etc/os-release': SLES_15_4_OS_RELEASE, 'var/lib/rpm/Packages.db': rpmdb(packages) });
    expect(withOsRelease([sp4])).toBe('sles:15.4');
    expect(withOsRelease([sp4, release('sles-ltss-release', '15.4')])).toBe('sles:15.4-ltss');
    // A layer that installs LTSS without touching os-release.
    expect(namespace({ 'var/lib/rpm/Packages.db': rpmdb([sp4, release('sles-ltss-release', '15.4')]) })).toBe('sles:15.4-ltss');
    // The release package of another service pack (a migration half done) does not qualify this one.
    expect(withOsRelease([sp4, release('sles-ltss-release', '15.3')])).toBe('sles:15.4');
    expect(namespace({ 'var/lib/rpm/Packages.db': rpmdb([release('sles-release', '15'), release('sles-ltss-release', '15')]) })).toBe(
      'sles:15-ltss',
    );
    expect(namespace({ 'var/lib/rpm/Packages.db': rpmdb([release('sles-release', '12.5'), release('SLES-LTSS-release', '12.5')]) })).toBe(
      'sles:12.5-ltss',
    );
    expect(namespace({ 'var/lib/rpm/Packages.db': rpmdb([release('sles-release', '15.1'), release('SLES_BCL-release', '15.1')]) })).toBe(
      'sles:15.1-bcl',
    );
  });

  it('leaves other rpm layers to their release files', () => {
    const db = fixture('rpm/amazonlinux2023-sqlite/rpmdb.sqlite');
    expect(namespace({ 'etc/os-release': fixture('osrelease/amazon-2023/etc/os-release'), 'var/lib/rpm/rpmdb.sqlite': db })).toBe(
      'amzn:2023',
    );
    expect(namespace({ 'var/lib/rpm/rpmdb.sqlite': db })).toBeNull();
  });
});
