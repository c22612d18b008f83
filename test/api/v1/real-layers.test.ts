import { readdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, testApp, type TestApp } from '../../helpers/app.js';
import { gzip, tarball, type TarEntry } from '../../helpers/tarball.js';

/**
 * Layers made of real package databases and real release files (test/fixtures, see
 * PROVENANCE.md), indexed through the API: the report must list exactly the packages the
 * databases hold, in the namespace the release files name.
 */
const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));

/** Every file under a fixture directory, at its path relative to that directory. */
function tree(dir: string, under = ''): TarEntry[] {
  const root = join(FIXTURES, dir);
  const walk = (d: string): TarEntry[] =>
    readdirSync(d).flatMap((name) => {
      const path = join(d, name);
      if (statSync(path).isDirectory()) return walk(path);
      if (name === 'expected-parsed.json' || name === 'expected.json' || name.endsWith('.csv')) return [];
      return [{ path: join(under, relative(root, path)), content: readFileSync(path) }];
    });
  return walk(root);
}

function file(fixture: string, at: string): TarEntry {
  return { path: at, content: readFileSync(join(FIXTURES, fixture)) };
}

function goldenPackages(name: string): string[] {
  const golden = JSON.parse(readFileSync(join(FIXTURES, 'expected', name), 'utf8')) as Array<{ name: string; version: string }>;
  return golden.map((p) => `${p.name} ${p.version}`).sort();
}

/** rpm's expected.json as "name [epoch:]version-release", one per distinct package. */
function rpmPackages(dir: string): string[] {
  const expected = JSON.parse(readFileSync(join(FIXTURES, 'rpm', dir, 'expected.json'), 'utf8')) as {
    packages: Array<{ name: string; epoch: number | null; version: string; release: string }>;
  };
  const evr = (p: { epoch: number | null; version: string; release: string }) => `${p.epoch ? `${p.epoch}:` : ''}${p.version}-${p.release}`;
  return [...new Set(expected.packages.filter((p) => p.name !== 'gpg-pubkey').map((p) => `${p.name} ${evr(p)}`))].sort();
}

const cases: Array<{ name: string; entries: () => TarEntry[]; namespace: string; packages: () => string[] }> = [
  {
    name: 'Debian 9 (dpkg status)',
    entries: () => [...tree('osrelease/debian-9'), file('dpkg/debian-9-stretch.status', 'var/lib/dpkg/status')],
    namespace: 'debian:9',
    packages: () => goldenPackages('dpkg/debian-9-stretch.json'),
  },
  {
    name: 'Ubuntu 18.04 (dpkg status)',
    entries: () => [...tree('osrelease/ubuntu-18.04'), file('dpkg/ubuntu-18.04.status', 'var/lib/dpkg/status')],
    namespace: 'ubuntu:18.04',
    packages: () => goldenPackages('dpkg/ubuntu-18.04.json'),
  },
  {
    name: 'distroless Debian 11 (status.d)',
    entries: () => [...tree('osrelease/distroless-debian-11'), ...tree('dpkg/distroless-debian11-arm64')],
    namespace: 'debian:11',
    packages: () => goldenPackages('dpkg/distroless-debian11-arm64.json'),
  },
  {
    name: 'Alpine 3.18 (apk installed)',
    entries: () => [...tree('osrelease/alpine-3.18'), ...tree('apk/alpine-3.18')],
    namespace: 'alpine:v3.18',
    packages: () => goldenPackages('apk/alpine-3.18.json'),
  },
  {
    name: 'Amazon Linux 2023 (rpm SQLite)',
    entries: () => [...tree('osrelease/amazon-2023'), file('rpm/amazonlinux2023-sqlite/rpmdb.sqlite', 'var/lib/rpm/rpmdb.sqlite')],
    namespace: 'amzn:2023',
    packages: () => rpmPackages('amazonlinux2023-sqlite'),
  },
  {
    name: 'RHEL 8 (rpm Berkeley DB)',
    entries: () => [...tree('osrelease/rhel-8'), file('rpm/rhel8-libuuid-bdb/Packages', 'var/lib/rpm/Packages')],
    namespace: 'rhel:8',
    packages: () => rpmPackages('rhel8-libuuid-bdb'),
  },
  {
    name: 'SLES 15 SP3 (rpm NDB)',
    entries: () => [...tree('osrelease/sles-15.3'), file('rpm/sle15-bci-ndb/Packages.db', 'usr/lib/sysimage/rpm/Packages.db')],
    namespace: 'sles:15.3',
    packages: () => rpmPackages('sle15-bci-ndb'),
  },
];

let dir: string;
let t: TestApp;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tarsier-real-'));
  await chmod(dir, 0o755);
  t = await testApp({ yaml: `  api:\n    localroots: [${dir}]` });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('layers of real package databases', () => {
  it.each(cases)("$name: the report lists exactly the database's packages in $namespace", async (c) => {
    const name = c.name.replace(/\W+/g, '-');
    const path = join(dir, `${name}.tar.gz`);
    await writeFile(path, gzip(tarball(c.entries())));
    const res = await t.app.inject({ method: 'POST', url: '/v1/layers', payload: { Layer: { Name: name, Path: path, Format: 'Docker' } } });
    expect(res.statusCode).toBe(201);
    const layer = json(await t.app.inject({ url: `/v1/layers/${name}?features` })).Layer;
    expect(layer.NamespaceName).toBe(c.namespace);
    const listed = layer.Features.map((f: { Name: string; Version: string }) => `${f.Name} ${f.Version}`).sort();
    const expected = c.packages();
    expect(expected.length).toBeGreaterThan(0);
    expect(listed).toEqual(expected);
  });
});
