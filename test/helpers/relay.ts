import { connect, createServer, type Server, type Socket } from 'node:net';
import type pg from 'pg';
import { whenDone } from './when-done.js';

/**
 * A TCP relay in front of the test database that can be cut and restored, to show what clients
 * see while the database is unreachable and that the service recovers by itself.
 */
async function relay(target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  let up = true;
  const server: Server = createServer((client) => {
    if (!up) return client.destroy();
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  whenDone(() => {
    // Connections still open through it (a pool not ended yet) would keep close() waiting.
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    cut() {
      up = false;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore() {
      up = true;
    },
  };
}

/** host/port of the test database, whichever form the connection settings take. */
function hostPort(conn: { connectionString?: string; host?: string; port?: number }) {
  if (conn.connectionString) {
    const url = new URL(conn.connectionString);
    return { host: url.hostname, port: Number(url.port || 5432), url };
  }
  return { host: conn.host ?? '127.0.0.1', port: conn.port ?? 5432, url: undefined };
}

/**
 * The test database behind a relay that can be cut (connections refused and dropped) and
 * restored: what clients see while the database is unreachable, and that they recover by themselves.
 */
export async function relayedDatabase(conn: pg.PoolConfig, options: { down?: boolean } = {}) {
  const { host, port, url } = hostPort(conn as never);
  const r = await relay({ host, port });
  if (options.down) r.cut();
  const connection: pg.PoolConfig = url
    ? { connectionString: Object.assign(new URL(url.toString()), { host: `127.0.0.1:${r.port}` }).toString() }
    : { ...conn, host: '127.0.0.1', port: r.port };
  return { ...r, connection };
}
