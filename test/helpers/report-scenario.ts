import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { prng } from './prng.js';
import { gzip, tarball } from './tarball.js';

/**
 * Images and vulnerabilities for layer-report tests: a Debian 9 base layer from a real dpkg
 * database (test/fixtures/dpkg/debian-9-stretch.status), a child that upgrades, removes and adds
 * packages, and an unrelated Debian 10 layer; seeded vulnerabilities with metadata, text that
 * needs escaping, fixed and unfixed, several per package.
 */

const FIXTURES = new URL('../fixtures/dpkg/', import.meta.url);
const osRelease = (version: string, codename: string) =>
  `PRETTY_NAME="Debian GNU/Linux ${version} (${codename})"\nNAME="Debian GNU/Linux"\nVERSION_ID="${version}"\nID=debian\n`;

export const REPORT_LAYERS = ['stretch-base', 'stretch-app', 'buster-pg'] as const;
/** Query strings of the three report views. */
export const REPORT_QUERIES = ['', '?features', '?features&vulnerabilities'] as const;

interface Stanza {
  source: string;
  version: string;
  text: string;
}

function stanzas(status: string): Stanza[] {
  return status
    .split(/\n\n+/)
    .filter((s) => /^Status: install ok installed$/m.test(s))
    .map((text) => {
      const pkg = /^Package: (.+)$/m.exec(text)![1]!;
      const source = /^Source: (\S+)/m.exec(text)?.[1] ?? pkg;
      return { source, version: /^Version: (.+)$/m.exec(text)![1]!, text };
    });
}

async function layerFile(dir: string, name: string, files: Record<string, string>): Promise<string> {
  const path = join(dir, `${name}.tar.gz`);
  await writeFile(path, gzip(tarball(Object.entries(files).map(([p, content]) => ({ path: p, content })))));
  return path;
}

async function post(t: TestApp, input: Record<string, unknown>): Promise<void> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/layers', payload: { Layer: { Format: 'Docker', ...input } } });
  expect(res.statusCode, res.body).toBe(201);
}

/** The source packages of the base image, for tests that change their vulnerabilities. */
export interface ReportScenario {
  /** Source packages in stretch-base (and so in stretch-app, unless upgraded away). */
  stretchSources: string[];
  /** Source packages only in buster-pg. */
  busterSources: string[];
}

/** Indexes the three layers from dir (an api.localroots directory) and writes the vulnerabilities. */
export async function seedReportScenario(t: TestApp, dir: string): Promise<ReportScenario> {
  const stretch = stanzas(await readFile(new URL('debian-9-stretch.status', FIXTURES), 'utf8'));
  const buster = stanzas(await readFile(new URL('debian-10-postgresql.status', FIXTURES), 'utf8'));
  // The child upgrades every 7th package, removes every 11th and adds one of its own.
  const app = stretch
    .filter((_, i) => i % 11 !== 5)
    .map((s, i) => (i % 7 === 3 ? s.text.replace(`Version: ${s.version}`, `Version: ${s.version}+app1`) : s.text));
  app.push('Package: tarsier-app\nStatus: install ok installed\nVersion: 2.0-1\nArchitecture: amd64\n');
  await post(t, {
    Name: 'stretch-base',
    Path: await layerFile(dir, 'stretch-base', {
      'etc/os-release': osRelease('9', 'stretch'),
      'var/lib/dpkg/status': stretch.map((s) => s.text).join('\n\n') + '\n',
    }),
  });
  await post(t, {
    Name: 'stretch-app',
    ParentName: 'stretch-base',
    Path: await layerFile(dir, 'stretch-app', { 'var/lib/dpkg/status': app.join('\n\n') + '\n' }),
  });
  await post(t, {
    Name: 'buster-pg',
    Path: await layerFile(dir, 'buster-pg', {
      'etc/os-release': osRelease('10', 'buster'),
      'var/lib/dpkg/status': buster.map((s) => s.text).join('\n\n') + '\n',
    }),
  });

  const random = prng(1329);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const severities = ['Unknown', 'Negligible', 'Low', 'Medium', 'High', 'Critical'];
  for (const [namespace, packages] of [
    ['debian:9', stretch],
    ['debian:10', buster],
  ] as const) {
    for (let i = 0; i < 60; i++) {
      const target = pick(packages);
      const second = pick(packages);
      const fixed = [
        'None', // unfixed: every version affected
        `${target.version}+deb1`, // fixed after the installed version: affected
        `${target.version}+app2`, // fixed after the child's upgrade too
        '0.1-1', // fixed long before: not affected
      ][i % 4]!;
      const score = Math.round(random() * 100) / 10;
      const res = await t.app.inject({
        method: 'POST',
        url: `/v1/namespaces/${encodeURIComponent(namespace)}/vulnerabilities`,
        payload: {
          Vulnerability: {
            Name: `CVE-2024-${String(1000 + i).padStart(5, '0')}`,
            Severity: pick(severities),
            Description: `Flaw ${i} in ${target.source}: “quoted” text, a "quote", a back\\slash, <tag> & é\u2028line`,
            Link: i % 5 === 0 ? '' : `https://security-tracker.debian.org/tracker/CVE-2024-${1000 + i}`,
            ...(i % 3 === 0 ? {} : { Metadata: { NVD: { CVSSv3: { Score: score, Vectors: 'AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' } } } }),
            FixedIn: [
              { Name: target.source, Version: fixed },
              ...(i % 6 === 1 && second.source !== target.source ? [{ Name: second.source, Version: 'None' }] : []),
            ],
          },
        },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
  }
  return {
    stretchSources: [...new Set(stretch.map((s) => s.source))],
    busterSources: [...new Set(buster.map((s) => s.source))].filter((s) => !stretch.some((x) => x.source === s)),
  };
}

/** GET /v1/layers/{name}{query} in a revision: the exact bytes. */
export async function reportBytes(t: TestApp, layer: string, query: string, revision: 'A' | 'B'): Promise<Buffer> {
  const res = await t.app.inject({ url: `/v1/layers/${layer}${query}`, headers: { 'X-Clair-Api-Revision': revision } });
  expect(res.statusCode, res.body).toBe(200);
  return res.rawPayload;
}
