/**
 * /metrics as Prometheus reads it: the exposition passes `promtool check metrics` (when promtool
 * is installed), and every HTTP answer is counted once in tarsier_http_requests_total, also those
 * Node's HTTP parser refused before Fastify saw the request (414, 431, an unknown method).
 */
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_NAME_LENGTH } from '../src/api/limits.js';
import { testApp, type TestApp } from './helpers/app.js';

const promtool = spawnSync('promtool', ['--version']).error === undefined;

/** Writes a request on a new connection; the answer's status, once the server has closed the connection. */
function answerStatus(port: number, request: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0)));
    socket.on('error', reject);
  });
}

const get = (path: string, headers = '') => `GET ${path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n${headers}\r\n`;

/** Requests whose answers cover the routes, Fastify's refusals and the HTTP parser's, with the status each gets. */
const REQUESTS: ReadonlyArray<[string, number]> = [
  [get('/v1/namespaces'), 200],
  [get('/v1/nowhere'), 404],
  ['PATCH /v1/namespaces HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n', 405],
  [get('/v1/layers/%zz'), 400],
  [get(`/v1/layers/${'a'.repeat(MAX_NAME_LENGTH + 1)}`), 400],
  [get('/ui/assets/nope.js'), 404],
  [get(`/ancestry/${'a'.repeat(17_000)}`), 414],
  [get('/v1/namespaces', `X-Big: ${'b'.repeat(17_000)}\r\n`), 431],
  ['FROB /v1/namespaces HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n', 405],
];

describe('metrics', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await testApp({ grpc: true });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as net.AddressInfo).port;
  });

  it('count every HTTP answer once in tarsier_http_requests_total, those the HTTP parser refused too', async () => {
    const statuses: number[] = [];
    for (const [request, status] of REQUESTS) {
      const answered = await answerStatus(port, request);
      expect(answered, request.slice(0, 40)).toBe(status);
      statuses.push(answered);
    }
    const { values } = await t.metrics.httpRequests.get();
    const counted = new Map<string, number>();
    for (const v of values) counted.set(String(v.labels.status), (counted.get(String(v.labels.status)) ?? 0) + v.value);
    const answered = new Map<string, number>();
    for (const s of statuses) answered.set(String(s), (answered.get(String(s)) ?? 0) + 1);
    expect(Object.fromEntries(counted)).toEqual(Object.fromEntries(answered));

    const unparsed = values.filter((v) => v.labels.route === 'unparsed').map((v) => [v.labels.method, v.labels.status, v.value]);
    expect(unparsed).toEqual(
      expect.arrayContaining([
        ['GET', '414', 1],
        ['GET', '431', 1],
        ['other', '405', 1],
      ]),
    );
    // The errors among them are counted as errors as well, once.
    const errors = (await t.metrics.httpErrors.get()).values.reduce((sum, v) => sum + v.value, 0);
    expect(errors).toBe(statuses.filter((s) => s >= 400).length);
  });

  it.skipIf(!promtool)(
    `pass promtool check metrics${promtool ? '' : ' (skipped: promtool is not installed; Debian: apt-get install prometheus)'}`,
    async () => {
      for (const [request] of REQUESTS) await answerStatus(port, request);
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      const exposition = await res.text();
      expect(exposition).toContain('tarsier_http_requests_total{');
      expect(exposition).toContain('tarsier_nodejs_active_handles{');
      const check = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
      expect(`${check.stdout}${check.stderr}`).toBe('');
      expect(check.status).toBe(0);
    },
  );
});
