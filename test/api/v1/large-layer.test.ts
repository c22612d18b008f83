/**
 * A layer listing 300,000 packages indexes (it answered 500 after 52 s: an argument spread of the
 * whole package list overflowed the stack, and a lock per package exhausted PostgreSQL's shared
 * lock table), and its report lists every package, with a vulnerability matched among them.
 */
import { describe, expect, it } from 'vitest';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { json, testApp } from '../../helpers/app.js';
import { debian12 } from '../../helpers/dpkg-status.js';
import { gzip, tarball } from '../../helpers/tarball.js';
import { whenDone } from '../../helpers/when-done.js';

const PACKAGES = 300_000;

describe('a layer with 300,000 packages', () => {
  it('is indexed, and reports every package and the vulnerability affecting one of them', { timeout: 180_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tarsier-large-'));
    await chmod(dir, 0o755);
    whenDone(() => rm(dir, { recursive: true, force: true }));
    const stanzas = [];
    for (let i = 0; i < PACKAGES; i++)
      stanzas.push(`Package: pkg${i}\nStatus: install ok installed\nVersion: 1.${i}-1\nArchitecture: amd64\n`);
    await writeFile(
      join(dir, 'large.tar.gz'),
      gzip(
        tarball([
          { path: 'etc/os-release', content: debian12 },
          { path: 'var/lib/dpkg/status', content: stanzas.join('\n') },
        ]),
      ),
    );
    const t = await testApp({ yaml: `  api:\n    localroots: [${dir}]` });
    const vulnerability = { Name: 'CVE-2024-1', Severity: 'High', FixedIn: [{ Name: 'pkg123456', Version: '1.123456-2' }] };
    expect(
      (await t.app.inject({ method: 'POST', url: '/v1/namespaces/debian%3A12/vulnerabilities', payload: { Vulnerability: vulnerability } }))
        .statusCode,
    ).toBe(201);

    const posted = await t.app.inject({
      method: 'POST',
      url: '/v1/layers',
      payload: { Layer: { Name: 'large', Path: join(dir, 'large.tar.gz'), Format: 'Docker' } },
    });
    expect(posted.statusCode, posted.body).toBe(201);
    const report = json(await t.app.inject({ url: '/v1/layers/large?vulnerabilities' }));
    expect(report.Layer.Features).toHaveLength(PACKAGES);
    const affected = report.Layer.Features.filter((f: { Vulnerabilities: unknown[] }) => f.Vulnerabilities.length > 0);
    expect(affected).toEqual([
      expect.objectContaining({
        Name: 'pkg123456',
        Vulnerabilities: [expect.objectContaining({ Name: 'CVE-2024-1', FixedBy: '1.123456-2' })],
      }),
    ]);
  });
});
