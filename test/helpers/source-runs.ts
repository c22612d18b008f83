/**
 * A source run end to end, as the server runs it, and the API calls that show what it wrote: the
 * updater of one source enabled by name and reading from a feed server, layers indexed through the
 * v1 API from the same server, and the stored records.
 */
import type pg from 'pg';
import { expect } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { UpdaterRunner } from '../../src/updater/runner.js';
import { runnerSettings } from '../../src/settings.js';
import { enabledSources } from '../../src/updater/sources.js';
import { json, type TestApp } from './app.js';
import { silentLog } from './db.js';
import type { FeedServer } from './feed-server.js';
import { gzip } from './tarball.js';

/** A source's updater, as the server would run it: enabled by name, reading from the feed server. */
export function updaterFor(pool: pg.Pool, name: string, url: string) {
  const config = parseConfig(`clair:\n  updater:\n    enabledupdaters: [${name}]\n    sources:\n      ${name}: { url: "${url}" }\n`);
  const sources = enabledSources(config.updater.enabledUpdaters);
  expect(sources.map((s) => s.name)).toEqual([name]);
  const runner = new UpdaterRunner({ pool, settings: runnerSettings(config), log: silentLog });
  return () => runner.run(sources[0]!);
}

/** POST /v1/layers: the server downloads the layer (a tar, gzipped here) from the feed server. */
export async function indexLayer(t: TestApp, server: FeedServer, name: string, tar: Buffer, parent?: string): Promise<void> {
  server.put(`/layers/${name}.tar.gz`, gzip(tar));
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/layers',
    payload: {
      Layer: { Name: name, Path: server.url(`/layers/${name}.tar.gz`), Format: 'Docker', ...(parent ? { ParentName: parent } : {}) },
    },
  });
  expect(res.statusCode, res.body).toBe(201);
}

/** A layer's report as "name version" → its vulnerabilities as "name FixedBy" (None: no fix), sorted; only packages with some. */
export async function layerVulnerabilities(t: TestApp, layer: string): Promise<Record<string, string[]>> {
  const res = await t.app.inject({ url: `/v1/layers/${layer}?features&vulnerabilities` });
  expect(res.statusCode, res.body).toBe(200);
  const features = json(res).Layer.Features as Array<{
    Name: string;
    Version: string;
    Vulnerabilities?: Array<{ Name: string; FixedBy?: string }>;
  }>;
  const out: Record<string, string[]> = {};
  for (const f of features) {
    const names = (f.Vulnerabilities ?? []).map((v) => `${v.Name} ${v.FixedBy ?? 'None'}`).sort();
    if (names.length > 0) out[`${f.Name} ${f.Version}`] = names;
  }
  return out;
}

/** GET /v1/namespaces/{ns}/vulnerabilities/{name}?fixedIn. */
export async function storedVulnerability(t: TestApp, namespace: string, name: string) {
  const res = await t.app.inject({ url: `/v1/namespaces/${encodeURIComponent(namespace)}/vulnerabilities/${name}?fixedIn` });
  expect(res.statusCode, res.body).toBe(200);
  return json(res).Vulnerability;
}

/**
 * Amazon's repositories as the amzn updater finds them (mirror.list → repodata/repomd.xml → its
 * updateinfo): AL2's with the given updateinfo document, AL2023's with al2023's (none: no advisory).
 */
export function amazonRepositories(
  feeds: FeedServer,
  repomd: Buffer,
  al2: Buffer,
  al2023: Buffer | string = '<?xml version="1.0" ?>\n<updates></updates>',
): Record<string, Buffer | string> {
  return {
    '/amzn/2/core/latest/x86_64/mirror.list': `${feeds.url('/al2-mirror/')}\n`,
    '/al2-mirror/repodata/repomd.xml': repomd,
    '/al2-mirror/repodata/updateinfo.xml.gz': gzip(al2),
    '/amzn/al2023/core/mirrors/latest/x86_64/mirror.list': `${feeds.url('/al2023-mirror/')}\n`,
    '/al2023-mirror/repodata/repomd.xml': repomd,
    '/al2023-mirror/repodata/updateinfo.xml.gz': gzip(Buffer.from(al2023)),
  };
}
