import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadPageTokenKey, PageTokens } from '../../src/api/paging.js';
import { TarsierError } from '../../src/errors.js';
import { freshPool } from '../helpers/db.js';

function rejection(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TarsierError);
    expect((err as TarsierError).code).toBe('bad_request');
    return (err as Error).message;
  }
  throw new Error('expected a rejection');
}

describe('Fernet page tokens', () => {
  it('read a token from the Fernet specification (interoperable with Clair and Python)', () => {
    // github.com/fernet/spec generate.json: secret, "now" 1985-10-26T01:20:00-07:00, message "hello".
    const key = Buffer.from('cw_0x689RpI-jtRR7oE8h_eQsKImvJapLeSbXpwF4e4=', 'base64url');
    const issued = Date.parse('1985-10-26T01:20:00-07:00');
    const tokens = new PageTokens(key, () => issued + 1000);
    const token = 'gAAAAAAdwJ6wAAECAwQFBgcICQoLDA0ODy021cpGVWKZ_eEwCGM4BLLF_5CV9dOPmrhuVUPgJobwOz7JcbmrR64jVmpU4IwqDA==';
    expect(tokens.open(token).toString()).toBe('hello');
  });

  it('round-trip a payload and mint a new token string each time', () => {
    const tokens = new PageTokens(randomBytes(32));
    const a = tokens.encode({ OldVulnerability: 3, NewVulnerability: -1 });
    const b = tokens.encode({ OldVulnerability: 3, NewVulnerability: -1 });
    expect(a).not.toBe(b);
    expect(a.startsWith('gAAAAA')).toBe(true);
    expect(a.length % 4).toBe(0); // padded URL-safe base64, as Fernet libraries write it
    expect(tokens.decode(a)).toEqual({ OldVulnerability: 3, NewVulnerability: -1 });
    expect(tokens.open(a).toString()).toBe('{"OldVulnerability":3,"NewVulnerability":-1}\n');
  });

  it('reject an altered token', () => {
    const tokens = new PageTokens(randomBytes(32));
    const token = tokens.encode(1234);
    const bytes = Buffer.from(token, 'base64url');
    bytes[30] = bytes[30]! ^ 1;
    expect(rejection(() => tokens.decode(bytes.toString('base64url')))).toBe(
      'page token is invalid: it was altered or minted by another installation; start again from the first page',
    );
  });

  it('reject a token minted with another key', () => {
    const token = new PageTokens(randomBytes(32)).encode(1);
    expect(rejection(() => new PageTokens(randomBytes(32)).decode(token))).toMatch(/minted by another installation/);
  });

  it('expire after one hour and refuse tokens from the future', () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const tokens = new PageTokens(randomBytes(32), () => now);
    const token = tokens.encode(7);
    now += 3600_000;
    expect(tokens.decode(token)).toBe(7);
    now += 1000;
    expect(rejection(() => tokens.decode(token))).toBe(
      'page token has expired (page tokens are valid for one hour); start again from the first page',
    );
    now -= 2 * 3600_000;
    expect(rejection(() => tokens.decode(token))).toMatch(/issued in the future/);
  });

  it('reject garbage with a message that says what a token is', () => {
    const tokens = new PageTokens(randomBytes(32));
    for (const garbage of ['', '12', 'not a token!', 'gAAAAA', Buffer.alloc(80).toString('base64url')]) {
      expect(rejection(() => tokens.decode(garbage))).toBe(
        'page is not a page token: pass the NextPage value of an earlier response unchanged',
      );
    }
  });
});

describe('page token key', () => {
  it('uses the configured key', async () => {
    const pool = await freshPool();
    const key = randomBytes(32);
    expect(await loadPageTokenKey(pool, key)).toBe(key);
    const { rowCount } = await pool.query('SELECT 1 FROM keyvalue');
    expect(rowCount).toBe(0);
  });

  it('is generated once and stored, so every replica and restart accepts the same tokens', async () => {
    const pool = await freshPool();
    const keys = await Promise.all([1, 2, 3, 4].map(() => loadPageTokenKey(pool, null)));
    expect(keys[0]!.length).toBe(32);
    for (const k of keys) expect(k.equals(keys[0]!)).toBe(true);
    const token = new PageTokens(keys[0]!).encode(5);
    expect(new PageTokens(await loadPageTokenKey(pool, null)).decode(token)).toBe(5);
  });
});
