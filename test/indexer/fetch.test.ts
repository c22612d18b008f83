import { randomBytes } from 'node:crypto';
import type { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLayer, redactLocation, type FetchSettings } from '../../src/indexer/fetch.js';
import { AddressPolicy } from '../../src/outbound/address-policy.js';
import { startLayerServer, type LayerServer } from '../helpers/layer-server.js';
import { tarsierError } from './tarsier-error.js';

const SETTINGS: FetchSettings = {
  localRoots: [],
  downloadTimeoutMs: 5_000,
  maxLayerBytes: 1024 * 1024,
  denyPrivate: false,
};
const BLOB = randomBytes(64 * 1024);

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Opens `path` and reads it to the end. */
async function download(path: string, headers: Record<string, string> = {}, settings: Partial<FetchSettings> = {}): Promise<Buffer> {
  const opened = await openLayer(path, headers, { ...SETTINGS, ...settings });
  return readAll(opened.stream);
}

/** A dns.lookup that knows only `names` (always answers the `all: true` form, as the guard asks). */
function fakeDns(names: Record<string, string>): typeof dnsLookup {
  const lookup = (hostname: string, _options: unknown, callback: (err: Error | null, addresses: LookupAddress[]) => void) => {
    const address = names[hostname];
    if (address === undefined) callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    else callback(null, [{ address, family: address.includes(':') ? 6 : 4 }]);
  };
  return lookup as unknown as typeof dnsLookup;
}

async function elapsed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work();
  return [result, performance.now() - start];
}

let server: LayerServer;
let other: LayerServer; // another origin
beforeAll(async () => {
  server = await startLayerServer();
  other = await startLayerServer();
});

describe('http(s) downloads', () => {
  it('downloads a blob with the right Authorization and shows a clean location', async () => {
    server.serve('/auth/blob', BLOB, { authorization: 'Bearer good-token' });
    const opened = await openLayer(server.url('/auth/blob'), { Authorization: 'Bearer good-token' }, SETTINGS);
    expect(opened.location).toBe(server.url('/auth/blob'));
    expect((await readAll(opened.stream)).equals(BLOB)).toBe(true);
  });

  it('turns a 401 into a 400 with the authorization hint', async () => {
    server.serve('/auth/blob2', BLOB, { authorization: 'Bearer good-token' });
    const err = await tarsierError(download(server.url('/auth/blob2')));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(
      `could not download the layer: ${server.url('/auth/blob2')} answered 401: check the Authorization/Headers of the request`,
    );
  });

  it('passes the headers through, names case-insensitively', async () => {
    server.serve('/headers/blob', BLOB, { authorization: 'Bearer lower' });
    await download(server.url('/headers/blob'), { authorization: 'Bearer lower', 'X-Custom-Header': 'custom-value' });
    const seen = server.requests.filter((r) => r.path === '/headers/blob');
    expect(seen).toHaveLength(1);
    expect(seen[0]?.method).toBe('GET');
    expect(seen[0]?.headers['x-custom-header']).toBe('custom-value');
    expect(seen[0]?.headers.authorization).toBe('Bearer lower');
  });

  it('sends userinfo as Basic authentication, not in the URL', async () => {
    const basic = `Basic ${Buffer.from('user:p@ss').toString('base64')}`;
    server.serve('/basic/blob', BLOB, { authorization: basic });
    const url = server.url('/basic/blob').replace('http://', 'http://user:p%40ss@');
    const opened = await openLayer(url, {}, SETTINGS);
    expect(opened.location).toBe(server.url('/basic/blob'));
    expect((await readAll(opened.stream)).equals(BLOB)).toBe(true);

    // A malformed escape is sent as written (and refused by the server), never a crash.
    const malformed = await tarsierError(download(server.url('/basic/blob').replace('http://', 'http://user:%zz@')));
    expect(malformed.code).toBe('bad_request');
    expect(malformed.message).toBe(
      `could not download the layer: ${server.url('/basic/blob')} answered 401: check the Authorization/Headers of the request`,
    );
  });

  it('never shows credentials from the userinfo, the query or the headers', async () => {
    const secrets = ['SECRET-USERINFO', 'SECRET-QUERY', 'SECRET-HEADER', 'SECRET-OTHER'];
    server.serve('/secret/blob', BLOB, { authorization: 'Bearer right' });
    const url = server.url('/secret/blob?X-Amz-Signature=SECRET-QUERY').replace('http://', 'http://admin:SECRET-USERINFO@');
    const headers = { Authorization: 'Bearer SECRET-HEADER', 'X-Registry-Token': 'SECRET-OTHER' };
    const err = await tarsierError(download(url, headers));
    expect(err.code).toBe('bad_request');
    expect(err.message).toContain(`${server.url('/secret/blob')} answered 401`);

    const closed = await startLayerServer();
    const refusedUrl = closed.url('/blob?sig=SECRET-QUERY').replace('http://', 'http://admin:SECRET-USERINFO@');
    await closed.close();
    const refused = await tarsierError(download(refusedUrl, headers));
    expect(refused.message).toContain(closed.url('/blob'));

    for (const message of [err.message, refused.message]) {
      for (const secret of secrets) expect(message).not.toContain(secret);
      expect(message).not.toContain('admin');
    }
  });

  it('redacts userinfo, query and fragment in redactLocation', () => {
    expect(redactLocation('https://u:p@registry.example/v2/blobs/sha256:ab?X-Amz-Signature=s#f')).toBe(
      'https://registry.example/v2/blobs/sha256:ab',
    );
    expect(redactLocation('/var/layers/a.tar')).toBe('/var/layers/a.tar');
    expect(redactLocation('s3://key:secret@bucket/layer?token=t')).toBe('s3://bucket/layer');
    expect(redactLocation('http://u:p@[bad/layer?token=t')).toBe('http://[bad/layer');
  });
});

describe('redirects', () => {
  it('follows a same-origin redirect and keeps the Authorization', async () => {
    server.serve('/same/real', BLOB, { authorization: 'Bearer same' });
    server.redirect('/same/start', '/same/real', 307);
    const body = await download(server.url('/same/start'), { Authorization: 'Bearer same' });
    expect(body.equals(BLOB)).toBe(true);
    expect(server.requests.find((r) => r.path === '/same/real')?.headers.authorization).toBe('Bearer same');
  });

  it('drops the Authorization on a redirect to another origin', async () => {
    other.serve('/presigned/blob', BLOB);
    server.redirect('/cross/start', other.url('/presigned/blob?X-Amz-Signature=abc'));
    const body = await download(server.url('/cross/start'), { Authorization: 'Bearer registry-token', 'X-Trace': 't1' });
    expect(body.equals(BLOB)).toBe(true);
    expect(server.requests.find((r) => r.path === '/cross/start')?.headers.authorization).toBe('Bearer registry-token');
    const hop = other.requests.find((r) => r.path.startsWith('/presigned/blob'));
    expect(hop?.path).toBe('/presigned/blob?X-Amz-Signature=abc');
    expect(hop?.headers.authorization).toBeUndefined();
    expect(hop?.headers['x-trace']).toBe('t1');
  });

  it('refuses a redirect loop with a 400', async () => {
    server.redirect('/loop/a', '/loop/b');
    server.redirect('/loop/b', '/loop/a');
    const err = await tarsierError(download(server.url('/loop/a')));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(`could not download the layer: ${server.url('/loop/a')} redirects in a loop: check the layer Path`);
  });

  it('stops after maxRedirects', async () => {
    server.serve('/chain/3', BLOB);
    server.redirect('/chain/0', '/chain/1');
    server.redirect('/chain/1', '/chain/2');
    server.redirect('/chain/2', '/chain/3');
    expect((await download(server.url('/chain/0'), {}, { maxRedirects: 3 })).equals(BLOB)).toBe(true);
    const err = await tarsierError(download(server.url('/chain/0'), {}, { maxRedirects: 2 }));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(`could not download the layer: ${server.url('/chain/0')} redirected more than 2 times`);
  });
});

describe('failures and timeouts', () => {
  it('turns a 500 into a 400', async () => {
    server.serve('/broken', Buffer.from('oops'), { status: 500 });
    const err = await tarsierError(download(server.url('/broken')));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(`could not download the layer: ${server.url('/broken')} answered 500`);
  });

  it('turns a refused connection into a 400', async () => {
    const gone = await startLayerServer();
    await gone.close();
    const err = await tarsierError(download(gone.url('/blob')));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(`could not download the layer: ${gone.url('/blob')}: connection refused`);
  });

  it('turns an unknown host into a 400', async () => {
    const err = await tarsierError(download('http://layers.invalid/blob', {}, { lookup: fakeDns({}) }));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe('could not download the layer: http://layers.invalid/blob: host not found');
  });

  it('cuts off a body that stalls after the headers within the timeout', async () => {
    server.serve('/stall', BLOB, { stall: true });
    const opened = await openLayer(server.url('/stall'), {}, { ...SETTINGS, downloadTimeoutMs: 300 });
    const [err, ms] = await elapsed(() => tarsierError(readAll(opened.stream)));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(
      `could not download the layer: ${server.url('/stall')} did not finish within clair.indexer.downloadtimeout (300ms)`,
    );
    expect(ms).toBeLessThan(2_000);
  });

  it('gives up on a server that never answers within the timeout', async () => {
    server.serve('/silent', BLOB, { silent: true });
    const [err, ms] = await elapsed(() => tarsierError(download(server.url('/silent'), {}, { downloadTimeoutMs: 300 })));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(
      `could not download the layer: ${server.url('/silent')} did not finish within clair.indexer.downloadtimeout (300ms)`,
    );
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(2_000);
  });

  it('names the allowed schemes for any other one', async () => {
    for (const location of ['ftp://host/layer.tar', 's3://bucket/layer.tar', 'data:application/x-tar;base64,AAAA']) {
      const err = await tarsierError(openLayer(location, {}, SETTINGS));
      expect(err.code).toBe('bad_request');
      expect(err.message).toContain('are not supported: use an http:// or https:// URL, or a file:// URL');
    }
  });
});

describe('the layer size limit', () => {
  it('refuses an announced Content-Length over the limit before reading the body', async () => {
    // The server announces 1 MB, sends 50 bytes and stalls: only a refusal based on the headers
    // gives a 422; reading the body would end in the download timeout instead.
    server.serve('/big-announced', randomBytes(100), { contentLength: 1_000_000, stall: true });
    const settings = { maxLayerBytes: 1000, downloadTimeoutMs: 1_000 };
    const [err, ms] = await elapsed(() => tarsierError(download(server.url('/big-announced'), {}, settings)));
    expect(err.code).toBe('unprocessable');
    expect(err.message).toBe('layer is larger than clair.indexer.maxlayerbytes (1000 bytes)');
    expect(ms).toBeLessThan(2_000);
  });

  it('errors the stream once an unannounced (chunked) body passes the limit', async () => {
    server.serve('/big-chunked', randomBytes(100_000), { contentLength: 'none' });
    const opened = await openLayer(server.url('/big-chunked'), {}, { ...SETTINGS, maxLayerBytes: 30_000 });
    let received = 0;
    opened.stream.on('data', (chunk: Buffer) => (received += chunk.length));
    const err = await tarsierError(new Promise((_, reject) => opened.stream.once('error', reject)));
    expect(err.code).toBe('unprocessable');
    expect(err.message).toBe('layer is larger than clair.indexer.maxlayerbytes (30000 bytes)');
    expect(received).toBeLessThanOrEqual(30_000);
  });

  it('accepts a body of exactly the limit', async () => {
    server.serve('/exact', BLOB, { contentLength: 'none' });
    expect((await download(server.url('/exact'), {}, { maxLayerBytes: BLOB.length })).equals(BLOB)).toBe(true);
  });

  it('reads no more than the announced length when the server sends more', async () => {
    const body = randomBytes(1000);
    server.serve('/liar', body, { contentLength: 50 });
    const read = await download(server.url('/liar'), {}, { maxLayerBytes: 100 });
    expect(read.equals(body.subarray(0, 50))).toBe(true);
  });
});

const PRIVATE_REFUSAL =
  'is a private, loopback or link-local address and clair.indexer.denyprivate is on: serve the layer from a public address, ' +
  'list its network in clair.indexer.allownetworks, or turn clair.indexer.denyprivate off';
const LINK_LOCAL_REFUSAL =
  'is a link-local or cloud metadata address, which layer downloads never reach: ' +
  'list its network in clair.indexer.allownetworks if a layer really is served there';

describe('link-local and cloud metadata addresses, always refused', () => {
  it.each([
    ['169.254.169.254', 'link-local'],
    ['169.254.0.1', 'link-local'],
    ['100.100.100.200', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fd00:ec2::254', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['127.0.0.1', undefined],
    ['10.0.0.1', undefined],
    ['100.100.100.201', undefined],
    ['fd00:ec2::253', undefined],
    ['8.8.8.8', undefined],
    ['not-an-address', 'not-an-address'],
  ])('without denyprivate, %s is refused as: %s', (address, refusal) => {
    expect(new AddressPolicy({ denyPrivate: false }).refusal(address)).toBe(refusal);
  });

  it('refuses the metadata address as an IP literal, without connecting', async () => {
    const err = await tarsierError(download('http://169.254.169.254/latest/meta-data/iam/security-credentials/'));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(
      `could not download the layer: http://169.254.169.254/latest/meta-data/iam/security-credentials/: 169.254.169.254 ${LINK_LOCAL_REFUSAL}`,
    );
  });

  it('refuses a redirect from a layer server to the metadata address', async () => {
    server.redirect('/to-metadata', 'http://169.254.169.254/latest/meta-data/');
    const err = await tarsierError(download(server.url('/to-metadata')));
    expect(err.message).toBe(`could not download the layer: ${server.url('/to-metadata')}: 169.254.169.254 ${LINK_LOCAL_REFUSAL}`);
  });

  it('refuses a name that resolves to a metadata address (a rebinding answer), and an IPv6 link-local literal', async () => {
    const rebinding = await tarsierError(
      download('http://registry.example/v2/x/blobs/sha256:1', {}, { lookup: fakeDns({ 'registry.example': '169.254.169.254' }) }),
    );
    expect(rebinding.message).toContain(`: 169.254.169.254 ${LINK_LOCAL_REFUSAL}`);
    const v6 = await tarsierError(download('http://[fe80::1]:9/blob'));
    expect(v6.message).toContain(`: fe80::1 ${LINK_LOCAL_REFUSAL}`);
  });

  it('lets clair.indexer.allownetworks lift the refusal for the networks it lists', async () => {
    // layers.example "is" at a link-local address; the test server listens on 127.0.0.1, where the connection goes.
    const policy = new AddressPolicy({ denyPrivate: true, allowNetworks: ['169.254.10.0/24', '127.0.0.1'] });
    expect(policy.refusal('169.254.10.7')).toBeUndefined();
    expect(policy.refusal('169.254.169.254')).toBe('link-local');
    expect(policy.refusal('127.0.0.1')).toBeUndefined();
    expect(policy.refusal('127.0.0.2')).toBe('private');
    expect(() => new AddressPolicy({ denyPrivate: false, allowNetworks: ['10.0.0.0/33'] })).toThrow(/not a network/);
  });
});

describe('denyPrivate', () => {
  const deny = { denyPrivate: true } as const;

  it.each([
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['10.1.2.3', true],
    ['172.16.0.1', true],
    ['172.31.255.255', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['100.127.255.255', true],
    ['100.128.0.1', false],
    ['0.0.0.0', true],
    ['224.0.0.251', true],
    ['255.255.255.255', true],
    ['8.8.8.8', false],
    ['93.184.216.34', false],
    ['::', true],
    ['::1', true],
    ['[::1]', true],
    ['fd12:3456::1', true],
    ['fc00::1', true],
    ['fe80::1%eth0', true],
    ['ff02::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:a00:1', true],
    ['::ffff:8.8.8.8', false],
    ['64:ff9b::a9fe:a9fe', true],
    ['2001:4860:4860::8888', false],
    ['2606:4700::1111', false],
    ['not-an-address', true],
  ])('classifies %s as refused: %s', (address, expected) => {
    expect(new AddressPolicy({ denyPrivate: true }).refusal(address) !== undefined).toBe(expected);
  });

  it('refuses an IP literal on a loopback address without connecting', async () => {
    server.serve('/deny/literal', BLOB);
    const err = await tarsierError(download(server.url('/deny/literal'), {}, deny));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(`could not download the layer: ${server.url('/deny/literal')}: 127.0.0.1 ${PRIVATE_REFUSAL}`);
    expect(server.requests.some((r) => r.path === '/deny/literal')).toBe(false);
  });

  it('refuses an IPv6 loopback literal', async () => {
    const err = await tarsierError(download('http://[::1]:9/blob', {}, deny));
    expect(err.code).toBe('bad_request');
    expect(err.message).toContain(`: ::1 ${PRIVATE_REFUSAL}`);
  });

  it('refuses localhost, which resolves to loopback', async () => {
    server.serve('/deny/localhost', BLOB);
    const url = server.url('/deny/localhost').replace('127.0.0.1', 'localhost');
    const err = await tarsierError(download(url, {}, deny));
    expect(err.code).toBe('bad_request');
    expect(err.message).toMatch(
      /: (127\.0\.0\.1|::1) is a private, loopback or link-local address and clair\.indexer\.denyprivate is on: /,
    );
    expect(server.requests.some((r) => r.path === '/deny/localhost')).toBe(false);
  });

  describe('with the test server treated as public', () => {
    // 127.0.0.1 (where the test servers listen) is allowed by allownetworks; every other loopback
    // address stays refused. layers.example resolves to it, internal.example to 127.0.0.2.
    const settings: Partial<FetchSettings> = {
      denyPrivate: true,
      allowNetworks: ['127.0.0.1/32'],
      lookup: fakeDns({ 'layers.example': '127.0.0.1', 'internal.example': '127.0.0.2' }),
    };
    const publicUrl = (path: string) => server.url(path).replace('127.0.0.1', 'layers.example');

    it('downloads from an allowed name (the lookup is the one connected with)', async () => {
      server.serve('/allowed/blob', BLOB);
      expect((await download(publicUrl('/allowed/blob'), {}, settings)).equals(BLOB)).toBe(true);
    });

    it('refuses a redirect from an allowed host to a private IP literal', async () => {
      server.redirect('/allowed/to-literal', server.url('/blob').replace('127.0.0.1', '127.0.0.2'));
      const err = await tarsierError(download(publicUrl('/allowed/to-literal'), {}, settings));
      expect(err.code).toBe('bad_request');
      expect(err.message).toContain(`${publicUrl('/allowed/to-literal')}: 127.0.0.2 ${PRIVATE_REFUSAL}`);
    });

    it('refuses a redirect from an allowed host to a name that resolves to a private address', async () => {
      server.redirect('/allowed/to-name', server.url('/blob').replace('127.0.0.1', 'internal.example'));
      const err = await tarsierError(download(publicUrl('/allowed/to-name'), {}, settings));
      expect(err.code).toBe('bad_request');
      expect(err.message).toContain(`: 127.0.0.2 ${PRIVATE_REFUSAL}`);
    });
  });
});

describe('local files', () => {
  let root: string; // the configured root
  let outside: string; // a directory outside it
  let inRoot: string;
  const layer = randomBytes(3 * 1024 * 1024 + 17); // several 1 MiB reads
  const local = (settings: Partial<FetchSettings> = {}): Partial<FetchSettings> => ({
    localRoots: [root],
    maxLayerBytes: 10 * 1024 * 1024,
    ...settings,
  });

  beforeAll(async () => {
    const base = await mkdtemp(join(tmpdir(), 'tarsier-fetch-'));
    root = join(base, 'root');
    outside = join(base, 'outside');
    await mkdir(join(root, 'sub'), { recursive: true });
    await mkdir(outside);
    inRoot = join(root, 'layer.tar');
    await writeFile(inRoot, layer);
    await writeFile(join(outside, 'secret.tar'), 'outside');
    await symlink(join(outside, 'secret.tar'), join(root, 'escape.tar'));
    await symlink(root, join(base, 'root-link'));
  });
  afterAll(async () => {
    await rm(join(root, '..'), { recursive: true, force: true });
  });

  it('reads a file inside a root', async () => {
    const opened = await openLayer(inRoot, {}, { ...SETTINGS, ...local() });
    expect(opened.location).toBe(inRoot);
    expect((await readAll(opened.stream)).equals(layer)).toBe(true);
  });

  it('reads a file:// URL inside a root', async () => {
    expect((await download(pathToFileURL(inRoot).href, {}, local())).equals(layer)).toBe(true);
  });

  it('accepts a root configured through a symlink', async () => {
    expect((await download(inRoot, {}, local({ localRoots: [join(root, '..', 'root-link')] }))).equals(layer)).toBe(true);
  });

  it('refuses every local path when no root is configured', async () => {
    const err = await tarsierError(openLayer(inRoot, {}, SETTINGS));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe('local layer paths are refused: add the directory to clair.api.localroots to allow them');
  });

  it('refuses a file outside the roots', async () => {
    const path = join(outside, 'secret.tar');
    const err = await tarsierError(download(path, {}, local()));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(`local layer path ${path} is outside clair.api.localroots: move the layer under one of them`);
  });

  it('refuses ../ that climbs out of a root', async () => {
    const path = join(root, '..', 'outside', 'secret.tar').replace(join(root, '..'), `${root}/..`);
    const err = await tarsierError(download(path, {}, local()));
    expect(err.code).toBe('bad_request');
    expect(err.message).toContain('is outside clair.api.localroots');
  });

  it('refuses a symlink inside a root that points outside', async () => {
    const err = await tarsierError(download(join(root, 'escape.tar'), {}, local()));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(
      `local layer path ${join(root, 'escape.tar')} is outside clair.api.localroots: move the layer under one of them`,
    );
  });

  it('refuses a relative path', async () => {
    const err = await tarsierError(download('layers/layer.tar', {}, local()));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe('local layer path layers/layer.tar is relative: give an absolute path under clair.api.localroots');
  });

  it('reports a missing file inside a root', async () => {
    const path = join(root, 'missing.tar');
    const err = await tarsierError(download(path, {}, local()));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(`could not open the layer: ${path} does not exist`);
  });

  it('does not reveal whether a file outside the roots exists', async () => {
    const err = await tarsierError(download(join(outside, 'missing.tar'), {}, local()));
    expect(err.message).toContain('is outside clair.api.localroots');
  });

  it('refuses a directory', async () => {
    const path = join(root, 'sub');
    const err = await tarsierError(download(path, {}, local()));
    expect(err.code).toBe('bad_request');
    expect(err.message).toBe(`could not open the layer: ${path} is not a regular file: give the path of the layer archive`);
  });

  it('errors the stream with a 422 when the file is over the limit', async () => {
    const err = await tarsierError(download(inRoot, {}, local({ maxLayerBytes: 1024 * 1024 })));
    expect(err.code).toBe('unprocessable');
    expect(err.message).toBe('layer is larger than clair.indexer.maxlayerbytes (1048576 bytes)');
  });
});

describe('aborting', () => {
  it('destroys a download mid-body and lets go of the socket', async () => {
    const server2 = await startLayerServer();
    server2.serve('/stall', BLOB, { stall: true });
    const controller = new AbortController();
    const opened = await openLayer(server2.url('/stall'), {}, SETTINGS, controller.signal);
    opened.stream.once('data', () => controller.abort());
    const [err, ms] = await elapsed(() =>
      readAll(opened.stream).then(
        () => undefined,
        (e: unknown) => e,
      ),
    );
    expect((err as Error).name).toBe('AbortError');
    expect(ms).toBeLessThan(2_000);
    expect(opened.stream.destroyed).toBe(true);
    await expect.poll(() => server2.connections(), { timeout: 2_000 }).toBe(0);
  });

  it('aborts while waiting for the headers', async () => {
    server.serve('/abort/silent', BLOB, { silent: true });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const [err, ms] = await elapsed(() =>
      openLayer(server.url('/abort/silent'), {}, SETTINGS, controller.signal).then(
        () => undefined,
        (e: unknown) => e,
      ),
    );
    expect((err as Error).name).toBe('AbortError');
    expect(ms).toBeLessThan(2_000);
  });

  it('destroys a local file stream', async () => {
    const base = await mkdtemp(join(tmpdir(), 'tarsier-fetch-abort-'));
    await writeFile(join(base, 'layer.tar'), randomBytes(4 * 1024 * 1024));
    const controller = new AbortController();
    const opened = await openLayer(join(base, 'layer.tar'), {}, { ...SETTINGS, localRoots: [base], maxLayerBytes: 1e9 }, controller.signal);
    opened.stream.once('data', () => controller.abort());
    const err = await readAll(opened.stream).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error).name).toBe('AbortError');
    expect(opened.stream.destroyed).toBe(true);
    await rm(base, { recursive: true });
  });

  it('refuses to start with an already aborted signal', async () => {
    const err = await openLayer(server.url('/auth/blob'), {}, SETTINGS, AbortSignal.abort()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error).name).toBe('AbortError');
  });
});
