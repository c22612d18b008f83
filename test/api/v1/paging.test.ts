import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PageTokens } from '../../../src/api/paging.js';
import { json, testApp, type TestApp } from '../../helpers/app.js';

const list = '/v1/namespaces/debian%3A12/vulnerabilities';

async function seed(t: TestApp, count: number): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `CVE-2024-${String(i).padStart(4, '0')}`);
  for (const name of names) {
    const res = await t.app.inject({ method: 'POST', url: list, payload: { Vulnerability: { Name: name, Severity: 'Low' } } });
    expect(res.statusCode).toBe(201);
  }
  return names;
}

describe('vulnerability list paging', () => {
  it('pages through every live vulnerability once, in order, and ends without NextPage', async () => {
    const t = await testApp();
    const names = await seed(t, 25);
    await t.app.inject({ method: 'DELETE', url: `${list}/CVE-2024-0003` });
    const seen: string[] = [];
    const sizes: number[] = [];
    let url = `${list}?limit=10`;
    for (;;) {
      const res = await t.app.inject({ url });
      expect(res.statusCode).toBe(200);
      const body = json(res);
      sizes.push(body.Vulnerabilities.length);
      seen.push(...body.Vulnerabilities.map((v: { Name: string }) => v.Name));
      for (const v of body.Vulnerabilities) expect(v.FixedIn).toBeUndefined();
      if (!body.NextPage) break;
      url = `${list}?limit=10&page=${encodeURIComponent(body.NextPage)}`;
    }
    expect(sizes).toEqual([10, 10, 4]);
    expect(seen).toEqual(names.filter((n) => n !== 'CVE-2024-0003'));
  });

  it('answers an empty namespace with [] and no NextPage, an unknown one with 404', async () => {
    const t = await testApp();
    await seed(t, 1);
    await t.app.inject({ method: 'DELETE', url: `${list}/CVE-2024-0000` });
    const empty = await t.app.inject({ url: `${list}?limit=5` });
    expect(empty.body).toBe('{"Vulnerabilities":[]}');
    const unknown = await t.app.inject({ url: '/v1/namespaces/ubuntu%3A99.04/vulnerabilities?limit=5' });
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown)).toEqual({ Error: { Message: 'namespace ubuntu:99.04 does not exist' } });
  });

  it('requires limit and names it when missing or out of range', async () => {
    const t = await testApp();
    await seed(t, 1);
    const missing = await t.app.inject({ url: list });
    expect(missing.statusCode).toBe(400);
    expect(json(missing)).toEqual({ Error: { Message: 'query parameter limit is required' } });
    for (const [bad, shown] of [
      ['0', '0'],
      ['1001', '1001'],
      ['ten', '"ten"'],
      ['-1', '-1'],
      ['2.5', '"2.5"'],
    ]) {
      const res = await t.app.inject({ url: `${list}?limit=${bad}` });
      expect(res.statusCode).toBe(400);
      expect(json(res).Error.Message).toBe(`query parameter limit must be an integer from 1 to 1000 (got ${shown})`);
    }
    expect((await t.app.inject({ url: `${list}?limit=1000` })).statusCode).toBe(200);
  });

  it('rejects tampered, foreign, expired and wrong-kind tokens with 400', async () => {
    let now = Date.now();
    const t = await testApp({ now: () => now });
    await seed(t, 3);
    const next = json(await t.app.inject({ url: `${list}?limit=1` })).NextPage as string;
    const page = (token: string) => t.app.inject({ url: `${list}?limit=1&page=${encodeURIComponent(token)}` });

    const altered = Buffer.from(next, 'base64url');
    altered[40] = altered[40]! ^ 0xff;
    const tampered = await page(altered.toString('base64url'));
    expect(tampered.statusCode).toBe(400);
    expect(json(tampered).Error.Message).toMatch(/^page token is invalid: it was altered/);

    const foreign = await page(new PageTokens(randomBytes(32)).encode(1));
    expect(foreign.statusCode).toBe(400);

    const wrongKind = await page(t.pageTokens.encode({ OldVulnerability: 1, NewVulnerability: 1 }));
    expect(wrongKind.statusCode).toBe(400);
    expect(json(wrongKind).Error.Message).toBe('page is not a token of a vulnerability list; start again from the first page');

    expect((await page(next)).statusCode).toBe(200);
    now += 3601_000;
    const expired = await page(next);
    expect(expired.statusCode).toBe(400);
    expect(json(expired).Error.Message).toMatch(/^page token has expired/);
  });
});
