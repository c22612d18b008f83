import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { expect } from 'vitest';
import { whenDone } from './when-done.js';
import type { Queryable } from '../../src/store/pool.js';
import { parseConfig } from '../../src/config.js';
import { SummaryRefresher } from '../../src/images/summaries.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { runnerSettings } from '../../src/settings.js';
import { enabledSources } from '../../src/updater/sources.js';
import { json, testApp, type TestApp } from './app.js';
import { addVulnerability, seedDescription } from './vulnerabilities.js';
import { hasChromium, launchChromium } from './browser.js';
import { silentLog } from './db.js';
import { startFeedServer } from './feed-server.js';
import { debianLayer, layer, ociLayout, pushImage } from './oci-image.js';
import { missingRegistryPrograms, startRegistry, type Registry } from './registry.js';

/** What a dashboard test needs and does not have (it is skipped, saying so). */
export function missingForDashboard(): string[] {
  return [...missingRegistryPrograms(), ...(hasChromium() ? [] : ['chromium'])];
}

/**
 * Summaries that do not yet hold the counts of now: stale ones, and queued changes the refreshers
 * have not marked yet (each may make any number of summaries not current). 0: every list reads
 * current summaries.
 */
export async function summariesNotCurrent(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT (SELECT count(*) FROM ancestry_summary WHERE stale) + (SELECT count(*) FROM summary_change) AS n',
  );
  return Number(rows[0]!.n);
}

/** The API token the seeded server requires (the dashboard asks for it once). */
export const TOKEN = 'dashboard-test-token';

const fixture = (path: string): Buffer => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));

/**
 * The vulnerabilities the seeded server knows, through the v1 API. CVE-2021-44228 is in the KEV
 * excerpt and CVE-1999-0005 in the EPSS excerpt (test/fixtures/feeds), which the kev and epss
 * updaters load; the packages are in the Debian fixtures' dpkg databases.
 */
export const SEEDED_VULNERABILITIES = {
  'debian:9': [
    { Name: 'CVE-2021-44228', Severity: 'Critical', FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u1' }] },
    { Name: 'CVE-1999-0005', Severity: 'High', FixedIn: [{ Name: 'zlib', Version: 'None' }] },
    { Name: 'CVE-2099-1002', Severity: 'Medium', FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u2' }] },
    { Name: 'CVE-2099-1003', Severity: 'Low', FixedIn: [{ Name: 'zlib', Version: 'None' }] },
  ],
  'debian:10': [
    { Name: 'CVE-2099-2001', Severity: 'Critical', FixedIn: [{ Name: 'postgresql-11', Version: '11.22-0+deb10u3' }] },
    { Name: 'CVE-2099-2003', Severity: 'Low', FixedIn: [{ Name: 'postgresql-11', Version: '11.23-0+deb10u1' }] },
  ],
} as const;

/** The images pushed and scanned: repository:tag → its layers. */
const IMAGES: Array<{ repository: string; tag: string; layers: () => Buffer[] }> = [
  { repository: 'team/app', tag: 'v1', layers: () => [debianLayer(9), layer({ 'srv/app/main.sh': 'echo v1\n' })] },
  { repository: 'team/app', tag: 'v2', layers: () => [debianLayer(10), layer({ 'srv/app/main.sh': 'echo v2\n' })] },
  { repository: 'team/base', tag: '9', layers: () => [debianLayer(9)] },
  { repository: 'team/tools', tag: 'latest', layers: () => [debianLayer(8)] },
];

export interface Dashboard {
  t: TestApp;
  origin: string;
  registry: Registry;
  browser: Browser;
  /** repository:tag → manifest digest. */
  digests: Map<string, string>;
  /** An API request with the token. */
  api(url: string): Promise<any>;
  /** Resolves once every image summary is current: none stale, no change queued (the refresher has caught up with the changes made). */
  summariesSettled(): Promise<void>;
}

/**
 * A server with images and vulnerabilities seeded through the API (and EPSS/KEV through their
 * updaters over HTTP), listening on loopback, and a headless Chromium. Everything is stopped when
 * the test (or file) that started it ends.
 */
export async function startDashboard(): Promise<Dashboard> {
  const registry = await startRegistry();
  whenDone(() => registry.stop());
  const t = await testApp({
    yaml: `  api:\n    auth:\n      tokens: [${TOKEN}]\n  registries:\n    "${registry.host}": { insecure: true }`,
  });
  const authorization = `Bearer ${TOKEN}`;
  for (const [namespace, list] of Object.entries(SEEDED_VULNERABILITIES)) {
    for (const v of list) {
      await addVulnerability(t, namespace, { ...v, Description: `${seedDescription(v)} <b>(seeded)</b>` }, { authorization });
    }
  }

  const feeds = await startFeedServer();
  feeds.put('/epss.csv.gz', gzipSync(fixture('feeds/epss/epss-scores-excerpt.csv')));
  feeds.put('/kev.json', fixture('feeds/kev/known_exploited_vulnerabilities-excerpt.json'));
  const config = parseConfig(
    `clair:\n  updater:\n    enabledupdaters: [epss, kev]\n    sources:\n      epss: { url: "${feeds.url('/epss.csv.gz')}" }\n      kev: { url: "${feeds.url('/kev.json')}" }\n`,
  );
  const runner = new UpdaterRunner({ pool: t.pool, settings: runnerSettings(config), log: silentLog });
  for (const source of enabledSources(config.updater.enabledUpdaters))
    expect(await runner.run(source)).toMatchObject({ status: 'updated' });

  const scratch = await mkdtemp(join(tmpdir(), 'tarsier-dashboard-'));
  whenDone(() => rm(scratch, { recursive: true, force: true }));
  const digests = new Map<string, string>();
  for (const [i, image] of IMAGES.entries()) {
    const layout = await ociLayout(join(scratch, String(i)), { layers: image.layers() });
    const digest = await pushImage(registry, layout.dir, image.repository, image.tag);
    const res = await t.app.inject({
      method: 'POST',
      url: '/tarsier/v1/images',
      headers: { authorization },
      payload: { reference: `${registry.host}/${image.repository}:${image.tag}` },
    });
    expect(res.statusCode, res.body).toBe(201);
    digests.set(`${image.repository}:${image.tag}`, digest);
  }

  // As the server runs it: image summaries recomputed after each change.
  const refresher = new SummaryRefresher({ pool: t.pool, connection: t.pool.options, log: silentLog });
  await refresher.start();
  whenDone(() => refresher.stop());

  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
  const browser = await launchChromium();
  whenDone(() => browser.close());
  return {
    t,
    origin,
    registry,
    browser,
    digests,
    summariesSettled: async () => {
      await expect.poll(() => summariesNotCurrent(t.pool)).toBe(0);
      await refresher.idle();
    },
    api: async (url) => {
      const res = await t.app.inject({ url, headers: { authorization } });
      expect(res.statusCode, res.body).toBe(200);
      return json(res);
    },
  };
}
