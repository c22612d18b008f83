/**
 * The feeds page without a browser: each enabled source's last success, next run, records and last
 * error as the updater recorded them, the failing count and the data's age (never moved by NVD,
 * EPSS or KEV), and each namespace's data.
 */
import { describe, expect, it } from 'vitest';
import { recordFailure, recordSuccess } from '../../../src/store/updater-state.js';
import { testApp } from '../../helpers/app.js';
import { addVulnerability } from '../../helpers/vulnerabilities.js';
import { byTestId, text } from '../../helpers/html-text.js';

describe('the feeds page', () => {
  it('shows each source as the updater recorded it, and counts the failing ones', async () => {
    const t = await testApp({ yaml: '  updater:\n    enabledupdaters: [debian, alpine, nvd]' });
    await recordSuccess(t.pool, 'debian', { fingerprint: '{}', records: 1234, changed: 7, durationMs: 100, nextRunInMs: 3_600_000 });
    await recordSuccess(t.pool, 'alpine', { fingerprint: '{}', records: 50, changed: 0, durationMs: 10, nextRunInMs: 3_600_000 });
    await recordFailure(t.pool, 'alpine', { fingerprint: null, error: 'secdb answered 503', durationMs: 5, nextRunInMs: 60_000 });
    await recordFailure(t.pool, 'alpine', { fingerprint: null, error: 'secdb answered 503', durationMs: 5, nextRunInMs: 120_000 });

    const res = await t.app.inject({ url: '/ui/feeds' });
    expect(res.statusCode, res.body).toBe(200);
    const rows = new Map([...res.body.matchAll(/<tr data-source="([^"]+)">([\s\S]*?)<\/tr\s*>/g)].map((m) => [m[1]!, m[2]!]));
    /** The row's cells after its heading: brings, enabled, last success, data as of, last attempt, next run, records, changed, last error. */
    const row = (source: string) => [...rows.get(source)!.matchAll(/<td[^>]*>([\s\S]*?)<\/td\s*>/g)].map((m) => text(m[1]!));

    expect([...rows.keys()]).toEqual(['debian', 'alpine', 'nvd']);
    const [brings, enabled, , , , , records, changed, error] = row('debian');
    expect([brings, enabled, records, changed, error]).toEqual(['vulnerabilities', 'yes', '1,234', '7', '—']);
    const alpine = row('alpine');
    expect([alpine[1], alpine[6], alpine[8]]).toEqual(['yes', '50', 'failing ×2 secdb answered 503']);
    expect(alpine[5]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 2 minutes\)$/);
    // Never run: no success, no records.
    expect(row('nvd').slice(0, 3)).toEqual(['scores (enrichment)', 'yes', 'never']);
    expect(byTestId(res.body, 'failing-count')).toEqual(['1']);
    expect(byTestId(res.body, 'data-age')).toEqual([expect.stringMatching(/^\d+ seconds? ago$/)]);
  });

  it('does not count NVD, EPSS or KEV as vulnerability data, and shows each namespace without data as such', async () => {
    const t = await testApp({ yaml: '  updater:\n    enabledupdaters: [debian, nvd, epss, kev]' });
    for (const source of ['nvd', 'epss', 'kev'])
      await recordSuccess(t.pool, source, { fingerprint: '{}', records: 10, changed: 10, durationMs: 10, nextRunInMs: 3_600_000 });
    // A namespace packages were matched in, with no data, beside one whose records came through the API.
    await t.pool.query("INSERT INTO namespace (name, version_format) VALUES ('debian:12', 'dpkg')");
    await addVulnerability(t, 'alpine:v3.18', {
      Name: 'CVE-2099-8001',
      Severity: 'High',
      FixedIn: [{ Name: 'openssl', Version: '3.1.0-r5' }],
    });

    const res = await t.app.inject({ url: '/ui/feeds' });
    expect(res.statusCode, res.body).toBe(200);
    expect(byTestId(res.body, 'data-age')).toEqual(['never']);
    expect(byTestId(res.body, 'never-updated-count')).toEqual(['1']);
    const namespaces = [
      ...res.body.matchAll(/<tr data-testid="namespace-row" data-namespace="([^"]+)" data-state="([^"]+)">([\s\S]*?)<\/tr\s*>/g),
    ].map((m) => [m[1], m[2], [...m[3]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td\s*>/g)].map((c) => text(c[1]!)).slice(0, 3)]);
    expect(namespaces).toEqual([
      ['alpine:v3.18', 'current', ['current', 'api', '1']],
      ['debian:12', 'missing', ['none', 'none yet (source: debian)', '0']],
    ]);
  });
});
