/**
 * Dashboard sessions: the cookie carries a random id and the database only its hash; a session is
 * valid on every replica of the database, and ends with sign-out, with its idle and absolute
 * limits, and with the removal of the credential it was opened with.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../../helpers/app.js';

const TOKEN = 'dashboard-session-token';
const OTHER = 'other-dashboard-token';
const PSK = randomBytes(32);
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** clair.api.auth with these tokens and JWT key, and more keys under it. */
const auth = (tokens: string[], psk = PSK, more = '') =>
  `  api:\n    auth:\n      tokens: [${tokens.join(', ')}]\n      psk: ${psk.toString('base64')}${more}`;

function jwt(claims: Record<string, unknown>, key = PSK): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const body = `${enc({ alg: 'HS256', typ: 'JWT' })}.${enc(claims)}`;
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}

/** Signs in on t's sign-in form; the cookie to send back ("name=value"). */
async function signIn(t: TestApp, token: string): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/ui/login',
    headers: FORM,
    payload: new URLSearchParams({ token, next: '/ui/feeds' }).toString(),
  });
  expect(res.statusCode).toBe(303);
  return String(res.headers['set-cookie']).split(';')[0]!;
}

/** A dashboard page with the cookie: 200 when the session opens it, 303 (to the sign-in page) when not. */
async function page(t: TestApp, cookie: string): Promise<number> {
  const res = await t.app.inject({ url: '/ui/feeds', headers: { cookie } });
  if (res.statusCode === 303) expect(res.headers.location).toBe('/ui/login?next=%2Fui%2Ffeeds');
  return res.statusCode;
}

const idOf = (cookie: string): string => cookie.slice(cookie.indexOf('=') + 1);
const hashOf = (cookie: string): Buffer => createHash('sha256').update(idOf(cookie)).digest();

interface Row {
  credential: string;
  valid_until: Date;
  expires_at: Date;
  idle_left_s: number;
  lifetime_s: number;
}

async function row(t: TestApp, cookie: string): Promise<Row | undefined> {
  const { rows } = await t.pool.query<Row>(
    `SELECT credential, valid_until, expires_at,
            extract(epoch FROM valid_until - now())::float AS idle_left_s, extract(epoch FROM expires_at - created_at)::float AS lifetime_s
     FROM dashboard_session WHERE id_hash = $1`,
    [hashOf(cookie)],
  );
  return rows[0];
}

/** Moves a session's limits to now plus these (negative: passed). */
async function setLimits(t: TestApp, cookie: string, validFromNow: string, expiresFromNow: string): Promise<void> {
  await t.pool.query(
    'UPDATE dashboard_session SET valid_until = now() + $2::interval, expires_at = now() + $3::interval WHERE id_hash = $1',
    [hashOf(cookie), validFromNow, expiresFromNow],
  );
}

describe('dashboard sessions', () => {
  it('keep a random id in the cookie, never the token, and only its hash in the database', async () => {
    const t = await testApp({ yaml: auth([TOKEN]) });
    const cookie = await signIn(t, TOKEN);
    const again = await signIn(t, TOKEN);
    expect(cookie).toMatch(/^tarsier_session=[\w-]{43}$/);
    expect(idOf(cookie)).not.toContain(TOKEN);
    expect(idOf(again)).not.toBe(idOf(cookie));
    expect(await page(t, cookie)).toBe(200);
    expect(await page(t, again)).toBe(200);
    // The token as the cookie's value opens nothing: only a session does.
    expect(await page(t, `tarsier_session=${TOKEN}`)).toBe(303);

    const stored = JSON.stringify((await t.pool.query('SELECT * FROM dashboard_session')).rows);
    expect(stored).not.toContain(idOf(cookie));
    expect(stored).not.toContain(TOKEN);
    expect(stored).not.toContain(Buffer.from(TOKEN).toString('base64'));
    expect((await row(t, cookie))?.credential).toMatch(/^token:[\w-]{43}$/);

    // Signed in, every page offers to sign out.
    const feeds = await t.app.inject({ url: '/ui/feeds', headers: { cookie } });
    expect(feeds.body).toMatch(
      /<form action="\/ui\/logout" method="post" class="signout"><button type="submit">Sign out<\/button><\/form>/,
    );
  });

  it('are valid on every replica of the database, until signed out on any of them', async () => {
    const a = await testApp({ yaml: auth([TOKEN]) });
    const b = await testApp({ yaml: auth([TOKEN]), pool: a.pool });
    const cookie = await signIn(a, TOKEN);
    const other = await signIn(a, TOKEN);
    expect(await page(b, cookie)).toBe(200);

    const out = await b.app.inject({ method: 'POST', url: '/ui/logout', headers: { cookie } });
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/ui/login');
    expect(out.headers['set-cookie']).toBe('tarsier_session=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0');
    // The browser forgets the cookie; one that kept it (a copy) opens nothing any more.
    expect(await page(a, cookie)).toBe(303);
    expect(await page(b, cookie)).toBe(303);
    expect(await row(a, cookie)).toBeUndefined();
    // Other sessions stay open.
    expect(await page(a, other)).toBe(200);
    // Signing out from another site's page is refused and ends nothing.
    const forged = await a.app.inject({
      method: 'POST',
      url: '/ui/logout',
      headers: { cookie: other, origin: 'https://evil.example', host: 'tarsier.example' },
    });
    expect(forged.statusCode).toBe(400);
    expect(await page(a, other)).toBe(200);
  });

  it('end when the token or JWT key they were opened with is no longer configured', async () => {
    const a = await testApp({ yaml: auth([TOKEN, OTHER]) });
    const now = Math.floor(Date.now() / 1000);
    const [byToken, byOther, byJwt] = [
      await signIn(a, TOKEN),
      await signIn(a, OTHER),
      await signIn(a, jwt({ sub: 'ops', exp: now + 3600 })),
    ];
    expect((await row(a, byJwt))?.credential).toMatch(/^jwt-key:/);
    for (const cookie of [byToken, byOther, byJwt]) expect(await page(a, cookie)).toBe(200);

    // A replica whose configuration no longer has TOKEN (a revoked token, the process restarted with the new configuration).
    const revoked = await testApp({ yaml: auth([OTHER]), pool: a.pool });
    expect(await page(revoked, byToken)).toBe(303);
    expect(await page(revoked, byOther)).toBe(200);
    expect(await page(revoked, byJwt)).toBe(200);
    // The session it refused is ended for every replica.
    expect(await row(a, byToken)).toBeUndefined();
    expect(await page(a, byToken)).toBe(303);

    // A new JWT key: sessions opened with a JWT signed by the old one end.
    const rekeyed = await testApp({ yaml: auth([OTHER], randomBytes(32)), pool: a.pool });
    expect(await page(rekeyed, byJwt)).toBe(303);
    expect(await page(rekeyed, byOther)).toBe(200);
  });

  it('end when unused for the idle limit and at their absolute limit; each use moves the idle limit on, never past the absolute one', async () => {
    const t = await testApp({ yaml: auth([TOKEN], PSK, '\n      sessionidle: 20m\n      sessionlifetime: 6h') });
    const idle = await signIn(t, TOKEN);
    const opened = (await row(t, idle))!;
    expect(opened.lifetime_s).toBe(6 * 3600);
    expect(opened.idle_left_s).toBeGreaterThan(19 * 60);
    expect(opened.idle_left_s).toBeLessThanOrEqual(20 * 60);

    // Unused past its idle limit.
    await setLimits(t, idle, '-1 second', '5 hours');
    expect(await page(t, idle)).toBe(303);

    // A use moves the idle limit on: 20 minutes from now again.
    const used = await signIn(t, TOKEN);
    await setLimits(t, used, '1 minute', '5 hours');
    expect(await page(t, used)).toBe(200);
    expect((await row(t, used))!.idle_left_s).toBeGreaterThan(19 * 60);

    // Near its absolute limit, a use moves the idle limit only up to it; past it, the session has ended.
    const old = await signIn(t, TOKEN);
    await setLimits(t, old, '1 minute', '2 minutes');
    expect(await page(t, old)).toBe(200);
    const capped = (await row(t, old))!;
    expect(capped.valid_until).toEqual(capped.expires_at);
    await setLimits(t, old, '-1 second', '-1 second');
    expect(await page(t, old)).toBe(303);

    // A session opened with a JWT ends when the API stops accepting the JWT (exp, with the 60 s clock skew), if that is sooner.
    const exp = Math.floor(Date.now() / 1000) + 600;
    const byJwt = await signIn(t, jwt({ sub: 'ops', exp }));
    expect((await row(t, byJwt))!.expires_at.getTime()).toBe((exp + 60) * 1000);
  });

  it('that have ended are deleted when someone signs in; open ones stay', async () => {
    const t = await testApp({ yaml: auth([TOKEN]) });
    const [ended, lapsed, open] = [await signIn(t, TOKEN), await signIn(t, TOKEN), await signIn(t, TOKEN)];
    await setLimits(t, ended, '-1 hour', '-1 hour');
    await setLimits(t, lapsed, '-1 second', '1 hour');
    const latest = await signIn(t, TOKEN);
    expect(await row(t, ended)).toBeUndefined();
    expect(await row(t, lapsed)).toBeUndefined();
    expect(await row(t, open)).toBeDefined();
    expect(await row(t, latest)).toBeDefined();
    expect(Number((await t.pool.query('SELECT count(*) FROM dashboard_session')).rows[0].count)).toBe(2);
  });
});
