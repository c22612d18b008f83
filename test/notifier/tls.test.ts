import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Notifier } from '../../src/notifier/notifier.js';
import { createPool } from '../../src/store/pool.js';
import { testApp } from '../helpers/app.js';
import { freshDatabase, silentLog } from '../helpers/db.js';

/** A CA, a certificate for the receiver (127.0.0.1) and a client certificate for Tarsier. */
async function certificates() {
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-hook-tls-'));
  afterAll(() => rm(dir, { recursive: true, force: true }));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=hook-ca');
  execFileSync('sh', ['-c', `printf 'subjectAltName=DNS:hooks.internal,IP:127.0.0.1\\n' > ${join(dir, 'ext.cnf')}`]);
  for (const name of ['receiver', 'tarsier']) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '1',
      '-extfile',
      'ext.cnf',
    );
  }
  const read = (f: string) => readFileSync(join(dir, f));
  return {
    ca: read('ca.pem'),
    receiverKey: read('receiver.key'),
    receiverCert: read('receiver.pem'),
    key: read('tarsier.key'),
    cert: read('tarsier.pem'),
  };
}

describe('webhook delivery over mutual TLS (notifier.http.cafile, certfile, keyfile, servername)', () => {
  it('presents the client certificate, trusts the configured CA and checks the configured server name', async () => {
    const pems = await certificates();
    const received: string[] = [];
    const receiver = createServer(
      { key: pems.receiverKey, cert: pems.receiverCert, ca: pems.ca, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        let body = '';
        req.on('data', (d: Buffer) => (body += d.toString()));
        req.on('end', () => {
          received.push(body);
          res.writeHead(200).end();
        });
      },
    );
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
    const url = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

    const connection = await freshDatabase();
    const pool = createPool(connection, 10, silentLog);
    afterAll(() => pool.end());
    const t = await testApp({ pool });
    const settings = { endpoints: [url], attempts: 5, renotifyIntervalMs: 3600_000, secret: '', retentionMs: 3600_000 };
    const start = async (tls: ConstructorParameters<typeof Notifier>[0]['tls']) => {
      const n = new Notifier({ pool, connection, settings, log: silentLog, metrics: t.metrics, tls });
      await n.start();
      return n;
    };

    // Without a client certificate the receiver refuses the handshake: nothing is delivered.
    const anonymous = await start({ ca: pems.ca, serverName: 'hooks.internal' });
    await t.app.inject({
      method: 'POST',
      url: '/v1/namespaces/debian%3A12/vulnerabilities',
      payload: { Vulnerability: { Name: 'CVE-1', Severity: 'Low' } },
    });
    const deadline = Date.now() + 5000;
    while ((await pool.query('SELECT delivery_attempts FROM notification')).rows[0]?.delivery_attempts < 1 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await anonymous.stop();
    expect(received).toEqual([]);

    // A server name its certificate does not carry: verification fails, nothing is delivered.
    const attempts = (await pool.query('SELECT delivery_attempts FROM notification')).rows[0].delivery_attempts as number;
    await pool.query('UPDATE notification SET next_delivery_at = now()');
    const misnamed = await start({ ca: pems.ca, cert: pems.cert, key: pems.key, serverName: 'wrong.example' });
    const misnamedDeadline = Date.now() + 5000;
    while (
      (await pool.query('SELECT delivery_attempts FROM notification')).rows[0].delivery_attempts <= attempts &&
      Date.now() < misnamedDeadline
    ) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await misnamed.stop();
    expect(received).toEqual([]);

    const mutual = await start({ ca: pems.ca, cert: pems.cert, key: pems.key, serverName: 'hooks.internal' });
    afterAll(() => mutual.stop());
    await pool.query('UPDATE notification SET next_delivery_at = now()');
    mutual.wake();
    const until = Date.now() + 5000;
    while (received.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0]!).Notification.Name).toMatch(/^[0-9a-f-]{36}$/);
  });
});
