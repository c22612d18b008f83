import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RefusedAddressError } from '../../src/outbound/address-policy.js';
import { outboundDispatcher } from '../../src/outbound/dispatcher.js';
import { startLayerServer, type LayerServer } from '../helpers/layer-server.js';

/** A forward proxy: CONNECT tunnels and absolute-URI requests, each recorded. */
async function startProxy(): Promise<{ uri: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const target = new URL(req.url!);
    const upstream = connect(Number(target.port), target.hostname, () => {
      upstream.write(`${req.method} ${target.pathname} HTTP/1.1\r\nhost: ${target.host}\r\nconnection: close\r\n\r\n`);
    });
    upstream.pipe(res.socket!);
  });
  server.on('connect', (req, socket) => {
    seen.push(`CONNECT ${req.url}`);
    const [host, port] = req.url!.split(':');
    const upstream = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.pipe(socket).pipe(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    uri: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('outboundDispatcher', () => {
  let server: LayerServer;
  beforeAll(async () => {
    server = await startLayerServer();
    server.serve('/blob', Buffer.from('the blob'));
    server.redirect('/moved', '/blob');
  });
  afterAll(() => server.close());

  async function get(url: string, settings: Parameters<typeof outboundDispatcher>[0]): Promise<{ status: number; body: string }> {
    const dispatcher = outboundDispatcher(settings);
    try {
      const response = await request(url, { dispatcher });
      return { status: response.statusCode, body: await response.body.text() };
    } finally {
      await dispatcher.close();
    }
  }

  it('follows redirects only when asked to', async () => {
    expect((await get(server.url('/moved'), {})).status).toBe(302);
    expect(await get(server.url('/moved'), { maxRedirects: 1 })).toEqual({ status: 200, body: 'the blob' });
  });

  it('refuses the addresses its policy refuses, and reaches the ones it allows', async () => {
    const refused = get(server.url('/blob'), { addresses: { denyPrivate: true } });
    await expect(refused).rejects.toBeInstanceOf(RefusedAddressError);
    await expect(refused).rejects.toMatchObject({ address: '127.0.0.1', refusal: 'private' });
    const allowed = await get(server.url('/blob'), { addresses: { denyPrivate: true, allowNetworks: ['127.0.0.0/8'] } });
    expect(allowed.body).toBe('the blob');
  });

  it('goes through the proxy it is given', async () => {
    const proxy = await startProxy();
    try {
      expect((await get(server.url('/blob'), { proxy: proxy.uri, connectTimeoutMs: 5_000 })).body).toBe('the blob');
      expect(proxy.seen).toHaveLength(1);
      expect(proxy.seen[0]).toContain(new URL(server.origin).host);
    } finally {
      await proxy.close();
    }
  });

  it('refuses an address policy behind a proxy, where it could judge only the proxy', () => {
    expect(() => outboundDispatcher({ proxy: 'http://127.0.0.1:3128', addresses: { denyPrivate: true } })).toThrow(/through a proxy/);
  });
});
