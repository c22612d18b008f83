import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readBuildInfo } from '../../src/ecosystems/go/buildinfo.js';
import { readElf } from '../../src/ecosystems/elf.js';
import { goBinaryLister } from '../../src/ecosystems/go/lister.js';
import { ELF_SHAPES, buildInfoBlob, elfWithData, framed, withoutSectionHeaders } from './go-elf.js';
import { expectedPackages, parseGoVersionM } from './go-oracle.js';

/**
 * The Go lister against a live `go version -m` where Go is installed (skipped elsewhere; the
 * recorded answers of go-lister.test.ts cover the real binaries without it): every fixture binary
 * and Debian Go program present, the committed binary without its section headers, and the ELF
 * files the tests build (each word size and byte order, each build information layout), so the
 * files those tests construct are checked to be ones Go itself reads the same way.
 */
const goVersion = (() => {
  try {
    return execFileSync('go', ['version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
})();

const FIXTURE_BIN = fileURLToPath(new URL('../fixtures/go/bin/', import.meta.url));
const DEBIAN_PROGRAMS = ['/usr/bin/docker-registry', '/usr/bin/skopeo', '/usr/bin/promtool'];
const MODINFO = framed(
  'path\texample.com/cmd/tool\nmod\texample.com/cmd\tv1.4.2\th1:main=\n' +
    'dep\tgolang.org/x/net\tv0.0.0-20190620200207-3b0461eec859\th1:net=\n=>\tgolang.org/x/net\tv0.7.0\th1:netfix=\n' +
    'dep\tgolang.org/x/text\tv0.3.7\t\ndep\texample.com/patched\tv1.0.0\th1:p=\n=>\t../patched\t\t\nbuild\tGOARCH=amd64\n',
);

/** go version -m of file, without the `<file>: ` it starts with. */
const goVersionM = (file: string): string => execFileSync('go', ['version', '-m', file], { encoding: 'utf8' }).replace(/^[^\n]*?: /, '');

describe.skipIf(goVersion === undefined)(`Go lister against a live go version -m (${goVersion})`, () => {
  const scratch = mkdtempSync(join(tmpdir(), 'go-lister-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** The files to compare: path on disk → what to call it. */
  const cases: [string, string][] = [
    ...readdirSync(FIXTURE_BIN).map((name): [string, string] => [join(FIXTURE_BIN, name), `fixture ${name}`]),
    ...DEBIAN_PROGRAMS.filter((p) => existsSync(p)).map((p): [string, string] => [p, `Debian ${p}`]),
  ];
  const written = (name: string, content: Buffer): [string, string] => {
    const file = join(scratch, name);
    // go version -m reads only files marked executable.
    writeFileSync(file, content, { mode: 0o755 });
    return [file, name];
  };
  cases.push(written('gofixture-amd64-without-section-headers', withoutSectionHeaders(readFileSync(join(FIXTURE_BIN, 'gofixture-amd64')))));
  for (const shape of ELF_SHAPES) {
    for (const inline of [true, false]) {
      const binary = elfWithData(shape, buildInfoBlob(shape, inline, 'go1.16.15', MODINFO));
      const name = `${shape.name.replace(/ /g, '-')}-${inline ? 'inline' : 'pointers'}`;
      cases.push(written(name, binary), written(`${name}-without-section-headers`, withoutSectionHeaders(binary)));
    }
  }

  for (const [file, name] of cases) {
    it(`lists what go version -m shows of ${name}`, () => {
      const oracle = parseGoVersionM(goVersionM(file));
      const binary = readFileSync(file);
      expect(readBuildInfo(readElf(binary)!)).toEqual(oracle);
      const { packages, unreadable } = goBinaryLister.list('bin/x', binary);
      expect(unreadable).toEqual([]);
      expect(new Set(packages.map((p) => `${p.name}@${p.version}`))).toEqual(expectedPackages(oracle));
      expect(packages.length).toBeGreaterThan(0);
    });
  }
});
