import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/db.js';
import { databaseUrl, startTarsier, type TarsierProcess } from '../helpers/process.js';
import { gzip, tarball } from '../helpers/tarball.js';
import { whenDone } from '../helpers/when-done.js';

/** A webhook receiver process-level tests share: every delivered name, in order. */
async function receiver() {
  const names: string[] = [];
  let failing = false;
  let refused = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (failing) {
        refused++;
        return res.writeHead(503).end();
      }
      names.push((JSON.parse(body) as { Notification: { Name: string } }).Notification.Name);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  whenDone(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    names,
    /** Deliveries answered 503 while failing. */
    refused: () => refused,
    setFailing: (f: boolean) => (failing = f),
  };
}

async function until(condition: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tarsier-notify-'));
  await chmod(dir, 0o755);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function configFile(name: string, endpoint: string, renotify = '1h', attempts = 3): Promise<string> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(
    file,
    `clair:\n  api:\n    localroots: [${dir}]\n  updater:\n    interval: 0\n  notifier:\n    renotifyinterval: ${renotify}\n    attempts: ${attempts}\n    endpoints: [${endpoint}]\n`,
  );
  return file;
}

const api = (p: TarsierProcess, path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${p.apiPort}${path}`, init);

describe('notifications end to end, with real processes', () => {
  it('a vulnerability update affecting indexed layers reaches the receiver in seconds; pages list the layers; DELETE ends deliveries', async () => {
    const hook = await receiver();
    const server = await startTarsier({
      DATABASE_URL: databaseUrl(await freshDatabase()),
      TARSIER_CONFIG: await configFile('e2e', hook.url, '1s'),
    });
    const layers = ['a', 'b', 'c', 'd', 'e'];
    for (const name of layers) {
      const path = join(dir, `${name}.tar.gz`);
      await writeFile(
        path,
        gzip(
          tarball([
            { path: 'etc/os-release', content: 'ID=debian\nVERSION_ID=12\n' },
            { path: 'var/lib/dpkg/status', content: 'Package: curl\nStatus: install ok installed\nVersion: 7.88.1-10\n' },
          ]),
        ),
      );
      const res = await api(server, '/v1/layers', {
        method: 'POST',
        body: JSON.stringify({ Layer: { Name: name, Path: path, Format: 'Docker' } }),
      });
      expect(res.status).toBe(201);
    }
    const started = Date.now();
    await api(server, '/v1/namespaces/debian%3A12/vulnerabilities', {
      method: 'POST',
      body: JSON.stringify({
        Vulnerability: { Name: 'CVE-2024-2398', Severity: 'Medium', FixedIn: [{ Name: 'curl', Version: '7.88.1-10+deb12u6' }] },
      }),
    });
    await until(() => hook.names.length >= 1, 5000);
    expect(Date.now() - started).toBeLessThan(3000);
    const name = hook.names[0]!;

    const seen: string[] = [];
    let page = '';
    for (;;) {
      const body = (await (
        await api(server, `/v1/notifications/${name}?limit=2${page ? `&page=${encodeURIComponent(page)}` : ''}`)
      ).json()) as {
        Notification: { New: { LayersIntroducingVulnerability: string[] }; NextPage?: string };
      };
      seen.push(...body.Notification.New.LayersIntroducingVulnerability);
      if (!body.Notification.NextPage) break;
      page = body.Notification.NextPage;
    }
    expect(seen).toEqual(layers);

    await until(() => hook.names.length >= 2, 5000); // re-delivered after renotifyinterval (1 s) while unread
    expect((await api(server, `/v1/notifications/${name}`, { method: 'DELETE' })).status).toBe(200);
    const delivered = hook.names.length;
    await new Promise((r) => setTimeout(r, 2500));
    expect(hook.names.length).toBe(delivered);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 60_000);

  it('loses nothing across a restart: a notification the receiver refused is delivered by the next process', async () => {
    const hook = await receiver();
    hook.setFailing(true);
    const url = databaseUrl(await freshDatabase());
    // Enough attempts that retries the first process makes before it is killed (1 s, 2 s, … apart
    // on a loaded machine) do not use them up and push the next one to renotifyinterval (1 h).
    const config = await configFile('restart', hook.url, '1h', 10);
    const first = await startTarsier({ DATABASE_URL: url, TARSIER_CONFIG: config });
    await api(first, '/v1/namespaces/debian%3A12/vulnerabilities', {
      method: 'POST',
      body: JSON.stringify({ Vulnerability: { Name: 'CVE-1', Severity: 'Low' } }),
    });
    await until(() => hook.refused() >= 1, 15_000); // the first process tried, and was refused
    first.child.kill('SIGKILL');
    await first.exited;
    expect(hook.names).toEqual([]);
    hook.setFailing(false);
    const second = await startTarsier({ DATABASE_URL: url, TARSIER_CONFIG: config });
    // Killed while a retry was in flight, the first process leaves its claim until the lease (60 s) lapses.
    await until(() => hook.names.length === 1, 90_000);
    second.child.kill('SIGTERM');
    await second.exited;
  }, 150_000);

  it('two processes on one database deliver each notification once per round', async () => {
    const hook = await receiver();
    const url = databaseUrl(await freshDatabase());
    const config = await configFile('replicas', hook.url);
    const [a, b] = await Promise.all([
      startTarsier({ DATABASE_URL: url, TARSIER_CONFIG: config }),
      startTarsier({ DATABASE_URL: url, TARSIER_CONFIG: config }),
    ]);
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api(i % 2 ? a : b, '/v1/namespaces/debian%3A12/vulnerabilities', {
          method: 'POST',
          body: JSON.stringify({ Vulnerability: { Name: `CVE-${i}`, Severity: 'Low' } }),
        }),
      ),
    );
    await until(() => hook.names.length >= 30, 15_000);
    await new Promise((r) => setTimeout(r, 2000));
    expect(hook.names).toHaveLength(30);
    expect(new Set(hook.names).size).toBe(30);
    const deliveredBy = [a, b].map((p) => p.logs.filter((l) => l.msg === 'notification delivered').length);
    expect(deliveredBy[0]! + deliveredBy[1]!).toBe(30);
    for (const p of [a, b]) p.child.kill('SIGTERM');
    await Promise.all([a.exited, b.exited]);
  }, 60_000);
});
