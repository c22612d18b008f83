import { describe, expect, it } from 'vitest';
import { json, testApp, type TestApp } from '../../helpers/app.js';
import { freshPool } from '../../helpers/db.js';

/** An app (with the ancestry API) on a fresh database. */
async function v3App(yaml?: string): Promise<TestApp> {
  return testApp({ pool: await freshPool(), ...(yaml ? { yaml } : {}) });
}

const LISTERS = ['dpkg', 'rpm', 'apk'];
const DETECTORS = ['suse-products', 'os-release', 'lsb-release', 'alpine-release', 'redhat-release', 'apt-sources'];

describe('GET /status', () => {
  it('lists the listers and detectors; last_update_time is absent before any successful update', async () => {
    const t = await v3App();
    const res = await t.app.inject({ url: '/status' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(json(res)).toEqual({ status: { listers: LISTERS, detectors: DETECTORS } });
    // A failed run is not an update.
    await t.pool.query("INSERT INTO updater_state (name, last_attempt_at, last_error) VALUES ('debian', now(), 'boom')");
    expect(json(await t.app.inject({ url: '/status' }))).toEqual({ status: { listers: LISTERS, detectors: DETECTORS } });
  });

  it('reports when vulnerability data was last brought up to date by any source, as RFC 3339', async () => {
    const t = await v3App();
    await t.pool.query(`
      INSERT INTO updater_state (name, last_attempt_at, last_success_at, data_updated_at) VALUES
        ('debian', '2024-05-06T07:08:09Z', '2024-05-06T07:08:09Z', '2024-05-06T07:08:09Z'),
        ('alpine', '2024-05-07T00:00:00Z', '2024-05-01T00:00:00Z', '2024-05-01T00:00:00Z'),
        ('ubuntu', '2024-05-08T00:00:00Z', NULL, NULL)`);
    expect(json(await t.app.inject({ url: '/status' }))).toEqual({
      status: { listers: LISTERS, detectors: DETECTORS, last_update_time: '2024-05-06T07:08:09Z' },
    });
    await t.pool.query(
      "UPDATE updater_state SET last_success_at = now(), data_updated_at = '2024-06-01T10:00:00.25Z' WHERE name = 'alpine'",
    );
    const status = json(await t.app.inject({ url: '/status' })).status;
    expect(status.last_update_time).toBe('2024-06-01T10:00:00.250Z');
    expect(new Date(status.last_update_time).toISOString()).toBe('2024-06-01T10:00:00.250Z');
  });

  it('is not moved by enrichment or risk context: NVD, EPSS and KEV are not vulnerability data', async () => {
    const t = await v3App();
    await t.pool.query(`
      INSERT INTO updater_state (name, last_attempt_at, last_success_at, data_updated_at) VALUES
        ('epss', now(), now(), now()), ('kev', now(), now(), now()), ('nvd', now(), now(), now())`);
    expect(json(await t.app.inject({ url: '/status' }))).toEqual({ status: { listers: LISTERS, detectors: DETECTORS } });
    await t.pool.query(
      "INSERT INTO updater_state (name, last_attempt_at, last_success_at, data_updated_at) VALUES ('debian', now(), now(), '2024-05-06T07:08:09Z')",
    );
    expect(json(await t.app.inject({ url: '/status' })).status.last_update_time).toBe('2024-05-06T07:08:09Z');
  });

  it('answers in the grpc-gateway error dialect when API authentication refuses the request', async () => {
    const t = await v3App('  api:\n    auth:\n      tokens: [s3cret]');
    const refused = await t.app.inject({ url: '/status' });
    expect(refused.statusCode).toBe(401);
    expect(json(refused)).toEqual({
      error: 'this API requires a credential: send "Authorization: Bearer <token>"',
      code: 16,
      message: 'this API requires a credential: send "Authorization: Bearer <token>"',
    });
    const allowed = await t.app.inject({ url: '/status', headers: { authorization: 'Bearer s3cret' } });
    expect(allowed.statusCode).toBe(200);
    // The v1 API keeps its own dialect.
    const v1 = await t.app.inject({ url: '/v1/namespaces' });
    expect(json(v1)).toEqual({ Error: { Message: 'this API requires a credential: send "Authorization: Bearer <token>"' } });
  });
});
