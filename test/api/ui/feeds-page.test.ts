/**
 * The feeds page without a browser: each enabled source's last success, next run, records and last
 * error as the updater recorded them, the failing count and the data's age.
 */
import { describe, expect, it } from 'vitest';
import { recordFailure, recordSuccess } from '../../../src/store/updater-state.js';
import { testApp } from '../../helpers/app.js';
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
    /** The row's cells after its heading: enabled, last success, last attempt, next run, records, changed, last error. */
    const row = (source: string) => [...rows.get(source)!.matchAll(/<td[^>]*>([\s\S]*?)<\/td\s*>/g)].map((m) => text(m[1]!));

    expect([...rows.keys()]).toEqual(['debian', 'alpine', 'nvd']);
    const [enabled, , , , records, changed, error] = row('debian');
    expect([enabled, records, changed, error]).toEqual(['yes', '1,234', '7', '—']);
    const alpine = row('alpine');
    expect([alpine[0], alpine[4], alpine[6]]).toEqual(['yes', '50', 'failing ×2 secdb answered 503']);
    expect(alpine[3]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 2 minutes\)$/);
    // Never run: no success, no records.
    expect(row('nvd').slice(1, 2)).toEqual(['never']);
    expect(byTestId(res.body, 'failing-count')).toEqual(['1']);
    expect(byTestId(res.body, 'data-age')).toEqual([expect.stringMatching(/^\d+ seconds? ago$/)]);
  });
});
