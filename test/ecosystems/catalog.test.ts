/**
 * The distribution catalog, the release detectors and the sources must agree: a source in one list
 * only would never be scheduled, a distribution the detectors cannot name would never be matched.
 * The layering that keeps them apart (the store imports nothing from ecosystems/, ecosystems/
 * nothing from updater/) is checked with the rest of src/ in test/layering.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import {
  APPLICATION_ECOSYSTEMS,
  DISTRIBUTIONS,
  SOURCE_CATALOG,
  distributionOf,
  ecosystemOf,
  ecosystemPackageName,
  ecosystemWithOsvName,
} from '../../src/ecosystems/catalog.js';
import { PACKAGE_FORMATS } from '../../src/ecosystems/formats.js';
import { isVersionFormatName, knownNamespaceFormat, matchNamespace, VERSION_FORMATS } from '../../src/ecosystems/index.js';
import { packageUrl } from '../../src/scanner/purl.js';
import { namespaceFromOsRelease } from '../../src/ecosystems/osrelease/os-release.js';
import type { Source } from '../../src/model/updater.js';
import { SOURCES } from '../../src/updater/sources.js';

/** A version each naming rule accepts. */
const SAMPLE_VERSION: Record<string, string> = {
  debian: '12',
  ubuntu: '24.04',
  alpine: '3.20.1',
  major: '9.4',
  version: '15.6',
  rolling: '20240101',
};

describe('the distribution catalog', () => {
  it('names each distribution from its own os-release IDs, in its own namespace', () => {
    for (const d of DISTRIBUTIONS) {
      for (const id of d.osReleaseIds) {
        const namespace = namespaceFromOsRelease({ ID: id, VERSION_ID: SAMPLE_VERSION[d.naming]! });
        expect(namespace, `${id} (${d.id})`).toBeDefined();
        expect(distributionOf(namespace!)?.id, `${id} → ${namespace}`).toBe(d.id);
        expect(knownNamespaceFormat(namespace!)).toBe(d.versionFormat);
      }
    }
  });

  it('has one row per distribution and per os-release ID', () => {
    const ids = DISTRIBUTIONS.map((d) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    const osIds = DISTRIBUTIONS.flatMap((d) => d.osReleaseIds);
    expect(new Set(osIds).size).toBe(osIds.length);
  });

  it('gives every distribution a format of the format catalog, whose rows each name one format', () => {
    for (const d of DISTRIBUTIONS) expect(isVersionFormatName(d.versionFormat), `${d.id}: ${d.versionFormat}`).toBe(true);
    const names = PACKAGE_FORMATS.map((f) => f.versions.name);
    expect(new Set(names).size).toBe(names.length);
    for (const f of PACKAGE_FORMATS) expect(f.lister.format, f.lister.name).toBe(f.versions.name);
  });

  it('feeds every distribution from a source the catalog and the updaters both know, or from the distribution it rebuilds', () => {
    const sourceNames = SOURCE_CATALOG.map((s) => s.name);
    for (const d of DISTRIBUTIONS) {
      if (d.source !== undefined) expect(sourceNames, d.id).toContain(d.source);
      if (d.matchedAs !== undefined) {
        const target = distributionOf(`${d.matchedAs}:1`);
        expect(target?.source, `${d.id} is matched as ${d.matchedAs}, which must have a source`).toBeDefined();
        expect(target?.versionFormat).toBe(d.versionFormat);
        expect(matchNamespace(`${d.id}:8.6`)).toBe(`${d.matchedAs}:8`);
      }
    }
    // Chainguard's images are matched against Wolfi's feed (no source writes chainguard:rolling).
    expect(matchNamespace('chainguard:rolling')).toBe('wolfi:rolling');
  });

  it('has code for every source it lists, in its order, and a source for every updater', () => {
    expect(SOURCES.map((s) => s.name)).toEqual(SOURCE_CATALOG.map((s) => s.name));
    const fed = new Set([...DISTRIBUTIONS, ...APPLICATION_ECOSYSTEMS].flatMap((d) => (d.source ? [d.source] : [])));
    // An alternative feeds what the source it replaces feeds.
    for (const s of SOURCE_CATALOG) if (s.alternativeTo !== undefined && fed.has(s.alternativeTo)) fed.add(s.name);
    for (const source of SOURCES)
      if (source.kind === 'vulnerabilities') expect(fed, `${source.name} feeds no catalog distribution`).toContain(source.name);
    // What a row says a source brings is what its code brings: only vulnerability data makes an image's data known.
    expect(SOURCE_CATALOG.map((s) => s.kind)).toEqual(SOURCES.map((s) => s.kind));
  });

  it('names every source a folder exports, so no code goes unscheduled', async () => {
    const named = SOURCE_CATALOG.map((s) => s.name);
    for (const folder of new Set(SOURCE_CATALOG.map((s) => s.folder))) {
      const { sources } = (await import(`../../src/ecosystems/${folder}/updater.ts`)) as { sources: readonly Source[] };
      for (const source of sources) expect(named, `ecosystems/${folder}/updater.ts exports ${source.name}`).toContain(source.name);
    }
  });

  it('gives the configuration its updater names and default locations; an alternative is enabled only instead of its source', () => {
    const config = parseConfig('');
    expect(config.updater.enabledUpdaters).toEqual(SOURCE_CATALOG.filter((s) => !s.alternativeTo).map((s) => s.name));
    for (const { name, url } of SOURCE_CATALOG) expect(config.updater.sources[name]).toEqual({ url });
    expect(parseConfig('clair:\n  updater:\n    enabledupdaters: [rhel-vex, nvd]\n').updater.enabledUpdaters).toEqual(['rhel-vex', 'nvd']);
    expect(() => parseConfig('clair:\n  updater:\n    enabledupdaters: [rhel, rhel-vex]\n')).toThrow(
      /rhel-vex and rhel feed the same distributions/,
    );
  });
});

describe('the application ecosystems', () => {
  it('each have a namespace of OSV’s name lower-cased, distinct from every distribution’s, and a version order of the catalog', () => {
    for (const e of APPLICATION_ECOSYSTEMS) {
      expect(e.namespace).toBe(e.osvName.toLowerCase());
      expect(ecosystemOf(e.namespace)).toBe(e);
      expect(ecosystemWithOsvName(e.osvName)).toBe(e);
      expect(distributionOf(e.namespace), e.namespace).toBeUndefined();
      expect(isVersionFormatName(e.versionFormat), `${e.namespace}: ${e.versionFormat}`).toBe(true);
      expect(knownNamespaceFormat(e.namespace)).toBe(e.versionFormat);
      expect(matchNamespace(e.namespace)).toBe(e.namespace);
    }
    const names = VERSION_FORMATS.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('name packages as their registries do', () => {
    const named = (namespace: string, name: string) => ecosystemPackageName(ecosystemOf(namespace)!, name);
    expect(named('pypi', 'Django_Rest.framework')).toBe('django-rest-framework');
    expect(named('nuget', 'Newtonsoft.Json')).toBe('newtonsoft.json');
    expect(named('npm', 'JSONStream')).toBe('JSONStream');
  });

  it('give each package its package URL', () => {
    const purl = (namespace: string, name: string, version: string) => packageUrl({ namespace, name, version, versionFormat: '' });
    expect(purl('npm', '@babel/core', '7.0.0')).toBe('pkg:npm/%40babel/core@7.0.0');
    expect(purl('npm', 'lodash', '4.17.15')).toBe('pkg:npm/lodash@4.17.15');
    expect(purl('pypi', 'urllib3', '1.26.12')).toBe('pkg:pypi/urllib3@1.26.12');
    expect(purl('go', 'golang.org/x/net', 'v0.0.0-20211112202133-69e39bad7dc2')).toBe(
      'pkg:golang/golang.org/x/net@v0.0.0-20211112202133-69e39bad7dc2',
    );
    expect(purl('go', 'stdlib', '1.21.3')).toBe('pkg:golang/stdlib@1.21.3');
    expect(purl('maven', 'com.fasterxml.jackson.core:jackson-databind', '2.9.10.1')).toBe(
      'pkg:maven/com.fasterxml.jackson.core/jackson-databind@2.9.10.1',
    );
    expect(purl('rubygems', 'rack', '2.2.3')).toBe('pkg:gem/rack@2.2.3');
    expect(purl('crates.io', 'regex', '1.5.4')).toBe('pkg:cargo/regex@1.5.4');
    expect(purl('nuget', 'newtonsoft.json', '13.0.1')).toBe('pkg:nuget/newtonsoft.json@13.0.1');
    expect(purl('packagist', 'symfony/http-kernel', '5.4.0')).toBe('pkg:composer/symfony/http-kernel@5.4.0');
  });
});
