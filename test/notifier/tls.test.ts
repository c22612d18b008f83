import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Notifier } from '../../src/notifier/notifier.js';
import { createPool } from '../../src/store/pool.js';
import { testApp } from '../helpers/app.js';
import { testCertificates } from '../helpers/certificates.js';
import { freshDatabase, silentLog } from '../helpers/db.js';
import { whenDone } from '../helpers/when-done.js';

describe('webhook delivery over mutual TLS (notifier.http.cafile, certfile, keyfile, servername)', () => {
  it('presents the client certificate, trusts the configured CA and checks the configured server name', async () => {
    // The receiver's certificate is for hooks.internal and 127.0.0.1; Tarsier presents its own.
    const certs = await testCertificates(['receiver', 'tarsier'], 'DNS:hooks.internal,IP:127.0.0.1');
    const { ca } = certs;
    const { key, cert } = certs.pairs.tarsier!;
    const received: string[] = [];
    const receiver = createServer({ ...certs.pairs.receiver!, ca, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push(body);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    whenDone(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
    const url = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

    const connection = await freshDatabase();
    const pool = createPool(connection, 10, silentLog);
    whenDone(() => pool.end());
    const t = await testApp({ pool });
    const settings = { endpoints: [url], attempts: 5, renotifyIntervalMs: 3600_000, secret: '', retentionMs: 3600_000 };
    const start = async (tls: ConstructorParameters<typeof Notifier>[0]['tls']) => {
      const n = new Notifier({ pool, connection, settings, log: silentLog, metrics: t.metrics, tls });
      await n.start();
      return n;
    };

    // Without a client certificate the receiver refuses the handshake: nothing is delivered.
    const attempts = async () => (await pool.query('SELECT delivery_attempts FROM notification')).rows[0]?.delivery_attempts ?? 0;
    const anonymous = await start({ ca, serverName: 'hooks.internal' });
    await t.app.inject({
      method: 'POST',
      url: '/v1/namespaces/debian%3A12/vulnerabilities',
      payload: { Vulnerability: { Name: 'CVE-1', Severity: 'Low' } },
    });
    await expect.poll(attempts).toBeGreaterThanOrEqual(1);
    await anonymous.stop();
    expect(received).toEqual([]);

    // A server name its certificate does not carry: verification fails, nothing is delivered.
    const before = await attempts();
    await pool.query('UPDATE notification SET next_delivery_at = now()');
    const misnamed = await start({ ca, cert, key, serverName: 'wrong.example' });
    await expect.poll(attempts).toBeGreaterThan(before);
    await misnamed.stop();
    expect(received).toEqual([]);

    const mutual = await start({ ca, cert, key, serverName: 'hooks.internal' });
    whenDone(() => mutual.stop());
    await pool.query('UPDATE notification SET next_delivery_at = now()');
    mutual.wake();
    await expect.poll(() => received.length).toBe(1);
    expect(JSON.parse(received[0]!).Notification.Name).toMatch(/^[0-9a-f-]{36}$/);
  });
});
