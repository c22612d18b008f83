import { describe, expect, it } from 'vitest';
import { NAMESPACE_DETECTORS, PACKAGE_LISTERS } from '../../src/ecosystems/index.js';
import { scanContents } from '../../src/indexer/scan.js';
import type { LayerScan } from '../../src/model/layer.js';

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
