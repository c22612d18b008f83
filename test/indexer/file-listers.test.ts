/**
 * Programs and Java archives in the archive walk (FileLister): chosen by path, mode and first
 * bytes, read one at a time as the walk passes them, and a file over clair.indexer.maxfilebytes
 * reported unread while the rest of the layer is still indexed. The listers themselves are tested
 * on their own (go-lister, cargo-auditable, java-lister); here, what the walk hands them.
 */
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { FILE_LISTERS } from '../../src/ecosystems/index.js';
import { readLayerArchive } from '../../src/indexer/archive.js';
import type { ApplicationFindings } from '../../src/model/indexing.js';
import { tarball, type TarEntry } from '../helpers/tarball.js';
import { zipOf } from '../helpers/zip-archive.js';

const GO_FIXTURE = readFileSync(new URL('../fixtures/go/bin/gofixture-amd64', import.meta.url));
const SLF4J = readFileSync(new URL('../fixtures/maven/jars/slf4j-api.jar', import.meta.url));
const RUST_FIXTURE = readFileSync(new URL('../fixtures/cargo/bin/cratefixture', import.meta.url));
/** What `go version -m` printed for the fixture (test/fixtures/go/go-version-m.json), as the Go lister names it. */
const GO_PACKAGES = [
  'github.com/dgrijalva/jwt-go@v3.2.0+incompatible',
  'github.com/kballard/go-shellquote@v0.0.0-20180428030007-95032a82bc51',
  'github.com/pkg/errors@v0.9.1',
  'stdlib@go1.19.8',
];
/** What the recorder decoded from the Rust fixture's audit data (test/fixtures/cargo/cratefixture.zlib-json-packages.txt). */
const RUST_PACKAGES = ['aho-corasick@0.7.18', 'memchr@2.4.1', 'num-traits@0.2.15', 'regex-syntax@0.6.25', 'regex@1.5.4'];
const limits = { maxExpandedBytes: 64 * 1024 * 1024, maxFileBytes: 4 * 1024 * 1024 };
const wants = (path: string) => path === 'etc/os-release';

async function walk(entries: TarEntry[], l = limits) {
  return readLayerArchive(Readable.from([tarball(entries)]), 'docker', wants, l, { fileListers: FILE_LISTERS });
}

/** location → sorted name@version, and the unread files. */
function byLocation(found: ApplicationFindings | undefined) {
  const at: Record<string, string[]> = {};
  for (const p of found?.packages ?? []) (at[p.location] ??= []).push(`${p.name}@${p.version}`);
  for (const list of Object.values(at)) list.sort();
  return { at, unreadable: found?.unreadable ?? [] };
}

describe('programs and Java archives in the archive walk', () => {
  it('lists executables with Go build information and Java archives wherever they are, and nothing else', async () => {
    const contents = await walk([
      { path: 'etc/os-release', content: 'ID=debian\nVERSION_ID="12"\n' },
      { path: 'usr/local/bin/gofixture', content: GO_FIXTURE, mode: 0o755 },
      // The same program without an execute permission is no program of the image.
      { path: 'usr/share/doc/gofixture.copy', content: GO_FIXTURE, mode: 0o644 },
      { path: 'usr/bin/run.sh', content: '#!/bin/sh\nexec gofixture\n', mode: 0o755 },
      { path: 'opt/app/lib/slf4j-api.jar', content: SLF4J },
      { path: 'app/app.jar', content: zipOf([['BOOT-INF/lib/slf4j-api.jar', SLF4J]]) },
    ]);
    const { at, unreadable } = byLocation(contents.applicationsInFiles);
    expect(at).toEqual({
      'usr/local/bin/gofixture': GO_PACKAGES,
      'opt/app/lib/slf4j-api.jar': ['org.slf4j:slf4j-api@1.7.32'],
      'app/app.jar!/BOOT-INF/lib/slf4j-api.jar': ['org.slf4j:slf4j-api@1.7.32'],
    });
    expect(unreadable).toEqual([]);
    // Programs and archives are read for their packages, not kept as wanted files.
    expect([...contents.files.keys()]).toEqual(['etc/os-release']);
  });

  it('hands every ELF program to the Go and the cargo auditable listers, each listing only its own kind', async () => {
    const contents = await walk([
      { path: 'usr/local/bin/gofixture', content: GO_FIXTURE, mode: 0o755 },
      { path: 'usr/local/bin/cratefixture', content: RUST_FIXTURE, mode: 0o755 },
      // Without an execute permission neither program is read.
      { path: 'srv/cratefixture.bak', content: RUST_FIXTURE, mode: 0o644 },
    ]);
    const { at, unreadable } = byLocation(contents.applicationsInFiles);
    expect(at).toEqual({ 'usr/local/bin/gofixture': GO_PACKAGES, 'usr/local/bin/cratefixture': RUST_PACKAGES });
    const ecosystems = new Set(contents.applicationsInFiles?.packages.map((p) => `${p.location} ${p.ecosystem}`));
    expect(ecosystems).toEqual(new Set(['usr/local/bin/gofixture go', 'usr/local/bin/cratefixture crates.io']));
    expect(unreadable).toEqual([]);
  });

  it('reports a program over maxfilebytes unread, and still reads the rest of the layer', async () => {
    const small = { ...limits, maxFileBytes: 1024 * 1024 };
    const contents = await walk(
      [
        { path: 'usr/local/bin/gofixture', content: GO_FIXTURE, mode: 0o755 },
        // As large, but no program: not looked at, not reported.
        { path: 'usr/local/bin/data', content: Buffer.alloc(GO_FIXTURE.length, 1), mode: 0o755 },
        { path: 'etc/os-release', content: 'ID=debian\n' },
        { path: 'opt/app/lib/slf4j-api.jar', content: SLF4J },
      ],
      small,
    );
    const { at, unreadable } = byLocation(contents.applicationsInFiles);
    expect(at).toEqual({ 'opt/app/lib/slf4j-api.jar': ['org.slf4j:slf4j-api@1.7.32'] });
    expect(unreadable).toEqual([
      {
        location: 'usr/local/bin/gofixture',
        why: `${GO_FIXTURE.length} bytes, over clair.indexer.maxfilebytes (${small.maxFileBytes} bytes): not read`,
      },
    ]);
    expect(contents.files.get('etc/os-release')?.toString()).toBe('ID=debian\n');
  });

  it('lists a path the archive holds twice as its last entry has it', async () => {
    const contents = await walk([
      { path: 'app/server', content: GO_FIXTURE, mode: 0o755 },
      { path: 'app/lib.jar', content: SLF4J },
      { path: 'app/server', content: '#!/bin/sh\n', mode: 0o755 },
      { path: 'app/lib.jar', content: 'not a zip' },
      { path: 'app/other', content: '#!/bin/sh\n', mode: 0o755 },
      { path: 'app/other', content: GO_FIXTURE, mode: 0o755 },
    ]);
    const { at, unreadable } = byLocation(contents.applicationsInFiles);
    expect(at).toEqual({ 'app/other': GO_PACKAGES });
    expect(unreadable.map((u) => u.location)).toEqual(['app/lib.jar']);
  });

  it("gives a bounded answer for a zip bomb, an archive of 100,000 entries and a jar nested in itself, and lists the layer's other files", async () => {
    const bomb = zipOf([['zeros.bin', Buffer.alloc(100 * 1024 * 1024)]]);
    const many = zipOf(
      Array.from({ length: 100_000 }, (_, i): [string, string] => [`e${i}`, '']),
      false,
    );
    let nested = zipOf([['META-INF/maven/x/self/pom.properties', 'version=0\n']]);
    for (let level = 1; level <= 6; level++)
      nested = zipOf([
        ['lib/self.jar', nested],
        [`META-INF/maven/x/self/pom.properties`, `version=${level}\n`],
      ]);
    const contents = await walk(
      [
        { path: 'app/bomb.jar', content: bomb },
        { path: 'app/many.jar', content: many },
        { path: 'app/self.jar', content: nested },
        { path: 'usr/local/bin/gofixture', content: GO_FIXTURE, mode: 0o755 },
      ],
      { ...limits, maxFileBytes: 16 * 1024 * 1024 },
    );
    const { at, unreadable } = byLocation(contents.applicationsInFiles);
    expect(at['usr/local/bin/gofixture']).toEqual(GO_PACKAGES);
    expect(Object.keys(at).filter((l) => l.startsWith('app/self.jar'))).toHaveLength(4);
    expect(unreadable.map((u) => u.location)).toEqual([
      'app/bomb.jar',
      'app/many.jar',
      'app/self.jar!/lib/self.jar!/lib/self.jar!/lib/self.jar!/lib/self.jar',
    ]);
  });
});
