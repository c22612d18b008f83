import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { normalizeEntryPath, readLayerArchive, resolveLinkTarget, type LayerFormat } from '../../src/indexer/archive.js';
import { isWhitedOut } from '../../src/model/layer.js';
import { compressWith, gzip, tarball, type TarEntry } from '../helpers/tarball.js';
import { tarsierError } from './tarsier-error.js';

const WANTED = new Set(['etc/os-release', 'usr/lib/os-release', 'var/lib/dpkg/status', 'lib/apk/db/installed']);
const wants = (path: string) => WANTED.has(path);
const limits = { maxExpandedBytes: 64 * 1024 * 1024, maxFileBytes: 1024 * 1024 };

function read(data: Buffer, format: LayerFormat = 'docker', l = limits) {
  return readLayerArchive(Readable.from([data]), format, wants, l);
}

const osRelease = 'ID=debian\nVERSION_ID="12"\n';
const simple: TarEntry[] = [
  { path: './', type: 'dir' },
  { path: './etc/', type: 'dir' },
  { path: './etc/os-release', content: osRelease },
  { path: './etc/hostname', content: 'unwanted' },
  { path: './var/lib/dpkg/status', content: 'Package: zlib1g\n' },
];

describe('readLayerArchive', () => {
  it('buffers only the wanted files, with ./ prefixes normalised', async () => {
    const { files } = await read(tarball(simple));
    expect([...files.keys()].sort()).toEqual(['etc/os-release', 'var/lib/dpkg/status']);
    expect(files.get('etc/os-release')!.toString()).toBe(osRelease);
  });

  it.each([
    ['gzip', (t: Buffer) => gzip(t)],
    ['zstd', (t: Buffer) => compressWith('zstd', t)],
    ['bzip2', (t: Buffer) => compressWith('bzip2', t)],
    ['xz', (t: Buffer) => compressWith('xz', t)],
  ])('reads %s-compressed layers', async (_name, compress) => {
    const { files } = await read(compress(tarball(simple)));
    expect(files.get('var/lib/dpkg/status')!.toString()).toBe('Package: zlib1g\n');
  });

  it('reads ACI layers under rootfs/ and ignores the manifest beside it', async () => {
    const { files } = await read(
      tarball([
        { path: 'manifest', content: '{}' },
        { path: 'etc/os-release', content: 'ID=wrong\n' },
        { path: 'rootfs/etc/os-release', content: osRelease },
      ]),
      'aci',
    );
    expect([...files.keys()]).toEqual(['etc/os-release']);
    expect(files.get('etc/os-release')!.toString()).toBe(osRelease);
  });

  it('records whiteouts and opaque directories', async () => {
    const { whiteouts, files } = await read(
      tarball([
        { path: 'var/lib/dpkg/.wh.status', content: '' },
        { path: 'lib/apk/.wh..wh..opq', content: '' },
        { path: '.wh.opt', content: '' },
      ]),
    );
    expect(files.size).toBe(0);
    expect([...whiteouts.deleted].sort()).toEqual(['opt', 'var/lib/dpkg/status']);
    expect([...whiteouts.opaque]).toEqual(['lib/apk']);
    expect(isWhitedOut('var/lib/dpkg/status', whiteouts)).toBe(true);
    expect(isWhitedOut('lib/apk/db/installed', whiteouts)).toBe(true);
    expect(isWhitedOut('opt/x/y', whiteouts)).toBe(true);
    expect(isWhitedOut('var/lib/dpkg/available', whiteouts)).toBe(false);
    expect(isWhitedOut('lib/apk', whiteouts)).toBe(false);
  });

  it('resolves symlinks and hard links to wanted files within the layer, in either order', async () => {
    const { files } = await read(
      tarball([
        { path: 'etc/os-release', type: 'symlink', target: '../usr/lib/os-release' },
        { path: 'usr/lib/os-release', content: osRelease },
        { path: 'srv/status.real', content: 'Package: a\n' },
        { path: 'var/lib/dpkg/status', type: 'symlink', target: '/srv/status.real' },
        { path: 'lib/apk/db/installed', type: 'hardlink', target: 'usr/lib/os-release' },
      ]),
    );
    expect(files.get('etc/os-release')!.toString()).toBe(osRelease);
    expect(files.get('usr/lib/os-release')!.toString()).toBe(osRelease);
    expect(files.get('lib/apk/db/installed')!.toString()).toBe(osRelease);
    // The target came before the link and was not wanted: it was not kept, so the link stays unresolved.
    expect(files.has('var/lib/dpkg/status')).toBe(false);
    expect(files.has('srv/status.real')).toBe(false);
  });

  it('survives symlink loops, and resolves links that climb out of the root at the root', async () => {
    const { files } = await read(
      tarball([
        { path: 'etc/os-release', type: 'symlink', target: 'os-release-2' },
        { path: 'etc/os-release-2', type: 'symlink', target: 'os-release' },
        { path: 'usr/lib/os-release', type: 'symlink', target: '../../../../../etc/hostname' },
        { path: 'etc/hostname', content: 'x' },
      ]),
    );
    expect(files.has('etc/os-release')).toBe(false);
    // As in a chroot, /.. is /: the link leads to etc/hostname of this layer.
    expect(files.get('usr/lib/os-release')!.toString()).toBe('x');
    expect(files.size).toBe(1);
  });

  it('ignores entries whose paths climb out of the layer and strips absolute ones', async () => {
    const { files } = await read(
      tarball([
        { path: '../../etc/os-release', content: 'ID=evil\n' },
        { path: 'a/../../etc/os-release', content: 'ID=evil\n' },
        { path: '/var/lib/dpkg/status', content: 'Package: abs\n' },
      ]),
    );
    expect([...files.keys()]).toEqual(['var/lib/dpkg/status']);
    expect(files.get('var/lib/dpkg/status')!.toString()).toBe('Package: abs\n');
  });

  it('keeps the last of several entries for one path, as extraction would', async () => {
    const { files } = await read(
      tarball([
        { path: 'etc/os-release', content: 'ID=first\n' },
        { path: 'etc/os-release', content: osRelease },
      ]),
    );
    expect(files.get('etc/os-release')!.toString()).toBe(osRelease);
  });

  it('refuses a wanted file over maxfilebytes with a 422 that names it', async () => {
    const err = await tarsierError(
      read(tarball([{ path: 'var/lib/dpkg/status', content: Buffer.alloc(2048, 'a') }]), 'docker', { ...limits, maxFileBytes: 1024 }),
    );
    expect(err.code).toBe('unprocessable');
    expect(err.message).toBe('var/lib/dpkg/status in the layer is 2048 bytes, over clair.indexer.maxfilebytes (1024 bytes)');
  });

  it('refuses wanted files that together hold more than twice maxfilebytes in memory', async () => {
    const big = 'x'.repeat(400 * 1024);
    const entries = [...WANTED].map((path) => ({ path, content: big }));
    const err = await tarsierError(read(tarball(entries), 'docker', { ...limits, maxFileBytes: 512 * 1024 }));
    expect(err.code).toBe('unprocessable');
    expect(err.message).toBe(
      'the package databases and release files of the layer add up to more than 2 × clair.indexer.maxfilebytes (1048576 bytes)',
    );
    expect((await read(tarball(entries.slice(0, 2)), 'docker', { ...limits, maxFileBytes: 512 * 1024 })).files.size).toBe(2);
  });

  it('stops a decompression bomb at maxexpandedbytes', async () => {
    const bomb = gzip(tarball([{ path: 'zeros', content: Buffer.alloc(8 * 1024 * 1024) }]));
    expect(bomb.length).toBeLessThan(64 * 1024);
    const err = await tarsierError(read(bomb, 'docker', { ...limits, maxExpandedBytes: 1024 * 1024 }));
    expect(err.code).toBe('unprocessable');
    expect(err.message).toMatch(/^the layer expands to more than clair\.indexer\.maxexpandedbytes \(1048576 bytes\)/);
  });

  const broken: Array<[string, () => Buffer, RegExp]> = [
    ['random bytes', () => Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251)), /not a readable tar archive/],
    ['an empty body', () => Buffer.alloc(0), /not a readable tar archive \(it is empty\)/],
    ['a JSON document', () => Buffer.from('{"not":"a layer"}'), /not a readable tar archive/],
    ['a tar cut inside a header', () => tarball(simple).subarray(0, 700), /truncated/],
    ['a tar cut at a block boundary', () => tarball(simple, { eof: false }).subarray(0, 1536), /truncated/],
    [
      'a tar cut inside a wanted body',
      () => tarball([{ path: 'var/lib/dpkg/status', content: Buffer.alloc(4096, 'a') }]).subarray(0, 2048),
      /not a readable tar archive|truncated/,
    ],
    [
      'a tar cut inside an unwanted body',
      () => tarball([{ path: 'big', content: Buffer.alloc(4096, 'a') }]).subarray(0, 2048),
      /not a readable tar archive|truncated/,
    ],
    [
      'a truncated gzip stream',
      () => gzip(tarball(simple)).subarray(0, 60),
      /not a readable tar archive \(gzip data is corrupt or truncated: unexpected end of file\)/,
    ],
    [
      'a corrupt gzip stream',
      () => {
        const g = gzip(tarball(simple));
        g.fill(0x41, 20, 40);
        return g;
      },
      /not a readable tar archive \(gzip data is corrupt or truncated: /,
    ],
    ['a truncated zstd stream', () => compressWith('zstd', tarball(simple)).subarray(0, 40), /not a readable tar archive/],
    [
      'a header that lies about its size',
      () => tarball([{ path: 'var/lib/dpkg/status', type: 'raw', size: 10 * 1024, content: Buffer.alloc(512, 'a') }]),
      /not a readable tar archive|truncated/,
    ],
  ];
  it.each(broken)('answers %s with a 422', async (_what, make, message) => {
    const err = await tarsierError(read(make()));
    expect(err.code).toBe('unprocessable');
    expect(err.message).toMatch(message);
  });
});

describe('the end of an archive, as tar and gzip read it', () => {
  it("reads an archive of only the end-of-archive marker as an empty layer (Docker's empty layer blob)", async () => {
    const contents = await read(gzip(Buffer.alloc(1024)));
    expect(contents.files.size).toBe(0);
    expect(contents.whiteouts.deleted.size).toBe(0);
  });

  it('ignores what follows the end-of-archive marker: more zero records, junk, the rest of a stream of zeros', async () => {
    const tar = tarball(simple);
    for (const tail of [Buffer.alloc(9 * 1024), Buffer.from('junk after the archive'), Buffer.alloc(8 << 20)]) {
      const { files } = await read(gzip(Buffer.concat([tar, tail])));
      expect(files.get('var/lib/dpkg/status')!.toString()).toBe('Package: zlib1g\n');
    }
  });

  it('stops reading the source at the end-of-archive marker: a 4 GiB gzip stream of zeros is answered at once', async () => {
    // 64 members of 64 MiB of zeros each (concatenated gzip members are one gzip stream).
    const member = gzip(Buffer.alloc(64 << 20));
    let sent = 0;
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < 64; i++) {
          sent++;
          yield member;
        }
      })(),
    );
    const contents = await readLayerArchive(source, 'docker', wants, { ...limits, maxExpandedBytes: 50 * 2 ** 30 });
    expect(contents.files.size).toBe(0);
    expect(sent).toBeLessThan(4);
  });

  it('reads gzip as gzip does: concatenated members, trailing garbage after the last one ignored; a wrong CRC is refused', async () => {
    const tar = tarball(simple);
    const halves = Buffer.concat([gzip(tar.subarray(0, 1536)), gzip(tar.subarray(1536))]);
    expect((await read(halves)).files.get('etc/os-release')!.toString()).toBe(osRelease);
    const garbage = Buffer.concat([gzip(tar), Buffer.from('\0\0trailing garbage from a registry\n')]);
    expect((await read(garbage)).files.get('etc/os-release')!.toString()).toBe(osRelease);
    const corrupt = gzip(tar);
    corrupt.writeUInt32LE(corrupt.readUInt32LE(corrupt.length - 8) ^ 1, corrupt.length - 8);
    expect((await tarsierError(read(corrupt))).message).toBe(
      'the layer is not a readable tar archive (gzip data is corrupt or truncated: its CRC-32 or length does not match)',
    );
  });

  it('reads gzip written by the gzip program (a header with the file name) in small chunks', async () => {
    const tar = tarball(simple);
    const named = execFileSync('sh', ['-c', 'f=$(mktemp) && cat > "$f" && gzip -c "$f" && rm "$f"'], { input: tar, cwd: tmpdir() });
    expect(named[3]! & 8).toBe(8); // FNAME
    const chunks = [];
    for (let at = 0; at < named.length; at += 7) chunks.push(named.subarray(at, at + 7));
    const { files } = await readLayerArchive(Readable.from(chunks), 'docker', wants, limits);
    expect(files.get('var/lib/dpkg/status')!.toString()).toBe('Package: zlib1g\n');
  });
});

describe("the uncompressed digest (an image config's diff_id), read in the same pass", () => {
  const sha256 = (data: Buffer): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;
  const withDigest = (data: Buffer, l = limits) =>
    readLayerArchive(Readable.from([data]), 'docker', wants, l, { uncompressedDigest: true });

  it('is the digest of the whole tar stream, what follows the end-of-archive marker included', async () => {
    const tar = tarball(simple);
    // GNU tar pads to 10 KiB records; a tool may leave other bytes after the marker.
    for (const tail of [Buffer.alloc(0), Buffer.alloc(10240 - (tar.length % 10240)), Buffer.from('junk after the archive')]) {
      const contents = await withDigest(gzip(Buffer.concat([tar, tail])));
      expect(contents.uncompressedDigest).toBe(sha256(Buffer.concat([tar, tail])));
      expect(contents.files.get('var/lib/dpkg/status')!.toString()).toBe('Package: zlib1g\n');
    }
    // Uncompressed, it is the digest of the bytes themselves.
    expect((await withDigest(tar)).uncompressedDigest).toBe(sha256(tar));
    // gzip's trailing garbage is not part of the decompressed stream.
    expect((await withDigest(Buffer.concat([gzip(tar), Buffer.from('\0\0trailing garbage')]))).uncompressedDigest).toBe(sha256(tar));
  });

  it('is computed only when asked for', async () => {
    expect(await read(gzip(tarball(simple)))).not.toHaveProperty('uncompressedDigest');
  });

  it('is left unknown, the layer still read, when what follows the marker goes past maxexpandedbytes', async () => {
    const contents = await withDigest(gzip(Buffer.concat([tarball(simple), Buffer.alloc(8 << 20)])), {
      ...limits,
      maxExpandedBytes: 1 << 20,
    });
    expect(contents.files.get('etc/os-release')!.toString()).toBe(osRelease);
    expect(contents).not.toHaveProperty('uncompressedDigest');
  });
});

describe('path handling', () => {
  it.each([
    ['./etc/os-release', 'etc/os-release'],
    ['/etc/os-release', 'etc/os-release'],
    ['etc//./os-release', 'etc/os-release'],
    ['a/b/../c', 'a/c'],
    ['../etc/passwd', undefined],
    ['a/../../b', undefined],
  ])('normalises %s to %s', (raw, expected) => {
    expect(normalizeEntryPath(raw)).toBe(expected);
  });

  it.each([
    ['etc/os-release', '../usr/lib/os-release', 'usr/lib/os-release'],
    ['etc/os-release', '/usr/lib/os-release', 'usr/lib/os-release'],
    ['etc/a', '../../../../x', 'x'],
    ['var/lib/rpm', '../../usr/lib/sysimage/rpm', 'usr/lib/sysimage/rpm'],
  ])('resolves a link at %s to %s as %s', (from, target, expected) => {
    expect(resolveLinkTarget(from, target)).toBe(expected);
  });
});
