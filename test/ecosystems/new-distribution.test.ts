/**
 * A distribution is its folder and its catalog rows: a distribution added as rows (here Acme Linux,
 * which exists only as test/fixtures/ecosystems/acme: an os-release file, a feed, and a source
 * folder whose updater.ts exports its code) is a distribution everywhere, with nothing in src/
 * edited. Each check fails when a place keeps a list of its own, or when the rows are left out.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import type { Distribution, SourceEntry } from '../../src/ecosystems/catalog-rows.js';

const acme = vi.hoisted(() => ({
  distribution: {
    id: 'acme',
    osReleaseIds: ['acme'],
    naming: 'version',
    // apk ordering: 1.9-r0 comes before 1.10-r0, where a comparison of strings puts it after.
    versionFormat: 'apk',
    source: 'acme',
    purl: { vendor: 'acme-corp', distro: 'acmelinux' },
    releaseFile: { file: 'etc/acme-release', lines: [/^Acme Linux release (\d+\.\d+)/] },
  } satisfies Distribution,
  source: {
    name: 'acme',
    // Relative to src/ecosystems/, where the real sources' folders are.
    folder: '../../test/fixtures/ecosystems/acme',
    kind: 'vulnerabilities',
    url: 'https://security.acme.example/security.json',
  } satisfies SourceEntry,
}));

vi.mock('../../src/ecosystems/catalog-rows.js', async (importOriginal) => {
  const rows = await importOriginal<typeof import('../../src/ecosystems/catalog-rows.js')>();
  // Before NVD and the risk sources, as the catalog orders the distributions' sources.
  const sources = [...rows.SOURCE_CATALOG];
  sources.splice(
    sources.findIndex((s) => s.kind !== 'vulnerabilities'),
    0,
    acme.source,
  );
  return { ...rows, DISTRIBUTIONS: [...rows.DISTRIBUTIONS, acme.distribution], SOURCE_CATALOG: sources };
});

const { DISTRIBUTIONS, sourcesOfNamespace } = await import('../../src/ecosystems/catalog.js');
const { CURRENT_INDEXING, INDEXER_FINGERPRINT, INDEXER_VERSION, NAMESPACE_DETECTORS, knownNamespaceFormat } =
  await import('../../src/ecosystems/index.js');
const { MATCHING } = await import('../../src/ecosystems/matching.js');
const { NAMING_FINGERPRINT, namingFingerprint } = await import('../../src/ecosystems/osrelease/os-release.js');
const { parseConfig } = await import('../../src/config.js');
const { scanContents } = await import('../../src/indexer/scan.js');
const { packageUrl } = await import('../../src/scanner/purl.js');
const { SOURCES } = await import('../../src/updater/sources.js');
const { json, testApp } = await import('../helpers/app.js');
const { startFeedServer } = await import('../helpers/feed-server.js');
const { layerTar } = await import('../helpers/image-archives.js');
const { indexLayer, layerVulnerabilities, updaterFor } = await import('../helpers/source-runs.js');

const fixture = (name: string): Buffer => readFileSync(new URL(`../fixtures/ecosystems/acme/${name}`, import.meta.url));

/** A layer of Acme Linux 2.1: its os-release over an apk database of widget at version. */
const acmeLayer = (version: string): Buffer =>
  layerTar({ 'etc/os-release': fixture('etc/os-release'), 'lib/apk/db/installed': `P:widget\nV:${version}\n\n` });

describe('a distribution added as catalog rows', () => {
  it('names its layers from its os-release', () => {
    const files = new Map([['etc/os-release', fixture('etc/os-release')]]);
    const scan = scanContents({ files, whiteouts: { deleted: new Set(), opaque: new Set() } }, [], NAMESPACE_DETECTORS);
    expect(scan.namespace).toBe('acme:2.1');
  });

  it('names its layers from its one-line release file, before the shared redhat-release', () => {
    const files = new Map([
      ['etc/acme-release', Buffer.from('Acme Linux release 2.1 (Roadrunner)\n')],
      ['etc/redhat-release', Buffer.from('Red Hat Enterprise Linux release 9.4 (Plow)\n')],
    ]);
    const scan = scanContents({ files, whiteouts: { deleted: new Set(), opaque: new Set() } }, [], NAMESPACE_DETECTORS);
    expect(scan.namespace).toBe('acme:2.1');
    const redhatRelease = NAMESPACE_DETECTORS.find((d) => d.name === 'redhat-release');
    expect(redhatRelease?.wants('etc/acme-release')).toBe(true);
  });

  it('has its namespaces known, with its version format, matched against its own advisories', () => {
    expect(knownNamespaceFormat('acme:2.1')).toBe('apk');
    expect(MATCHING.advisoryNamespace('acme:2.1', 'apk')).toBe('acme:2.1');
    expect(sourcesOfNamespace('acme:2.1')).toEqual(['acme']);
  });

  it('names its packages by its row', () => {
    expect(packageUrl({ name: 'widget', version: '1.9-r0', namespace: 'acme:2.1', versionFormat: 'apk' })).toBe(
      'pkg:apk/acme-corp/widget@1.9-r0?distro=acmelinux-2.1',
    );
  });

  it('has its source code found in its folder, in the catalog order, enabled by default', () => {
    const names = SOURCES.map((s) => s.name);
    // The last of the vulnerability sources, before NVD.
    expect(names.indexOf('acme')).toBe(names.indexOf('nvd') - 1);
    expect(names.at(-3)).toBe('nvd');
    expect(parseConfig('').updater.enabledUpdaters).toContain('acme');
  });

  it('has layers indexed under the rows without it indexed again, its version the same', () => {
    expect(NAMING_FINGERPRINT).toBe(namingFingerprint(DISTRIBUTIONS));
    expect(NAMING_FINGERPRINT).not.toBe(namingFingerprint(DISTRIBUTIONS.filter((d) => d.id !== 'acme')));
    expect(NAMESPACE_DETECTORS.find((d) => d.name === 'os-release')?.fingerprint).toBe(NAMING_FINGERPRINT);
    expect(CURRENT_INDEXING).toEqual({ indexedByVersion: INDEXER_VERSION, indexerFingerprint: INDEXER_FINGERPRINT });
  });

  it('accepts writes to its namespaces without a VersionFormat, taking its row’s', async () => {
    const t = await testApp();
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/namespaces/acme%3A3.0/vulnerabilities',
      payload: { Vulnerability: { Name: 'ACME-2024-0002', Severity: 'Low', FixedIn: [{ Name: 'widget', Version: '2.0-r0' }] } },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(json(await t.app.inject({ url: '/v1/namespaces' })).Namespaces).toEqual([{ Name: 'acme:3.0', VersionFormat: 'apk' }]);
  });

  it('is fed by its source and matches its layers end to end; a layer indexed under other rows is indexed again', async () => {
    const t = await testApp();
    const server = await startFeedServer();
    server.put('/acme/security.json', fixture('security.json'));
    const summary = await updaterFor(t.pool, 'acme', server.url('/acme/security.json'))();
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('updated');

    await indexLayer(t, server, 'acme-old', acmeLayer('1.9-r0'));
    await indexLayer(t, server, 'acme-new', acmeLayer('1.10-r0'));
    expect(await layerVulnerabilities(t, 'acme-old')).toEqual({ 'widget 1.9-r0': ['ACME-2024-0001 1.10-r0'] });
    expect(await layerVulnerabilities(t, 'acme-new')).toEqual({});

    // As if indexed before the row was added (no namespace) under the fingerprint of the rows then,
    // and as if indexed so under the current rows: only the first is indexed again when posted.
    const before = namingFingerprint(DISTRIBUTIONS.filter((d) => d.id !== 'acme'));
    await t.pool.query("UPDATE layer SET namespace_id = NULL, indexer_fingerprint = $1 WHERE name = 'acme-old'", [before]);
    await t.pool.query("UPDATE layer SET namespace_id = NULL WHERE name = 'acme-new'");
    await indexLayer(t, server, 'acme-old', acmeLayer('1.9-r0'));
    await indexLayer(t, server, 'acme-new', acmeLayer('1.10-r0'));
    const layer = async (name: string) => json(await t.app.inject({ url: `/v1/layers/${name}` })).Layer;
    expect(await layer('acme-old')).toEqual({ Name: 'acme-old', NamespaceName: 'acme:2.1', IndexedByVersion: INDEXER_VERSION });
    expect(await layer('acme-new')).toEqual({ Name: 'acme-new', IndexedByVersion: INDEXER_VERSION });
    const stored = await t.pool.query<{ indexer_fingerprint: string }>("SELECT indexer_fingerprint FROM layer WHERE name = 'acme-old'");
    expect(stored.rows).toEqual([{ indexer_fingerprint: INDEXER_FINGERPRINT }]);
  });
});
