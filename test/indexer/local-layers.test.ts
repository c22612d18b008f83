/**
 * Layers read from local files: the decompressor programs (igzip, zstd, bzip2, xz) are handed the
 * file's descriptor and read it themselves; Node's zlib is the fallback (no igzip) and Node's own
 * zstd an alternative where Node has it. Every path keeps the hostile-input bounds: corrupt and
 * truncated data are 422s, a decompression bomb stops at maxexpandedbytes, the walk stops at the
 * end-of-archive marker, and an abort ends the program.
 */
import { spawnSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { mkdtemp, readlink, rm, writeFile } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DECODERS, decompressed, type Decoders } from '../../src/decompress.js';
import { TarsierError } from '../../src/errors.js';
import { readLayerArchive } from '../../src/indexer/archive.js';
import { openLayer, type FetchSettings } from '../../src/indexer/fetch.js';
import { compressWith, gzip, tarball } from '../helpers/tarball.js';
import { tarsierError } from './tarsier-error.js';

const WANTED = new Set(['etc/os-release', 'var/lib/dpkg/status']);
const wants = (path: string) => WANTED.has(path);
const limits = { maxExpandedBytes: 256 * 1024 * 1024, maxFileBytes: 1024 * 1024 };
const status = 'Package: zlib1g\nStatus: install ok installed\nVersion: 1:1.2.13.dfsg-1\n';

/** Whether a program is on PATH (igzip comes with Debian's isal, which .ci/run installs). */
const installed = (program: string) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;
const hasIgzip = installed('igzip');
/** Whether this Node decompresses zstd itself (22.15+, 24). */
const nodeHasZstd = typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function';

const NODE_ONLY: Decoders = { gzipPrograms: [], gzipProgramsForStreams: false, nodeZstd: { files: true, streams: true } };
const PROGRAMS: Decoders = { gzipPrograms: ['igzip'], gzipProgramsForStreams: true, nodeZstd: { files: false, streams: false } };

/** Live processes this process started that run command. */
function children(command: string): Array<{ pid: number }> {
  const found = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (stat.includes(`(${command})`) && Number(fields[1]) === process.pid && fields[0] !== 'Z') {
        found.push({ pid: Number(pid) });
      }
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function stdinOf(pid: number): Promise<string> {
  return readlink(`/proc/${pid}/fd/0`);
}

/** Waits for condition, checking it whenever the event loop turns. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 10));
}

let root: string;
let settings: FetchSettings;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tarsier-local-layers-'));
  settings = { localRoots: [root], downloadTimeoutMs: 60_000, maxLayerBytes: 1 << 30, denyPrivate: false };
});
afterAll(() => rm(root, { recursive: true, force: true }));

let files = 0;
async function layerFile(data: Buffer): Promise<string> {
  const path = join(root, `layer-${files++}`);
  await writeFile(path, data);
  return path;
}

async function readFile(data: Buffer, decoders: Decoders = DEFAULT_DECODERS, signal?: AbortSignal) {
  const opened = await openLayer(await layerFile(data), {}, settings, signal);
  return readLayerArchive(opened.stream, 'docker', wants, limits, { decoders });
}

/**
 * A layer with its package database after 2 MiB of incompressible bytes, so a decompressor
 * program is still writing (its pipe full) when nobody reads.
 */
const bulky = tarball([
  { path: 'etc/os-release', content: 'ID=debian\nVERSION_ID="12"\n' },
  { path: 'srv/noise', content: Buffer.from(Array.from({ length: 2 << 20 }, (_, i) => (i * 2654435761) >>> 24)) },
  { path: 'var/lib/dpkg/status', content: status },
]);

const COMPRESSIONS: Array<[string, string, (tar: Buffer) => Buffer]> = [
  ['gzip', 'igzip', gzip],
  ['zstd', 'zstd', (tar) => compressWith('zstd', tar)],
  ['bzip2', 'bzip2', (tar) => compressWith('bzip2', tar)],
  ['xz', 'xz', (tar) => compressWith('xz', tar)],
];

describe('a local layer file', () => {
  it.each(COMPRESSIONS)(
    'compressed with %s is read by the %s program through its own descriptor, not piped through Node',
    async (_name, program, compress) => {
      if (program === 'igzip' && !hasIgzip) return expect.fail('igzip is not installed (Debian package isal; .ci/run installs it)');
      const path = await layerFile(compress(bulky));
      const opened = await openLayer(path, {}, settings);
      const output = await decompressed(opened.stream, (detail) => new TarsierError('unprocessable', detail), PROGRAMS);
      // Nothing reads the output yet: the program is blocked on its full pipe, its input the file.
      const [child] = children(program);
      expect(child).toBeDefined();
      expect(await stdinOf(child!.pid)).toBe(path);
      output.destroy();
      await until(() => children(program).length === 0);
      const { files } = await readFile(compress(bulky), PROGRAMS);
      expect(files.get('var/lib/dpkg/status')!.toString()).toBe(status);
    },
  );

  it('is read by the same programs through a pipe when it comes as a stream (a download)', async () => {
    const path = await layerFile(compressWith('zstd', bulky));
    const opened = await openLayer(path, {}, settings);
    const output = await decompressed(Readable.from(opened.stream), (detail) => new TarsierError('unprocessable', detail), PROGRAMS);
    await until(() => children('zstd').length === 1);
    expect(await stdinOf(children('zstd')[0]!.pid)).toMatch(/^(pipe|socket):/);
    output.destroy();
    await until(() => children('zstd').length === 0);
  });

  it("is read by Node's zlib when no inflater program is installed, and by Node's zstd where Node has it", async () => {
    const gz = await readFile(gzip(bulky), { ...PROGRAMS, gzipPrograms: ['tarsier-no-such-inflater', ...(hasIgzip ? [] : ['igzip'])] });
    expect(gz.files.get('var/lib/dpkg/status')!.toString()).toBe(status);
    const path = await layerFile(compressWith('zstd', bulky));
    const opened = await openLayer(path, {}, settings);
    const output = await decompressed(opened.stream, (detail) => new TarsierError('unprocessable', detail), NODE_ONLY);
    const spawned = children('zstd').length;
    output.destroy();
    // Node 24 needs no zstd process; Node 20 has no zstd of its own and falls back to the program.
    expect(spawned).toBe(nodeHasZstd ? 0 : 1);
    const zst = await readFile(compressWith('zstd', bulky), NODE_ONLY);
    expect(zst.files.get('var/lib/dpkg/status')!.toString()).toBe(status);
  });

  it.each([
    ['Node', NODE_ONLY],
    ['igzip', PROGRAMS],
  ])('read by %s, answers corrupt and truncated gzip with a 422', async (_name, decoders) => {
    const data = gzip(bulky);
    const truncated = await tarsierError(readFile(data.subarray(0, data.length - 100), decoders));
    expect(truncated.code).toBe('unprocessable');
    expect(truncated.message).toMatch(/not a readable tar archive \((gzip data is corrupt or truncated|it is truncated)/);
    const corrupt = Buffer.from(data);
    corrupt.fill(0x41, 20, 40);
    const err = await tarsierError(readFile(corrupt, decoders));
    expect(err.message).toMatch(/^the layer is not a readable tar archive \(gzip data is corrupt or truncated: /);
  });

  it.each([
    ['Node', NODE_ONLY],
    ['igzip', PROGRAMS],
  ])('read by %s, stops a decompression bomb at maxexpandedbytes', async (_name, decoders) => {
    const bomb = gzip(tarball([{ path: 'zeros', content: Buffer.alloc(32 << 20) }]));
    const err = await tarsierError(
      readLayerArchive(
        (await openLayer(await layerFile(bomb), {}, settings)).stream,
        'docker',
        wants,
        { ...limits, maxExpandedBytes: 1 << 20 },
        { decoders },
      ),
    );
    expect(err.message).toMatch(/^the layer expands to more than clair\.indexer\.maxexpandedbytes \(1048576 bytes\)/);
    await until(() => children('igzip').length === 0);
  });

  it('stops at the end-of-archive marker of a 16 GiB gzip file of zeros, and ends the inflater', async () => {
    // Walked to its end, 16 GiB through a pipe would take minutes: the test's timeout fails it.
    const member = gzip(Buffer.alloc(64 << 20));
    const path = await layerFile(Buffer.concat(Array.from({ length: 256 }, () => member)));
    const opened = await openLayer(path, {}, settings);
    const contents = await readLayerArchive(
      opened.stream,
      'docker',
      wants,
      { ...limits, maxExpandedBytes: 50 * 2 ** 30 },
      { decoders: PROGRAMS },
    );
    expect(contents.files.size).toBe(0);
    await until(() => children('igzip').length === 0);
  });

  it('ends the decompressor program when the reading is aborted (the client left, or the download timeout)', async () => {
    const abort = new AbortController();
    const path = await layerFile(compressWith('xz', bulky));
    const opened = await openLayer(path, {}, settings, abort.signal);
    const output = await decompressed(opened.stream, (detail) => new TarsierError('unprocessable', detail), PROGRAMS);
    const errored = new Promise<unknown>((resolve) => output.once('error', resolve));
    await until(() => children('xz').length === 1);
    abort.abort(new Error('the client went away'));
    expect(((await errored) as Error).message).toMatch(/aborted|client went away/);
    await until(() => children('xz').length === 0);
  });

  it('over maxlayerbytes is refused before anything is read', async () => {
    const path = await layerFile(gzip(bulky));
    const err = await tarsierError(openLayer(path, {}, { ...settings, maxLayerBytes: 1000 }));
    expect(err.message).toBe('layer is larger than clair.indexer.maxlayerbytes (1000 bytes)');
  });
});
