/**
 * A server without the decompressor programs (a slim Docker image): gzip falls back to Node's
 * zlib, zstd to Node's own zstd where Node has it (22.15+, 24), and what has no fallback is a 422
 * naming the Debian package to install. Its own file: programs found missing are remembered for
 * the life of the process.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLayerArchive } from '../../src/indexer/archive.js';
import { openLayer, type FetchSettings } from '../../src/indexer/fetch.js';
import { compressWith, gzip, tarball } from '../helpers/tarball.js';
import { tarsierError } from './tarsier-error.js';

const status = 'Package: zlib1g\nStatus: install ok installed\nVersion: 1:1.2.13.dfsg-1\n';
const layer = tarball([{ path: 'var/lib/dpkg/status', content: status }]);
const limits = { maxExpandedBytes: 1 << 20, maxFileBytes: 1 << 20 };
const nodeHasZstd = typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function';

let root: string;
let settings: FetchSettings;
let path: string | undefined;
// Compressed while the programs are still on PATH.
const compressed = { gzip: gzip(layer), zstd: compressWith('zstd', layer), xz: compressWith('xz', layer) };
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tarsier-no-programs-'));
  settings = { localRoots: [root], downloadTimeoutMs: 10_000, maxLayerBytes: 1 << 20, denyPrivate: false };
  path = process.env.PATH;
  process.env.PATH = root; // no programs at all
});
afterAll(async () => {
  process.env.PATH = path;
  await rm(root, { recursive: true, force: true });
});

async function read(name: keyof typeof compressed) {
  const file = join(root, `layer.tar.${name}`);
  await writeFile(file, compressed[name]);
  const opened = await openLayer(file, {}, settings);
  return readLayerArchive(opened.stream, 'docker', (p) => p === 'var/lib/dpkg/status', limits);
}

describe('a server without decompressor programs', () => {
  it("reads gzip with Node's zlib", async () => {
    expect((await read('gzip')).files.get('var/lib/dpkg/status')!.toString()).toBe(status);
  });

  it.runIf(nodeHasZstd)("reads zstd with Node's own zstd", async () => {
    expect((await read('zstd')).files.get('var/lib/dpkg/status')!.toString()).toBe(status);
  });

  it.runIf(!nodeHasZstd)('answers zstd with a 422 naming the package to install (Node 20 has no zstd)', async () => {
    const err = await tarsierError(read('zstd'));
    expect(err.message).toMatch(/the zstd program is not installed on the server \(Debian package zstd\)/);
  });

  it('answers xz with a 422 naming the package to install', async () => {
    const err = await tarsierError(read('xz'));
    expect(err.code).toBe('unprocessable');
    expect(err.message).toMatch(/the xz program is not installed on the server \(Debian package xz-utils\)/);
  });
});
