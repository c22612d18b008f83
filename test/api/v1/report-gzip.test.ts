import { chmod, mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApp } from '../../helpers/app.js';
import { curlCompressed } from '../../helpers/curl.js';
import { REPORT_LAYERS, REPORT_QUERIES, reportBytes, seedReportScenario } from '../../helpers/report-scenario.js';

/**
 * Layer reports served gzip-compressed (from chunks compressed once: src/reports/report-gzip.ts)
 * decompress to exactly the bytes served without compression: read by Node's zlib and by curl
 * over loopback, built, cached, and rebuilt after a change.
 */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tarsier-report-gzip-'));
  await chmod(dir, 0o755);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Reports at least this long are sent gzip-compressed to clients that accept it (src/api/v1/layers.ts). */
const GZIP_MIN_BYTES = 1024;

describe('gzip layer reports', () => {
  it('decompress to the identity bytes, read by zlib and by curl, built, cached and rebuilt', async () => {
    const t = await testApp({ yaml: `  api:\n    localroots: [${dir}]\n` });
    const seeded = await seedReportScenario(t, dir);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;

    /** The identity bytes, once the same report asked for with gzip (first, so it builds the report when not cached) came out the same. */
    const check = async (pass: string, layer: string, query: string, revision: 'A' | 'B') => {
      const headers = { 'X-Clair-Api-Revision': revision };
      const viaCurl = await curlCompressed(`${base}/v1/layers/${layer}${query}`, headers);
      const injected = await t.app.inject({ url: `/v1/layers/${layer}${query}`, headers: { ...headers, 'accept-encoding': 'gzip' } });
      const identity = await reportBytes(t, layer, query, revision);
      const name = `${pass}: ${layer}${query} ${revision}`;
      const compressed = identity.length >= GZIP_MIN_BYTES;
      expect({ name, encoding: viaCurl.encoding }).toEqual({ name, ...(compressed ? { encoding: 'gzip' } : {}) });
      expect({ name, same: viaCurl.body.equals(identity) }).toEqual({ name, same: true });
      const decompressed = compressed ? gunzipSync(injected.rawPayload) : injected.rawPayload;
      expect({ name, same: decompressed.equals(identity) }).toEqual({ name, same: true });
      return identity;
    };

    for (const pass of ['built', 'cached']) {
      for (const layer of REPORT_LAYERS) {
        for (const query of REPORT_QUERIES) {
          for (const revision of ['A', 'B'] as const) await check(pass, layer, query, revision);
        }
      }
    }

    // A new vulnerability of a package the Debian 9 layers have: their reports are rebuilt.
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/namespaces/debian%3A9/vulnerabilities',
      payload: {
        Vulnerability: { Name: 'CVE-2099-0002', Severity: 'High', FixedIn: [{ Name: seeded.stretchSources[0]!, Version: 'None' }] },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    for (const layer of ['stretch-base', 'stretch-app']) {
      expect((await check('rebuilt', layer, '?features&vulnerabilities', 'B')).toString()).toContain('CVE-2099-0002');
    }
  });
});
