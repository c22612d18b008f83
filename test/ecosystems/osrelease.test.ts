import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { LayerFiles, NamespaceDetector } from '../../src/model/indexing.js';
import { alpineReleaseDetector } from '../../src/ecosystems/osrelease/alpine-release.js';
import { aptSourcesDetector } from '../../src/ecosystems/osrelease/apt-sources.js';
import { NAMESPACE_DETECTORS } from '../../src/ecosystems/osrelease/detectors.js';
import { lsbReleaseDetector } from '../../src/ecosystems/osrelease/lsb-release.js';
import { osReleaseDetector } from '../../src/ecosystems/osrelease/os-release.js';
import { parseOsRelease } from '../../src/ecosystems/osrelease/parse.js';
import { namespaceFromReleaseLine, redhatReleaseDetector } from '../../src/ecosystems/osrelease/redhat-release.js';

const fixtures = fileURLToPath(new URL('../fixtures/osrelease/', import.meta.url));

/** Every regular file under dir, by path relative to dir. */
function walk(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/** A layer as the indexer hands it over: only the files some detector wants. */
function layer(entries: Record<string, string | Buffer>): LayerFiles {
  return new Map(
    Object.entries(entries)
      .filter(([path]) => NAMESPACE_DETECTORS.some((detector) => detector.wants(path)))
      .map(([path, content]) => [path, Buffer.from(content)]),
  );
}

function layerFromDirectory(dir: string): LayerFiles {
  return layer(Object.fromEntries(walk(dir).map((path) => [path, readFileSync(join(dir, path))])));
}

/** What the indexer does: the first detector, in precedence order, that names a namespace. */
function detect(files: LayerFiles): string | undefined {
  for (const detector of NAMESPACE_DETECTORS) {
    const namespace = detector.detect(files);
    if (namespace !== undefined) return namespace;
  }
  return undefined;
}

describe('parseOsRelease', () => {
  const cases = walk(fixtures)
    .filter((path) => path.endsWith('expected-parsed.json'))
    .map((path) => join(fixtures, path, '..'));

  it('has the parse cases', () => {
    expect(cases.length).toBe(11);
  });

  for (const dir of cases) {
    it(`parses ${relative(fixtures, dir)}`, () => {
      const input = walk(dir).find((path) => path.endsWith('os-release'));
      expect(input).toBeDefined();
      const parsed = parseOsRelease(readFileSync(join(dir, input ?? ''), 'utf8'));
      expect(parsed).toEqual(JSON.parse(readFileSync(join(dir, 'expected-parsed.json'), 'utf8')));
    });
  }

  it('follows shell quoting', () => {
    const text = [
      `SINGLE='a "b" \\c'`,
      'DOUBLE="a \\"b\\" \\\\ \\$x \\`y\\` \\n"',
      'BARE=a\\ b',
      'MIXED="a"\'b\'c',
      'OPEN="runs to the end',
    ].join('\n');
    expect(parseOsRelease(text)).toEqual({
      SINGLE: 'a "b" \\c',
      DOUBLE: 'a "b" \\ $x `y` \\n',
      BARE: 'a b',
      MIXED: 'abc',
      OPEN: 'runs to the end',
    });
  });

  it('skips comments, blank lines and lines that are not assignments; the last assignment wins', () => {
    const text = '# ID=commented\r\n\r\nID=first\r\nnot an assignment\r\n=nokey\r\n1KEY=bad\r\nID = second \r\n';
    expect(parseOsRelease(text)).toEqual({ ID: 'second' });
  });

  it('keeps a __proto__ key as data', () => {
    const parsed = parseOsRelease('__proto__=x\nID=debian');
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.keys(parsed)).toEqual(['__proto__', 'ID']);
  });

  it('never throws on bytes that are not UTF-8', () => {
    expect(parseOsRelease(Buffer.from([0x49, 0x44, 0x3d, 0xff, 0xfe, 0x0a]).toString('utf8')).ID).toBe('\ufffd\ufffd');
  });
});

/**
 * One row per directory under test/fixtures/osrelease, decided by reading its files. Directories
 * that expect undefined hold distributions Tarsier has no advisories for, or (centos-6) only a file
 * no detector reads (etc/system-release-cpe).
 */
const EXPECTED: Readonly<Record<string, string | undefined>> = {
  'alma-10': 'almalinux:10',
  'alma-8.4': 'almalinux:8',
  'alma-9.4': 'almalinux:9',
  'alpine-3.10': 'alpine:v3.10',
  'alpine-3.11': 'alpine:v3.11',
  'alpine-3.11.6': 'alpine:v3.11', // etc/alpine-release only
  'alpine-3.12': 'alpine:v3.12',
  'alpine-3.13': 'alpine:v3.13',
  'alpine-3.14': 'alpine:v3.14',
  'alpine-3.15': 'alpine:v3.15',
  'alpine-3.16': 'alpine:v3.16',
  'alpine-3.17': 'alpine:v3.17',
  'alpine-3.18': 'alpine:v3.18',
  'alpine-3.23': 'alpine:v3.23',
  'alpine-3.3': 'alpine:v3.3',
  'alpine-3.4': 'alpine:v3.4',
  'alpine-3.5': 'alpine:v3.5',
  'alpine-3.6': 'alpine:v3.6',
  'alpine-3.7': 'alpine:v3.7',
  'alpine-3.8': 'alpine:v3.8',
  'alpine-3.9': 'alpine:v3.9',
  'alpine-edge': 'alpine:edge', // VERSION_ID=3.19_alpha20230901
  'alpine-edge-3.22': 'alpine:edge', // VERSION_ID=3.22.0_alpha20250108
  'amazon-2': 'amzn:2',
  'amazon-2014.03': 'amzn:2014.03', // etc/system-release only
  'amazon-2016.03': 'amzn:2016.03',
  'amazon-2023': 'amzn:2023',
  'azurelinux-3.0': 'azurelinux:3.0',
  'centos-5': 'centos:5', // etc/redhat-release only
  'centos-6': undefined, // etc/system-release-cpe only
  'centos-7': 'centos:7',
  'centos-7.6': 'centos:7', // etc/centos-release only
  'centos-8': 'centos:8', // usr/lib/os-release only
  'centos-stream-10': 'centos:10',
  'centos-stream-8': 'centos:8',
  'centos-stream-9': 'centos:9',
  chainguard: 'chainguard:rolling',
  'debian-10': 'debian:10',
  'debian-11': 'debian:11',
  'debian-12': 'debian:12',
  'debian-13': 'debian:13',
  'debian-7': 'debian:7',
  'debian-8': 'debian:8',
  'debian-9': 'debian:9',
  'debian-sid': 'debian:13', // no VERSION_ID; VERSION_CODENAME=trixie, PRETTY_NAME "trixie/sid"
  'debian-testing': 'debian:12', // no VERSION_ID; VERSION_CODENAME=bookworm
  'distroless-debian-10': 'debian:10',
  'distroless-debian-10.8': 'debian:10', // os-release without version; etc/debian_version 10.8
  'distroless-debian-11': 'debian:11',
  'distroless-debian-12': 'debian:12',
  'distroless-debian-9': 'debian:9',
  'fedora-29': 'fedora:29', // etc/fedora-release only
  'fedora-31': 'fedora:31',
  'fedora-42': 'fedora:42',
  'fedora-42-container': 'fedora:42',
  hummingbird: undefined,
  'mariner-2.0': 'mariner:2.0',
  'opensuse-leap-15.2': 'opensuse-leap:15.2',
  'opensuse-leap-42.3': 'opensuse-leap:42.3', // ID=opensuse, PRETTY_NAME "openSUSE Leap 42.3"
  'opensuse-tumbleweed': 'opensuse-tumbleweed:rolling',
  'oracle-6': 'oracle:6', // oracle-release beats the redhat-release that names RHEL
  'oracle-7': 'oracle:7',
  'oracle-7.5': 'oracle:7', // ID=ol
  'oracle-8': 'oracle:8',
  'oracle-8.10': 'oracle:8',
  'oracle-8.3': 'oracle:8',
  'oracle-9': 'oracle:9',
  'photon-2.0': 'photon:2.0',
  'photon-4.0': 'photon:4.0',
  'rhel-10': 'rhel:10',
  'rhel-6': 'rhel:6', // etc/redhat-release only
  'rhel-7': 'rhel:7', // os-release 7.7, redhat-release 7.4
  'rhel-8': 'rhel:8',
  'rhel-9': 'rhel:9',
  'rhel-9.4': 'rhel:9',
  'rhel-9.6': 'rhel:9',
  'rhel-atomichost-7': 'rhel:7',
  'rocky-10': 'rocky:10',
  'rocky-8.4': 'rocky:8',
  'rocky-9.3': 'rocky:9',
  'scientific-6': undefined,
  'scientific-7.5': undefined,
  'sle-micro-5.3': 'sle-micro:5.3',
  'sles-12.1': 'sles:12.1',
  'sles-15.2': 'sles:15.2',
  'sles-15.3': 'sles:15.3',
  'ubi-8': 'rhel:8',
  'ubuntu-10.04': 'ubuntu:10.04', // etc/lsb-release only
  'ubuntu-12.04': 'ubuntu:12.04',
  'ubuntu-12.10': 'ubuntu:12.10',
  'ubuntu-13.04': 'ubuntu:13.04',
  'ubuntu-13.10': 'ubuntu:13.10',
  'ubuntu-14.04': 'ubuntu:14.04',
  'ubuntu-14.10': 'ubuntu:14.10',
  'ubuntu-15.04': 'ubuntu:15.04',
  'ubuntu-15.10': 'ubuntu:15.10',
  'ubuntu-16.04': 'ubuntu:16.04',
  'ubuntu-16.10': 'ubuntu:16.10',
  'ubuntu-17.04': 'ubuntu:17.04',
  'ubuntu-17.10': 'ubuntu:17.10',
  'ubuntu-18.04': 'ubuntu:18.04',
  'ubuntu-18.10': 'ubuntu:18.10',
  'ubuntu-19.04': 'ubuntu:19.04',
  'ubuntu-19.10': 'ubuntu:19.10',
  'ubuntu-20.04': 'ubuntu:20.04',
  'ubuntu-20.10': 'ubuntu:20.10',
  'ubuntu-21.04': 'ubuntu:21.04',
  'ubuntu-21.10': 'ubuntu:21.10',
  'ubuntu-22.04': 'ubuntu:22.04',
  'ubuntu-22.10': 'ubuntu:22.10',
  'ubuntu-23.04': 'ubuntu:23.04',
  'ubuntu-23.10': 'ubuntu:23.10',
  'ubuntu-24.04': 'ubuntu:24.04', // etc/debian_version says trixie/sid: not read for Ubuntu
  'ubuntu-25.04': 'ubuntu:25.04',
  wolfi: 'wolfi:rolling',
};

describe('namespace detection of every fixture distribution', () => {
  const directories = readdirSync(fixtures).filter((name) => name !== 'parse-cases');

  it('has one expectation per directory', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(directories.sort());
  });

  for (const dir of directories) {
    it(`${dir} → ${EXPECTED[dir] ?? 'undefined'}`, () => {
      expect(detect(layerFromDirectory(join(fixtures, dir)))).toBe(EXPECTED[dir]);
    });
  }
});

const UBUNTU_22_OS_RELEASE = 'ID=ubuntu\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\n';
const DEBIAN_12_OS_RELEASE = 'ID=debian\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\n';

describe('precedence', () => {
  it('lists the detectors in order', () => {
    expect(NAMESPACE_DETECTORS.map((d) => d.name)).toEqual([
      'suse-products',
      'os-release',
      'lsb-release',
      'alpine-release',
      'redhat-release',
      'apt-sources',
    ]);
  });

  it('os-release beats lsb-release, which beats apt sources', () => {
    const lsb = 'DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=20.04\n';
    const apt = 'deb http://archive.ubuntu.com/ubuntu/ bionic main\n';
    const all = { 'etc/os-release': UBUNTU_22_OS_RELEASE, 'etc/lsb-release': lsb, 'etc/apt/sources.list': apt };
    expect(detect(layer(all))).toBe('ubuntu:22.04');
    expect(detect(layer({ 'etc/lsb-release': lsb, 'etc/apt/sources.list': apt }))).toBe('ubuntu:20.04');
    expect(detect(layer({ 'etc/apt/sources.list': apt }))).toBe('ubuntu:18.04');
  });

  it('etc/os-release beats usr/lib/os-release', () => {
    const files = layer({ 'etc/os-release': UBUNTU_22_OS_RELEASE, 'usr/lib/os-release': DEBIAN_12_OS_RELEASE });
    expect(detect(files)).toBe('ubuntu:22.04');
  });

  it('an empty etc/os-release (a link out of the layer) falls back to usr/lib/os-release', () => {
    expect(detect(layer({ 'etc/os-release': '', 'usr/lib/os-release': DEBIAN_12_OS_RELEASE }))).toBe('debian:12');
  });

  it('os-release beats a redhat-release that disagrees', () => {
    const files = layer({
      'etc/os-release': 'ID="rhel"\nVERSION_ID="9.4"\n',
      'etc/redhat-release': 'CentOS Linux release 7.9.2009 (Core)\n',
    });
    expect(detect(files)).toBe('rhel:9');
  });

  it('a lone etc/redhat-release is read, as on CentOS 7 images where it is a regular file', () => {
    expect(detect(layer({ 'etc/redhat-release': 'CentOS Linux release 7.9.2009 (Core)\n' }))).toBe('centos:7');
  });

  it('oracle-release beats the redhat-release Oracle Linux fills with Red Hat text', () => {
    const files = layer({
      'etc/redhat-release': 'Red Hat Enterprise Linux Server release 7.9 (Maipo)\n',
      'etc/oracle-release': 'Oracle Linux Server release 7.9\n',
    });
    expect(detect(files)).toBe('oracle:7');
  });

  it('an os-release naming an unsupported distribution lets the next detectors speak', () => {
    const files = layer({
      'etc/os-release': 'ID=linuxmint\nVERSION_ID="21.3"\nID_LIKE="ubuntu debian"\n',
      'etc/apt/sources.list.d/official-package-repositories.list': 'deb http://archive.ubuntu.com/ubuntu jammy main\n',
    });
    expect(detect(files)).toBe('ubuntu:22.04');
  });

  it('alpine-release beats apt sources', () => {
    const files = layer({ 'etc/alpine-release': '3.19.1\n', 'etc/apt/sources.list': 'deb http://x bookworm main\n' });
    expect(detect(files)).toBe('alpine:v3.19');
  });

  it('detects nothing in a layer without release files', () => {
    expect(detect(layer({ 'etc/passwd': 'root:x:0:0::/root:/bin/sh\n' }))).toBeUndefined();
  });
});

describe('os-release detector', () => {
  const detectOsRelease = (text: string, extra: Record<string, string> = {}): string | undefined =>
    osReleaseDetector.detect(layer({ 'etc/os-release': text, ...extra }));

  it('wants both os-release locations and debian_version', () => {
    expect(['etc/os-release', 'usr/lib/os-release', 'etc/debian_version'].every(osReleaseDetector.wants)).toBe(true);
    expect(osReleaseDetector.wants('usr/etc/os-release')).toBe(false);
    expect(osReleaseDetector.wants('etc/os-release.d/x')).toBe(false);
  });

  it.each([
    ['ID=debian\nVERSION_ID="12"', 'debian:12'],
    ['ID=debian\nVERSION_CODENAME=sid', 'debian:unstable'],
    ['ID=debian\nPRETTY_NAME="Debian GNU/Linux forky/sid"', 'debian:14'],
    ['ID=ubuntu\nVERSION_ID="24.04"', 'ubuntu:24.04'],
    ['ID=ubuntu\nVERSION_CODENAME=noble', 'ubuntu:24.04'],
    ['ID=alpine\nVERSION_ID=3.19.1', 'alpine:v3.19'],
    ['ID="rhel"\nVERSION_ID="9.4"', 'rhel:9'],
    ['ID="centos"\nVERSION_ID="7"', 'centos:7'],
    ['ID="rocky"\nVERSION_ID="9.3"', 'rocky:9'],
    ['ID="almalinux"\nVERSION_ID="9.4"', 'almalinux:9'],
    ['ID="ol"\nVERSION_ID="8.10"', 'oracle:8'],
    ['ID="amzn"\nVERSION_ID="2"', 'amzn:2'],
    ['ID="amzn"\nVERSION_ID="2023"', 'amzn:2023'],
    ['ID="amzn"\nVERSION_ID="2018.03"', 'amzn:2018.03'],
    ['ID=fedora\nVERSION_ID=39', 'fedora:39'],
    ['ID="sles"\nVERSION_ID="15.5"', 'sles:15.5'],
    ['ID="opensuse-leap"\nVERSION_ID="15.5"', 'opensuse-leap:15.5'],
    ['ID="opensuse-tumbleweed"\nVERSION_ID="20240101"', 'opensuse-tumbleweed:rolling'],
    ['ID=wolfi\nVERSION_ID="20230201"', 'wolfi:rolling'],
    ['ID=chainguard', 'chainguard:rolling'],
    ['ID=photon\nVERSION_ID=5.0', 'photon:5.0'],
    ['ID=mariner\nVERSION_ID="2.0"', 'mariner:2.0'],
    ['ID=azurelinux\nVERSION_ID="3.0"', 'azurelinux:3.0'],
    ['ID="sl-micro"\nVERSION_ID="6.0"', 'sle-micro:6.0'],
    ['ID=Debian\nVERSION_ID=11', 'debian:11'],
  ])('%j → %s', (text, expected) => {
    expect(detectOsRelease(text)).toBe(expected);
  });

  it.each([
    ['ID=debian'],
    ['ID=ubuntu'],
    ['ID=alpine\nVERSION_ID=garbage'],
    ['ID="rhel"\nVERSION_ID="nine"'],
    ['ID=opensuse\nVERSION_ID=13.2\nPRETTY_NAME="openSUSE 13.2 (Harlequin)"'],
    ['VERSION_ID=12'],
  ])('%j → undefined', (text) => {
    expect(detectOsRelease(text)).toBeUndefined();
  });

  it('reads etc/debian_version only when Debian os-release has no version', () => {
    expect(detectOsRelease('ID=debian', { 'etc/debian_version': '11.9\n' })).toBe('debian:11');
    expect(detectOsRelease('ID=debian', { 'etc/debian_version': 'trixie/sid\n' })).toBe('debian:13');
    expect(detectOsRelease('ID=debian\nVERSION_ID=12', { 'etc/debian_version': '11.9\n' })).toBe('debian:12');
    expect(detectOsRelease('ID=ubuntu\nVERSION_ID=24.04', { 'etc/debian_version': 'trixie/sid\n' })).toBe('ubuntu:24.04');
  });
});

describe('lsb-release detector', () => {
  const detectLsb = (text: string): string | undefined => lsbReleaseDetector.detect(layer({ 'etc/lsb-release': text }));

  it('names Ubuntu X.Y and Debian by major release, as Clair does', () => {
    expect(detectLsb('DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=12.04\nDISTRIB_CODENAME=precise\n')).toBe('ubuntu:12.04');
    expect(detectLsb('DISTRIB_ID=Debian\nDISTRIB_RELEASE=7.1\n')).toBe('debian:7');
    expect(detectLsb('DISTRIB_ID="Ubuntu"\nDISTRIB_CODENAME=noble\n')).toBe('ubuntu:24.04');
  });

  it('ignores other distributions', () => {
    expect(detectLsb('DISTRIB_ID=LinuxMint\nDISTRIB_RELEASE=21.3\n')).toBeUndefined();
    expect(lsbReleaseDetector.detect(new Map())).toBeUndefined();
  });
});

describe('alpine-release detector', () => {
  const detectAlpine = (text: string): string | undefined => alpineReleaseDetector.detect(layer({ 'etc/alpine-release': text }));

  it.each([
    ['3.3.4\n', 'alpine:v3.3'],
    ['0.3.4', 'alpine:v0.3'],
    ['3.19.1\r\n', 'alpine:v3.19'],
    ['3.20_alpha20240101\n', 'alpine:edge'],
    ['edge\n', 'alpine:edge'],
  ])('%j → %s', (text, expected) => {
    expect(detectAlpine(text)).toBe(expected);
  });

  it('ignores text that is no release', () => {
    expect(detectAlpine('')).toBeUndefined();
    expect(detectAlpine('three\n3.19.1\n')).toBeUndefined();
  });
});

describe('redhat-release detector', () => {
  // Clair's test lines (ext/featurens/redhatrelease), with RHEL named rhel:N instead of centos:N.
  it.each([
    ['Amazon Linux release 2 (Karoo)', 'amzn:2'],
    ['Amazon Linux release 2023 (Amazon Linux)', 'amzn:2023'],
    ['Amazon Linux AMI release 2018.03', 'amzn:2018.03'],
    ['Amazon Linux release 2023.3.20240219 (Amazon Linux)', 'amzn:2023'],
    ['Oracle Linux Server release 6.8', 'oracle:6'],
    ['CentOS release 6.6 (Final)', 'centos:6'],
    ['CentOS Linux release 7.1.1503 (Core)', 'centos:7'],
    ['CentOS Stream release 9', 'centos:9'],
    ['Red Hat Enterprise Linux Server release 7.2 (Maipo)', 'rhel:7'],
    ['Red Hat Enterprise Linux release 8.0 (Ootpa)', 'rhel:8'],
    ['Red Hat Enterprise Linux Atomic Host release 7.9', 'rhel:7'],
    ['Rocky Linux release 9.3 (Blue Onyx)', 'rocky:9'],
    ['AlmaLinux release 9.4 (Seafoam Ocelot)', 'almalinux:9'],
    ['Fedora release 39 (Thirty Nine)', 'fedora:39'],
    ['Scientific Linux release 6.10 (Carbon)', undefined],
    ['', undefined],
  ])('%j → %s', (line, expected) => {
    expect(namespaceFromReleaseLine(line)).toBe(expected);
  });

  it('wants the release files of the family', () => {
    const distributions = ['oracle', 'centos', 'redhat', 'system', 'almalinux', 'rocky', 'fedora'];
    const paths = distributions.map((d) => `etc/${d}-release`);
    expect(paths.every(redhatReleaseDetector.wants)).toBe(true);
    expect(redhatReleaseDetector.wants('etc/system-release-cpe')).toBe(false);
  });

  it('skips a file that names nothing and reads the next', () => {
    const files = layer({ 'etc/redhat-release': '', 'etc/system-release': 'Amazon Linux release 2 (Karoo)\n' });
    expect(redhatReleaseDetector.detect(files)).toBe('amzn:2');
  });
});

describe('apt-sources detector', () => {
  const detectApt = (entries: Record<string, string>): string | undefined => aptSourcesDetector.detect(layer(entries));

  it('wants sources.list and the .list and .sources files beside it', () => {
    const detector: NamespaceDetector = aptSourcesDetector;
    expect(detector.wants('etc/apt/sources.list')).toBe(true);
    expect(detector.wants('etc/apt/sources.list.d/debian.sources')).toBe(true);
    expect(detector.wants('etc/apt/sources.list.d/docker.list')).toBe(true);
    expect(detector.wants('etc/apt/sources.list.d/docker.list.save')).toBe(false);
    expect(detector.wants('etc/apt/sources.list.d/sub/x.list')).toBe(false);
    expect(detector.wants('etc/apt/sources.list~')).toBe(false);
  });

  it('reads the one-line format (Clair test: unstable → debian:unstable)', () => {
    expect(detectApt({ 'etc/apt/sources.list': 'deb http://httpredir.debian.org/debian unstable main\n' })).toBe('debian:unstable');
  });

  it('skips comments, options, class names and unknown suites; strips pocket suffixes', () => {
    const list = [
      '# deb http://deb.debian.org/debian buster main',
      'deb http://example.com/repo stable main',
      'deb-src [arch=amd64 signed-by=/etc/k.gpg] http://deb.debian.org/debian-security bullseye-security main',
    ].join('\n');
    expect(detectApt({ 'etc/apt/sources.list': list })).toBe('debian:11');
    expect(detectApt({ 'etc/apt/sources.list': 'deb http://security.debian.org/ jessie/updates main\n' })).toBe('debian:8');
    expect(detectApt({ 'etc/apt/sources.list': 'deb http://archive.ubuntu.com/ubuntu/ focal-updates main\n' })).toBe('ubuntu:20.04');
    expect(detectApt({ 'etc/apt/sources.list': 'deb http://example.com/repo testing main\n' })).toBeUndefined();
  });

  it('reads deb822 .sources files, skipping disabled paragraphs', () => {
    const sources = [
      'Types: deb',
      'URIs: http://deb.debian.org/debian',
      'Suites: buster',
      'Enabled: no',
      '',
      'Types: deb deb-src',
      'URIs: http://deb.debian.org/debian',
      'Suites: bookworm bookworm-updates',
      'Components: main',
      'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg',
    ].join('\n');
    expect(detectApt({ 'etc/apt/sources.list.d/debian.sources': sources })).toBe('debian:12');
    expect(detectApt({ 'etc/apt/sources.list.d/ubuntu.sources': 'Types: deb\nSuites: noble noble-updates\n' })).toBe('ubuntu:24.04');
  });

  it('reads sources.list first, then sources.list.d in name order', () => {
    const parts = {
      'etc/apt/sources.list.d/b.list': 'deb http://x bullseye main\n',
      'etc/apt/sources.list.d/a.sources': 'Types: deb\nSuites: buster\n',
    };
    expect(detectApt(parts)).toBe('debian:10');
    expect(detectApt({ ...parts, 'etc/apt/sources.list': 'deb http://x bookworm main\n' })).toBe('debian:12');
  });
});
