/**
 * Application packages found in layers end to end: a Debian layer carrying every kind the indexer
 * reads (appsLayer: a real npm install, real Python distributions, Composer, .NET, Cargo.lock,
 * Debian's gemspecs and jars, a Go program, a Rust program with cargo auditable's data, a Spring
 * Boot jar), with the OSV fixture records loaded, through the v1 API, `tarsier scan` (docker save
 * archives, an OCI layout) and the images API from a real registry: every package equal to its
 * ecosystem's own tool's listing (expectEveryOracle), the advisories for them reported with the
 * layer that added them, and a later layer that deletes `node_modules/lodash` and the Spring Boot
 * jar (whiteouts) or rewrites a manifest in place changing what the image holds.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { osvSource } from '../../src/ecosystems/osv/updater.js';
import type { ScanReport } from '../../src/scanner/report.js';
import { runnerSettings } from '../../src/settings.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { silentLog } from '../helpers/db.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { dockerSaveArchive } from '../helpers/image-archives.js';
import { ociLayout, pushImage } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry } from '../helpers/registry.js';
import { scanInProcess } from '../helpers/scan-run.js';
import { indexLayer, layerVulnerabilities } from '../helpers/source-runs.js';
import { gzip, tarball, type TarEntry } from '../helpers/tarball.js';
import { whenDone } from '../helpers/when-done.js';
import { zipOf } from '../helpers/zip-archive.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const NPM_TREE = join(FIXTURES, 'npm/express-tree');
const VENV = join(FIXTURES, 'python/venv-pip');
const GO_PROGRAM = readFileSync(join(FIXTURES, 'go/bin/gofixture-amd64'));
const DEBIAN_JARS = join(FIXTURES, 'maven/jars');
const JAR_ORACLE = JSON.parse(readFileSync(join(FIXTURES, 'maven/oracle.json'), 'utf8')) as Record<string, { pomProperties: string[] }>;
/** What `go version -m` printed for the Go program (go/go-version-m.json), as name and version. */
const GO_MODULES = [
  'github.com/dgrijalva/jwt-go v3.2.0+incompatible',
  'github.com/kballard/go-shellquote v0.0.0-20180428030007-95032a82bc51',
  'github.com/pkg/errors v0.9.1',
  'stdlib go1.19.8',
];
const JACKSON = 'com.fasterxml.jackson.core:jackson-databind';

/**
 * A Spring Boot application jar: a jackson-databind 2.9.10.1 library jar (as Maven's archiver
 * writes its pom.properties) and Debian's slf4j-api jar, under BOOT-INF/lib.
 */
function springBootJar(): Buffer {
  const databind = zipOf([
    ['META-INF/MANIFEST.MF', 'Manifest-Version: 1.0\r\n\r\n'],
    [
      'META-INF/maven/com.fasterxml.jackson.core/jackson-databind/pom.properties',
      'version=2.9.10.1\ngroupId=com.fasterxml.jackson.core\nartifactId=jackson-databind\n',
    ],
  ]);
  return zipOf([
    ['BOOT-INF/lib/jackson-databind-2.9.10.1.jar', databind],
    ['BOOT-INF/lib/slf4j-api-1.7.32.jar', readFileSync(join(DEBIAN_JARS, 'slf4j-api.jar'))],
  ]);
}

/** Every file under dir as a tar entry under prefix. */
function filesUnder(dir: string, prefix: string): TarEntry[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const path = join(e.parentPath, e.name);
      return { path: `${prefix}${relative(dir, path)}`, content: readFileSync(path) };
    });
}

/** What `npm ls --all --json --long` recorded for the fixture: every installed package as "name version". */
function npmLsPackages(): string[] {
  const found = new Set<string>();
  const walk = (deps: Record<string, { name?: string; version?: string; dependencies?: object }> | undefined) => {
    for (const [key, d] of Object.entries(deps ?? {})) {
      if (d.version) found.add(`${d.name ?? key} ${d.version}`);
      walk(d.dependencies as never);
    }
  };
  walk((JSON.parse(readFileSync(join(NPM_TREE, 'npm-ls.json'), 'utf8')) as { dependencies: never }).dependencies);
  return [...found].sort();
}

interface ReportedFeature {
  Name: string;
  Version: string;
  NamespaceName: string;
  AddedBy: string;
  Vulnerabilities?: Array<{ Name: string; FixedBy?: string }>;
}

async function features(t: TestApp, layer: string): Promise<ReportedFeature[]> {
  const res = await t.app.inject({ url: `/v1/layers/${layer}?features&vulnerabilities` });
  expect(res.statusCode, res.body).toBe(200);
  return json(res).Layer.Features as ReportedFeature[];
}

/**
 * One layer of every kind of application package: a real npm install, a virtualenv, Composer,
 * .NET, Cargo.lock, Debian's gemspecs, a Go program, a Rust program with cargo auditable's data,
 * Debian's jars and a Spring Boot jar, on Debian 12's release file.
 */
function appsLayer(): Buffer {
  return tarball([
    { path: 'etc/os-release', content: readFileSync(join(FIXTURES, 'osrelease/debian-12/etc/os-release')) },
    ...filesUnder(join(NPM_TREE, 'node_modules'), 'srv/app/node_modules/'),
    { path: 'srv/app/package.json', content: readFileSync(join(NPM_TREE, 'package.json')) },
    // A manifest npm itself could not read: left out (and logged), the rest of the layer listed.
    { path: 'srv/app/node_modules/broken/package.json', content: '{"name": "broken", "version": ' },
    ...filesUnder(VENV, ''),
    {
      path: 'var/www/app/vendor/composer/installed.json',
      content: readFileSync(join(FIXTURES, 'composer/composer-2/vendor/composer/installed.json')),
    },
    { path: 'app/MyApp.deps.json', content: readFileSync(join(FIXTURES, 'dotnet/MyApp.deps.json')) },
    { path: 'usr/src/ripgrep/Cargo.lock', content: readFileSync(join(FIXTURES, 'cargo/ripgrep-0.10.0.Cargo.lock')) },
    ...filesUnder(join(FIXTURES, 'gem/debian-12'), ''),
    { path: 'usr/local/bin/gofixture', content: GO_PROGRAM, mode: 0o755 },
    { path: 'usr/local/bin/cratefixture', content: readFileSync(join(FIXTURES, 'cargo/bin/cratefixture')), mode: 0o755 },
    ...filesUnder(DEBIAN_JARS, 'usr/share/java/'),
    { path: 'srv/spring.jar', content: springBootJar() },
  ]);
}

/**
 * The layer that removes lodash 4.17.15 and the Spring Boot jar (whiteouts) and rewrites minimist
 * 1.2.0 as 1.2.6 in place.
 */
function fixingLayer(): Buffer {
  const upgraded = JSON.parse(readFileSync(join(NPM_TREE, 'node_modules/minimist/package.json'), 'utf8')) as { version: string };
  upgraded.version = '1.2.6';
  return tarball([
    { path: 'srv/app/node_modules/.wh.lodash', content: '' },
    { path: 'srv/.wh.spring.jar', content: '' },
    { path: 'srv/app/node_modules/minimist/package.json', content: JSON.stringify(upgraded) },
  ]);
}

/** Every ecosystem's packages in listed are exactly what its own tool, or an independent reader, listed in the fixture. */
function expectEveryOracle(listed: ReadonlyArray<{ Name: string; Version: string; NamespaceName: string }>): void {
  const npm = listed.filter((f) => f.NamespaceName === 'npm');
  expect([...new Set(npm.map((f) => `${f.Name} ${f.Version}`))].sort()).toEqual(npmLsPackages());
  const oracle = JSON.parse(readFileSync(join(FIXTURES, 'python/venv-pip.importlib.json'), 'utf8')) as Array<{
    name: string;
    version: string;
  }>;
  expect(
    listed
      .filter((f) => f.NamespaceName === 'pypi')
      .map((f) => `${f.Name} ${f.Version}`)
      .sort(),
  ).toEqual([...new Set(oracle.map((d) => `${d.name} ${d.version}`))].sort());
  // The other ecosystems' manifests, against what an independent reader listed when each fixture was taken.
  const lines = (file: string) => readFileSync(join(FIXTURES, file), 'utf8').trim().split('\n');
  const inNamespace = (namespace: string) =>
    [...new Set(listed.filter((f) => f.NamespaceName === namespace).map((f) => `${f.Name} ${f.Version}`))].sort();
  expect(inNamespace('packagist')).toEqual([...new Set(lines('composer/composer-2/jq-packages.txt'))].sort());
  expect(inNamespace('nuget')).toEqual([...new Set(lines('dotnet/MyApp.jq-packages.txt'))].sort());
  // Cargo.lock's crates, and the Rust program's: its .dep-v0 data as Python's zlib and json decoded it.
  expect(inNamespace('crates.io')).toEqual(
    [...new Set([...lines('cargo/ripgrep-0.10.0.tomllib-packages.txt'), ...lines('cargo/cratefixture.zlib-json-packages.txt')])].sort(),
  );
  expect(inNamespace('rubygems')).toEqual([...new Set(lines('gem/ruby-oracle.txt').map((l) => l.split(' ').slice(1).join(' ')))].sort());
  // Programs and Java archives: what go version -m prints, and each jar's own pom.properties.
  expect(inNamespace('go')).toEqual(GO_MODULES);
  const jars = Object.values(JAR_ORACLE).flatMap((o) => o.pomProperties.map((p) => p.replace('@', ' ')));
  // The two Debian jars without pom.properties: the manifest's version, the file name's artifactId, no groupId.
  const unnamed = ['atinject-jsr330-api 1.0.0', 'commons-logging-api 1.2'];
  expect(inNamespace('maven')).toEqual([...new Set([...jars, ...unnamed, `${JACKSON} 2.9.10.1`])].sort());
}

describe('application packages in layers', () => {
  let t: TestApp;
  let server: FeedServer;
  let base: Buffer;

  beforeAll(async () => {
    t = await testApp();
    server = await startFeedServer();
    const config = parseConfig(
      `clair:\n  updater:\n    sources:\n      osv: { url: "${pathToFileURL(join(FIXTURES, 'feeds/osv/')).href}" }\n`,
    );
    const summary = await new UpdaterRunner({ pool: t.pool, settings: runnerSettings(config), log: silentLog }).run(osvSource);
    expect(summary.status, summary.error).toBe('updated');
    base = appsLayer();
    await indexLayer(t, server, 'apps', base);
  });

  it('lists what npm ls and importlib.metadata list, each in its ecosystem, with the OSV advisories and the layer that added them', async () => {
    const listed = await features(t, 'apps');
    expectEveryOracle(listed);
    expect(listed.every((f) => f.AddedBy === 'apps')).toBe(true);
    const vulnerable = await layerVulnerabilities(t, 'apps');
    expect(vulnerable['lodash 4.17.15']).toEqual([
      'GHSA-29mw-wpgm-hmr9 4.17.21',
      'GHSA-35jh-r3h4-6jhm 4.17.21',
      'GHSA-p6mc-m468-83gw 4.17.19',
    ]);
    expect(vulnerable['minimist 1.2.0']).toEqual(['GHSA-vh95-rmgr-6w4m 1.2.3', 'GHSA-xvch-5gv4-984h 1.2.6']);
    // The answer key's records for jackson-databind 2.9.10.1 (osv-answer-key.ts), each with the fix of its range.
    expect(vulnerable[`${JACKSON} 2.9.10.1`]).toEqual([
      'GHSA-4w82-r329-3q67 2.9.10.3',
      'GHSA-57j2-w4cx-62h2 2.12.6.1',
      'GHSA-58pp-9c76-5625 2.9.10.4',
      'GHSA-jjjh-jjxp-wpff 2.12.7.1',
      'GHSA-rgv9-q543-rqg4 2.12.7.1',
    ]);
    // The standard library at the toolchain's version: the records whose ranges hold 1.19.8 (those of 1.20.4 in the answer key).
    expect(vulnerable['stdlib go1.19.8']).toEqual([
      'GO-2023-1840 1.19.10',
      'GO-2023-2102 1.20.10',
      'GO-2024-2687 1.21.9',
      'GO-2025-3503 1.23.7',
      'GO-2026-4918 1.25.10',
      'GO-2026-5026 1.25.13',
    ]);
    // The alias lodash-alias@npm:lodash@4.17.20 is lodash 4.17.20.
    expect(vulnerable['lodash 4.17.20']).toEqual(['GHSA-29mw-wpgm-hmr9 4.17.21', 'GHSA-35jh-r3h4-6jhm 4.17.21']);
  });

  it('drops a package a later layer deletes, keeps the rest with their AddedBy, and takes a manifest rewritten in place', async () => {
    await indexLayer(t, server, 'apps-fixed', fixingLayer(), 'apps');
    const listed = await features(t, 'apps-fixed');
    const npm = (name: string) =>
      listed.filter((f) => f.NamespaceName === 'npm' && f.Name === name).map((f) => `${f.Version} ${f.AddedBy}`);
    // lodash 4.17.20 stays: it is installed as lodash-alias.
    expect(npm('lodash')).toEqual(['4.17.20 apps']);
    // minimist 0.0.8 (under mkdirp) stays; 1.2.0 was rewritten as 1.2.6 by this layer.
    expect(npm('minimist').sort()).toEqual(['0.0.8 apps', '1.2.6 apps-fixed']);
    expect(npm('express')).toEqual(['4.16.0 apps']);
    // The deleted Spring Boot jar takes the packages of the jars nested in it; Debian's slf4j-api stays.
    expect(listed.filter((f) => f.Name === JACKSON)).toEqual([]);
    expect(listed.filter((f) => f.Name === 'org.slf4j:slf4j-api').map((f) => `${f.Version} ${f.AddedBy}`)).toEqual(['1.7.32 apps']);
    expect(listed.filter((f) => f.NamespaceName === 'go').map((f) => f.AddedBy)).toEqual(GO_MODULES.map(() => 'apps'));
    const vulnerable = await layerVulnerabilities(t, 'apps-fixed');
    expect(vulnerable['lodash 4.17.15']).toBeUndefined();
    expect(vulnerable['minimist 1.2.6']).toBeUndefined();
  });

  it('gives tarsier scan of a docker save archive (both styles) and an OCI layout the same packages and findings, each with the layer that added it', async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'tarsier-apps-'));
    whenDone(() => rmSync(dir, { recursive: true, force: true }));
    const targets: string[] = [];
    for (const style of ['legacy', 'oci'] as const) {
      const file = join(dir, `${style}.tar`);
      await dockerSaveArchive(file, [{ layers: [base, fixingLayer()], repoTags: ['team/apps:1'] }], { style });
      targets.push(file);
    }
    await ociLayout(join(dir, 'layout'), { layers: [gzip(base), gzip(fixingLayer())] });
    targets.push(`oci:${join(dir, 'layout')}`);
    for (const target of targets) {
      const options = { format: 'json', ignoreUnfixed: false, quiet: true, insecure: false, update: false, server: address } as const;
      const run = await scanInProcess(target, options, {}, new Date());
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout) as ScanReport;
      const [first, second] = report.layers;
      const npmPackage = (name: string) =>
        report.packages
          .filter((p) => p.namespace === 'npm' && p.name === name)
          .map((p) => `${p.version} ${p.layer === first ? 'base' : p.layer === second ? 'fix' : p.layer}`);
      expect(npmPackage('lodash'), target).toEqual(['4.17.20 base']);
      expect(npmPackage('minimist').sort(), target).toEqual(['0.0.8 base', '1.2.6 fix']);
      const findings = report.vulnerabilities.filter((f) => f.package.namespace === 'npm').map((f) => `${f.package.purl} ${f.id}`);
      expect(findings, target).toContain('pkg:npm/lodash@4.17.20 GHSA-35jh-r3h4-6jhm');
      // The Go program stays; the Spring Boot jar, deleted by the second layer, takes jackson-databind with it.
      const purls = new Set(report.vulnerabilities.map((f) => `${f.package.purl} ${f.id}`));
      expect(purls.has('pkg:golang/stdlib@go1.19.8 GO-2023-1840'), target).toBe(true);
      expect(
        [...purls].filter((f) => f.includes('jackson-databind')),
        target,
      ).toEqual([]);
      expect(
        report.packages.filter((p) => p.name === 'stdlib').map((p) => p.layer === first),
        target,
      ).toEqual([true]);
      // The manifest npm could not read either is named, with the layer that holds it: not found is not absent.
      expect(report.unread, target).toEqual({
        count: 1,
        files: [{ layer: first, location: 'srv/app/node_modules/broken/package.json', why: expect.stringContaining('JSON') }],
      });
      expect(run.stderr, target).toContain('1 file(s) of the image that may hold packages could not be read');
      expect(
        findings.filter((f) => f.startsWith('pkg:npm/lodash@4.17.15 ') || f.startsWith('pkg:npm/minimist@1.2.6 ')),
        target,
      ).toEqual([]);
    }
  });
});

describe.skipIf(missingRegistryPrograms().length > 0)('application packages of an image pushed to a registry', () => {
  it('are listed by the images API with their vulnerabilities and the layer that added each, the later layer applied', async () => {
    const registry = await startRegistry();
    whenDone(() => registry.stop());
    const t = await testApp({ yaml: `  registries:\n    "${registry.host}": { insecure: true }` });
    const config = parseConfig(
      `clair:\n  updater:\n    sources:\n      osv: { url: "${pathToFileURL(join(FIXTURES, 'feeds/osv/')).href}" }\n`,
    );
    expect((await new UpdaterRunner({ pool: t.pool, settings: runnerSettings(config), log: silentLog }).run(osvSource)).status).toBe(
      'updated',
    );
    const dir = mkdtempSync(join(tmpdir(), 'tarsier-apps-push-'));
    whenDone(() => rmSync(dir, { recursive: true, force: true }));
    const apps = gzip(appsLayer());
    // The first layer alone, as its own image: every ecosystem's packages against their oracles.
    const baseLayout = await ociLayout(join(dir, 'base'), { layers: [apps] });
    const baseDigest = await pushImage(registry, baseLayout.dir, 'team/apps', 'base');
    const layout = await ociLayout(join(dir, 'layout'), { layers: [apps, gzip(fixingLayer())] });
    const digest = await pushImage(registry, layout.dir, 'team/apps', 'v1');
    for (const tag of ['base', 'v1']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/tarsier/v1/images',
        payload: { reference: `${registry.host}/team/apps:${tag}` },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    const baseImage = json(await t.app.inject({ url: `/tarsier/v1/images/${baseDigest}` })).Image as {
      Packages: Array<{ Name: string; Version: string; NamespaceName: string; Vulnerabilities: Array<{ Name: string }> }>;
      Unread: { Count: number; Files: Array<{ Location: string }> };
    };
    expectEveryOracle(baseImage.Packages);
    expect(baseImage.Unread).toEqual({
      Count: 1,
      Files: [expect.objectContaining({ Location: 'srv/app/node_modules/broken/package.json' })],
    });
    const vulnerabilitiesOf = (name: string, version: string) =>
      baseImage.Packages.filter((p) => p.Name === name && p.Version === version).flatMap((p) => p.Vulnerabilities.map((v) => v.Name));
    expect(vulnerabilitiesOf(JACKSON, '2.9.10.1')).toHaveLength(5);
    expect(vulnerabilitiesOf('stdlib', 'go1.19.8')).toContain('GO-2023-1840');
    expect(vulnerabilitiesOf('regex', '1.5.4')).toEqual(['RUSTSEC-2022-0013']);
    const image = json(await t.app.inject({ url: `/tarsier/v1/images/${digest}` })).Image as {
      Layers: string[];
      Packages: Array<{ Name: string; Version: string; NamespaceName: string; AddedBy: string; Vulnerabilities: Array<{ Name: string }> }>;
    };
    const [base, fix] = image.Layers;
    const npm = (name: string) =>
      image.Packages.filter((p) => p.NamespaceName === 'npm' && p.Name === name)
        .map(
          (p) =>
            `${p.Version} ${p.AddedBy === base ? 'base' : p.AddedBy === fix ? 'fix' : p.AddedBy} ${p.Vulnerabilities.map((v) => v.Name).join(',')}`,
        )
        .sort();
    expect(npm('lodash')).toEqual(['4.17.20 base GHSA-29mw-wpgm-hmr9,GHSA-35jh-r3h4-6jhm']);
    expect(npm('minimist')).toEqual(['0.0.8 base GHSA-vh95-rmgr-6w4m,GHSA-xvch-5gv4-984h', '1.2.6 fix ']);
    expect(new Set(image.Packages.filter((p) => p.NamespaceName === 'npm').map((p) => `${p.Name} ${p.Version}`)).size).toBe(
      npmLsPackages().length - 1,
    );
    // The Spring Boot jar the second layer deletes takes its nested jars' packages with it.
    expect(image.Packages.filter((p) => p.Name === JACKSON)).toEqual([]);
  }, 120_000);
});
