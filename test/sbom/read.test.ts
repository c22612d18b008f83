/**
 * SBOMs read into packages (src/sbom/): real documents written by npm, cyclonedx-npm and Trivy,
 * hand-written ones from the CycloneDX and SPDX specifications for OS package URLs and nesting, the
 * namespace every distribution row's and ecosystem row's package URL reads back to, and malformed
 * documents. Provenance of each fixture: test/fixtures/PROVENANCE.md.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { APPLICATION_ECOSYSTEMS, DISTRIBUTIONS, type Distribution } from '../../src/ecosystems/catalog.js';
import { packageFormat } from '../../src/ecosystems/index.js';
import { namespaceFromOsRelease } from '../../src/ecosystems/osrelease/os-release.js';
import { parseOsRelease } from '../../src/ecosystems/osrelease/parse.js';
import { TarsierError } from '../../src/errors.js';
import { packageUrl } from '../../src/scanner/purl.js';
import { MalformedSbom, readSbom, type Sbom } from '../../src/sbom/read.js';
import { validateCycloneDx } from '../helpers/report-schemas.js';

const FIXTURES = new URL('../fixtures/sbom/', import.meta.url);
const fixture = (name: string): Buffer => readFileSync(new URL(name, FIXTURES));

/** `namespace name version` per package, the way the expectations below are written. */
const packagesOf = (sbom: Sbom): string[] => sbom.packages.map((p) => `${p.namespace} ${p.name} ${p.version}`);
const skippedOf = (sbom: Sbom): string[] => sbom.skipped.map((s) => `${s.at} ${s.reason}`);

/** A CycloneDX 1.6 document of these package URLs. */
const cyclonedxOf = (...purls: string[]): string =>
  JSON.stringify({
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    components: purls.map((purl, i) => ({ type: 'library', name: `c${i}`, purl })),
  });

/** The package one package URL reads as, or why it is skipped. */
function readOne(purl: string): string {
  const sbom = readSbom(cyclonedxOf(purl));
  const [pkg] = sbom.packages;
  return pkg ? `${pkg.namespace} ${pkg.name} ${pkg.version} ${pkg.versionFormat}` : `skipped: ${sbom.skipped[0]!.reason}`;
}

/** The dependency tree npm installed (see PROVENANCE.md): 16 packages, minimist twice (1.2.0, and 0.0.8 under mkdirp). */
const NPM_PROJECT = [
  '@babel/code-frame 7.0.0',
  '@babel/helper-validator-identifier 7.29.7',
  '@babel/highlight 7.25.9',
  'ansi-styles 3.2.1',
  'chalk 2.4.2',
  'color-convert 1.9.3',
  'color-name 1.1.3',
  'escape-string-regexp 1.0.5',
  'has-flag 3.0.0',
  'js-tokens 4.0.0',
  'lodash 4.17.15',
  'minimist 0.0.8',
  'minimist 1.2.0',
  'mkdirp 0.5.1',
  'picocolors 1.1.1',
  'supports-color 5.5.0',
].map((p) => `npm ${p}`);

describe('SBOMs written by npm and cyclonedx-npm', () => {
  it.each([
    ['npm-cyclonedx-npm-6.0.1.cdx.json', 'cyclonedx', '1.6'],
    ['npm-sbom-11.19.1.cdx.json', 'cyclonedx', '1.5'],
    ['npm-sbom-11.19.1.spdx.json', 'spdx', '2.3'],
  ])('%s: every installed package, the project itself as the subject', (file, format, specVersion) => {
    const bytes = fixture(file);
    const sbom = readSbom(bytes);
    expect(sbom).toMatchObject({ name: 'npm-sbom-fixture@1.0.0', format, specVersion });
    expect(sbom.digest).toBe(`sha256:${createHash('sha256').update(bytes).digest('hex')}`);
    expect(packagesOf(sbom).sort()).toEqual(NPM_PROJECT);
    expect(sbom.packages.every((p) => p.versionFormat === 'semver')).toBe(true);
    expect(sbom.skipped).toEqual([]);
    // The scoped name joined again, the purl kept as written.
    expect(sbom.packages.find((p) => p.name === '@babel/code-frame')?.purl).toBe('pkg:npm/%40babel/code-frame@7.0.0');
  });

  it('reads components nested in components (cyclonedx-npm nests mkdirp’s own minimist)', () => {
    const doc = JSON.parse(fixture('npm-cyclonedx-npm-6.0.1.cdx.json').toString()) as {
      components: Array<{ name: string; components?: unknown[] }>;
    };
    expect(doc.components.find((c) => c.name === 'mkdirp')?.components).toHaveLength(1);
    const sbom = readSbom(fixture('npm-cyclonedx-npm-6.0.1.cdx.json'));
    expect(packagesOf(sbom)).toContain('npm minimist 0.0.8');
  });
});

describe('SBOMs written by Trivy', () => {
  it.each(['trivy-centos-7.cdx.json', 'trivy-centos-7.spdx.json'])(
    '%s: rpm packages of CentOS 7.6.1810 under centos:7, the epoch qualifier in the version',
    (file) => {
      const sbom = readSbom(fixture(file));
      expect(sbom.name).toBe('integration/testdata/fixtures/images/centos-7.tar.gz');
      expect(packagesOf(sbom)).toEqual(['centos:7 bash 4.2.46-31.el7', 'centos:7 openssl-libs 1:1.0.2k-16.el7']);
      expect(sbom.packages.every((p) => p.versionFormat === 'rpm')).toBe(true);
      // The operating-system component (the SPDX package of the same name) has no purl.
      expect(sbom.skipped).toMatchObject([{ name: 'centos', reason: 'no-purl' }]);
    },
  );

  it.each([
    ['trivy-alpine-3.16-mixed.cdx.json', 'cyclonedx', ['components[1] no-purl', 'components[6] no-purl', 'components[8] no-purl']],
    [
      'trivy-alpine-3.16-mixed.spdx.json',
      'spdx',
      ['packages[0] no-purl', 'packages[1] no-purl', 'packages[2] no-purl', 'packages[3] no-purl', 'packages[5] no-purl'],
    ],
  ])('%s: Alpine packages with a bare distro=3.16.0, and five application ecosystems', (file, format, skipped) => {
    const sbom = readSbom(fixture(file));
    expect(sbom.format).toBe(format);
    expect(packagesOf(sbom).sort()).toEqual([
      'alpine:v3.16 musl 1.2.3-r0',
      'go github.com/package-url/packageurl-go v0.1.1-0.20220203205134-d70459300c8a',
      'maven org.codehaus.mojo:child-project 1.0',
      'npm bootstrap 5.0.2',
      'packagist pear/log 1.13.1',
      'packagist pear/pear_exception v1.0.0',
    ]);
    // Trivy's operating-system and lock-file components name no package.
    expect(skippedOf(sbom)).toEqual(skipped);
  });
});

describe('hand-written SBOMs', () => {
  it('CycloneDX 1.4 of OS packages: each distro qualifier named as os-release names the release', () => {
    const sbom = readSbom(fixture('os-packages.cdx-1.4.json'));
    expect(sbom).toMatchObject({ format: 'cyclonedx', specVersion: '1.4' });
    expect(sbom.name).toBe('registry.example/debian-app@sha256:2b1f7c7d58b73eac859c395882eec49d50651244e342cd6c68a5c7809785f427');
    expect(sbom.packages.map((p) => `${p.namespace} ${p.name} ${p.version} ${p.versionFormat}`)).toEqual([
      'debian:12 openssl 3.0.11-1~deb12u2 dpkg',
      'debian:12 libc6 2.36-9+deb12u4 dpkg', // distro=debian-12.4
      'debian:12 zlib1g 1:1.2.13.dfsg-1 dpkg', // distro=bookworm
      'ubuntu:22.04 curl 7.81.0-1ubuntu1.15 dpkg',
      'rhel:9 openssl-libs 1:3.0.7-27.el9 rpm', // distro=rhel-9.4, epoch=1
      'sles:15.4 libopenssl3 3.0.8-150400.4.69.1 rpm',
      'sle-micro:5.5 libopenssl3 3.0.8-150400.4.69.1 rpm', // suse's other distribution
      'alpine:v3.18 busybox 1.36.1-r2 apk', // distro=alpine-3.18.4
      'wolfi:rolling glibc 2.38-r10 apk', // a rolling release needs no qualifier
    ]);
    expect(sbom.skipped).toEqual([
      { at: 'components[0]', name: 'debian', reason: 'no-purl', why: 'it has no package URL' },
      {
        at: 'components[10]',
        name: 'bash',
        purl: 'pkg:deb/debian/bash@5.2.15-2%2Bb2?arch=amd64',
        reason: 'unknown-release',
        why: 'it has no distro qualifier, so its distribution release is unknown',
      },
      {
        at: 'components[11]',
        name: 'bash',
        purl: 'pkg:rpm/mandriva/bash@5.2.15-1?distro=mandriva-2011',
        reason: 'unknown-distribution',
        why: 'no distribution has pkg:rpm/mandriva packages',
      },
      {
        at: 'components[12]',
        name: 'bash',
        purl: 'pkg:deb/debian/bash@5.2.15-2?distro=debian-hamm-and-eggs',
        reason: 'unknown-release',
        why: 'distro=debian-hamm-and-eggs names no release of debian Tarsier can name',
      },
      {
        at: 'components[13]',
        name: 'openssl',
        purl: 'pkg:generic/openssl@3.0.11',
        reason: 'unsupported-type',
        why: 'no ecosystem or distribution has pkg:generic packages',
      },
    ]);
  });

  it('CycloneDX 1.5 of application packages nested three deep, each named as its ecosystem matches it', () => {
    const sbom = readSbom(fixture('applications-nested.cdx-1.5.json'));
    expect(sbom).toMatchObject({ name: 'shop@2.0.0', format: 'cyclonedx', specVersion: '1.5' });
    expect(sbom.packages.map((p) => `${p.namespace} ${p.name} ${p.version} ${p.versionFormat}`)).toEqual([
      'npm express 4.17.1 semver',
      'npm @types/qs 6.9.7 semver', // components[0].components[0].components[0]
      'npm minimist 1.2.0 semver', // the purl has no version: the component's
      'pypi django-rest-framework 3.14.0 pep440', // PEP 503
      'go golang.org/x/net v0.17.0 go', // the module path; the subpath (#http2) is a package in it
      'go stdlib go1.21.3 go',
      'maven org.apache.logging.log4j:log4j-core 2.14.1 maven',
      'rubygems rails 7.0.4 gem',
      'crates.io serde 1.0.188 semver',
      'nuget newtonsoft.json 12.0.1 nuget',
      'packagist laravel/framework v10.0.0 composer',
      // express@4.17.1 again (components[12]) is the same package: listed once.
    ]);
    expect(skippedOf(sbom)).toEqual(['components[0] no-purl', 'components[9] invalid-purl', 'components[10] invalid-version']);
    expect(sbom.skipped[1]?.why).toMatch(/maven requires a "namespace" component/);
    expect(sbom.skipped[2]?.why).toBe('pkg:npm/left-pad@latest: "latest" is not a semver version');
  });

  it('SPDX 2.2: the described image is the subject; PACKAGE_MANAGER spelled either way; epochs', () => {
    const sbom = readSbom(fixture('os-packages.spdx-2.2.json'));
    expect(sbom).toMatchObject({ name: 'registry.example/rhel-app:1.0', format: 'spdx', specVersion: '2.2' });
    expect(packagesOf(sbom)).toEqual([
      'rhel:9 vim-minimal 2:8.2.2637-20.el9_1', // epoch=2, next to a CPE
      'rhel:9 bash 5.1.8-6.el9_1', // epoch=0 is no epoch, as the rpm lister writes it
      'pypi requests 2.25.1',
    ]);
    expect(skippedOf(sbom)).toEqual(['packages[3] unknown-release', 'packages[5] no-purl']);
  });

  it('takes the subject from a DESCRIBES relationship too, and a document with no packages', () => {
    const spdx = {
      spdxVersion: 'SPDX-2.3',
      SPDXID: 'SPDXRef-DOCUMENT',
      name: 'doc',
      packages: [
        {
          SPDXID: 'SPDXRef-a',
          name: 'a',
          externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: 'pkg:npm/a@1.0.0' }],
        },
        {
          SPDXID: 'SPDXRef-b',
          name: 'b',
          externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: 'pkg:npm/b@1.0.0' }],
        },
        {
          SPDXID: 'SPDXRef-c',
          name: 'c',
          externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: 'pkg:npm/c@1.0.0' }],
        },
      ],
      relationships: [
        { spdxElementId: 'SPDXRef-DOCUMENT', relationshipType: 'DESCRIBES', relatedSpdxElement: 'SPDXRef-a' },
        { spdxElementId: 'SPDXRef-b', relationshipType: 'DESCRIBED_BY', relatedSpdxElement: 'SPDXRef-DOCUMENT' },
      ],
    };
    expect(packagesOf(readSbom(JSON.stringify(spdx)))).toEqual(['npm c 1.0.0']);
    expect(readSbom('{"bomFormat":"CycloneDX","specVersion":"1.6"}')).toMatchObject({ name: undefined, packages: [], skipped: [] });
  });

  it('keeps the case the document writes of an npm name its purl lower-cases (JSONStream), and no other', () => {
    const cyclonedx = {
      bomFormat: 'CycloneDX',
      specVersion: '1.6',
      components: [
        { type: 'library', name: 'JSONStream', version: '1.3.5', purl: 'pkg:npm/jsonstream@1.3.5' },
        { type: 'library', group: '@Legacy', name: 'Parser', purl: 'pkg:npm/%40legacy/parser@2.0.0' },
        { type: 'library', name: 'Other', purl: 'pkg:npm/left-pad@1.3.0' }, // another name: the purl's
        { type: 'library', name: 'Rails', purl: 'pkg:gem/rails@7.0.4' }, // a gem purl keeps its writer's case
      ],
    };
    expect(packagesOf(readSbom(JSON.stringify(cyclonedx)))).toEqual([
      'npm JSONStream 1.3.5',
      'npm @Legacy/Parser 2.0.0',
      'npm left-pad 1.3.0',
      'rubygems rails 7.0.4',
    ]);
    const spdx = {
      spdxVersion: 'SPDX-2.3',
      SPDXID: 'SPDXRef-DOCUMENT',
      name: 'doc',
      packages: [
        {
          SPDXID: 'SPDXRef-JSONStream',
          name: 'JSONStream',
          versionInfo: '1.3.5',
          externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: 'pkg:npm/JSONStream@1.3.5' }],
        },
      ],
    };
    expect(packagesOf(readSbom(JSON.stringify(spdx)))).toEqual(['npm JSONStream 1.3.5']);
  });

  it('digests the bytes as given (a byte order mark included) and reads a string as its UTF-8 bytes', () => {
    const text = '{"bomFormat":"CycloneDX","specVersion":"1.6"}';
    const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
    expect(readSbom(text).digest).toBe(sha(Buffer.from(text)));
    expect(readSbom(Buffer.from(text)).digest).toBe(sha(Buffer.from(text)));
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]);
    expect(readSbom(withBom).digest).toBe(sha(withBom));
  });

  it('every CycloneDX fixture is valid against the CycloneDX 1.6 schema', () => {
    const files = readdirSync(FIXTURES).filter((f) => f.includes('.cdx'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const file of files) expect(validateCycloneDx(JSON.parse(fixture(file).toString())), file).toEqual([]);
  });
});

describe('package URLs read as os-release names the release', () => {
  it.each([
    ['pkg:deb/debian/openssl@3.0.11-1~deb12u2?arch=amd64&distro=debian-12', 'debian:12 openssl 3.0.11-1~deb12u2 dpkg'],
    ['pkg:deb/debian/openssl@3.0.11-1~deb12u2?distro=debian-12.4', 'debian:12 openssl 3.0.11-1~deb12u2 dpkg'],
    ['pkg:deb/debian/openssl@3.0.11-1?distro=bookworm', 'debian:12 openssl 3.0.11-1 dpkg'],
    ['pkg:deb/debian/openssl@3.1.4-2?distro=debian-sid', 'debian:unstable openssl 3.1.4-2 dpkg'],
    ['pkg:deb/ubuntu/openssl@3.0.2-0ubuntu1.10?distro=ubuntu-22.04', 'ubuntu:22.04 openssl 3.0.2-0ubuntu1.10 dpkg'],
    ['pkg:deb/ubuntu/openssl@3.0.2-0ubuntu1.10?distro=jammy', 'ubuntu:22.04 openssl 3.0.2-0ubuntu1.10 dpkg'],
    ['pkg:rpm/redhat/openssl@3.0.7-27.el9?distro=rhel-9.4', 'rhel:9 openssl 3.0.7-27.el9 rpm'],
    ['pkg:rpm/redhat/openssl@3.0.7-27.el9?distro=redhat-9.4', 'rhel:9 openssl 3.0.7-27.el9 rpm'], // Trivy's
    ['pkg:rpm/redhat/openssl@1%3A3.0.7-27.el9?distro=rhel-9', 'rhel:9 openssl 1:3.0.7-27.el9 rpm'],
    ['pkg:rpm/centos/bash@4.2.46-31.el7?distro=centos-7.6.1810', 'centos:7 bash 4.2.46-31.el7 rpm'],
    ['pkg:rpm/rocky/bash@5.1.8-6.el9_1?distro=rocky-9.3', 'rocky:9 bash 5.1.8-6.el9_1 rpm'],
    ['pkg:rpm/almalinux/bash@5.1.8-6.el9_1?distro=almalinux-9.3', 'almalinux:9 bash 5.1.8-6.el9_1 rpm'],
    ['pkg:rpm/oracle/bash@4.4.20-4.el8_6?distro=ol-8.9', 'oracle:8 bash 4.4.20-4.el8_6 rpm'],
    ['pkg:rpm/amazon/bash@5.2.15-1.amzn2023.0.2?distro=amzn-2023', 'amzn:2023 bash 5.2.15-1.amzn2023.0.2 rpm'],
    ['pkg:rpm/suse/bash@4.4-150400.27.3.2?distro=sles-15.4', 'sles:15.4 bash 4.4-150400.27.3.2 rpm'],
    ['pkg:rpm/suse/bash@4.4-150400.27.3.2?distro=sl-micro-6.0', 'sle-micro:6.0 bash 4.4-150400.27.3.2 rpm'],
    ['pkg:rpm/opensuse/bash@4.4-150400.27.3.2?distro=opensuse-leap-15.5', 'opensuse-leap:15.5 bash 4.4-150400.27.3.2 rpm'],
    ['pkg:rpm/opensuse/bash@5.2.26-1.1?distro=opensuse-tumbleweed-20240301', 'opensuse-tumbleweed:rolling bash 5.2.26-1.1 rpm'],
    ['pkg:rpm/photon/bash@5.1-4.ph5?distro=photon-5.0', 'photon:5.0 bash 5.1-4.ph5 rpm'],
    ['pkg:rpm/azurelinux/bash@5.2.15-3.azl3?distro=azurelinux-3.0', 'azurelinux:3.0 bash 5.2.15-3.azl3 rpm'],
    ['pkg:rpm/mariner/bash@5.1.8-4.cm2?distro=mariner-2.0', 'mariner:2.0 bash 5.1.8-4.cm2 rpm'],
    ['pkg:apk/alpine/busybox@1.36.1-r2?distro=alpine-3.18.4', 'alpine:v3.18 busybox 1.36.1-r2 apk'],
    ['pkg:apk/alpine/busybox@1.36.1-r2?distro=3.18.4', 'alpine:v3.18 busybox 1.36.1-r2 apk'], // Trivy's
    ['pkg:apk/alpine/busybox@1.36.1-r2?distro=alpine-3.20_alpha20240315', 'alpine:edge busybox 1.36.1-r2 apk'],
    ['pkg:apk/wolfi/busybox@1.36.1-r2?distro=wolfi-20230201', 'wolfi:rolling busybox 1.36.1-r2 apk'],
    ['pkg:apk/chainguard/busybox@1.36.1-r2', 'chainguard:rolling busybox 1.36.1-r2 apk'],
    // Skipped: why.
    ['pkg:deb/debian/openssl@3.0.11-1', 'skipped: unknown-release'],
    ['pkg:rpm/suse/bash@4.4-1?distro=suse-15.4', 'skipped: unknown-distribution'], // two distributions are suse's
    ['pkg:rpm/redhat/openssl@3.0.7-27.el9?distro=fedora-39', 'skipped: unknown-distribution'],
    ['pkg:rpm/redhat/openssl?distro=rhel-9', 'skipped: no-version'],
    ['pkg:apk/alpine/busybox@1.36.1-r2?distro=alpine-three', 'skipped: unknown-release'],
    ['pkg:oci/debian@sha256%3A2b1f7c7d58b73eac859c395882eec49d50651244e342cd6c68a5c7809785f427', 'skipped: unsupported-type'],
  ])('%s → %s', (purl, expected) => expect(readOne(purl)).toBe(expected));

  /**
   * Syft writes `distro=<ID>-<VERSION_ID>` of the image's os-release: for every os-release among the
   * fixtures that names a release, that qualifier reads as the namespace the os-release detector
   * names a layer of that image.
   */
  const osReleases = readdirSync(new URL('../fixtures/osrelease/', import.meta.url))
    .map((dir) => ({ dir, path: new URL(`../fixtures/osrelease/${dir}/etc/os-release`, import.meta.url) }))
    .filter(({ path }) => existsSync(path))
    .map(({ dir, path }) => ({ dir, fields: parseOsRelease(readFileSync(path, 'utf8')) }))
    .filter(({ fields }) => fields.VERSION_ID !== undefined && DISTRIBUTIONS.some((d) => d.osReleaseIds.includes(fields.ID ?? '')));

  it('reads such fixtures of many distributions', () => expect(osReleases.length).toBeGreaterThan(40));

  it.each(osReleases)('$dir', ({ fields }) => {
    const row = DISTRIBUTIONS.find((d) => d.osReleaseIds.includes(fields.ID!))!;
    const type = packageFormat(row.versionFormat)!.purlType;
    const version = row.versionFormat === 'apk' ? '1.0-r0' : '1.0-1';
    const purl = `pkg:${type}/${row.purl.vendor}/pkg@${version}?distro=${fields.ID}-${fields.VERSION_ID}`;
    expect(readOne(purl)).toBe(`${namespaceFromOsRelease(fields)} pkg ${version} ${row.versionFormat}`);
  });
});

describe('package URLs written by the scanner read back', () => {
  /** A namespace of each naming rule, as os-release names it. */
  const NAMESPACE_OF: Record<Distribution['naming'], (id: string) => string> = {
    major: (id) => `${id}:9`,
    version: (id) => `${id}:15.4`,
    rolling: (id) => `${id}:rolling`,
    debian: () => 'debian:12',
    ubuntu: () => 'ubuntu:22.04',
    alpine: () => 'alpine:v3.18',
  };
  const VERSION_OF: Record<string, string> = { dpkg: '1:3.0.11-1~deb12u2', rpm: '1:3.0.7-27.el9', apk: '1.36.1-r2' };

  it.each(DISTRIBUTIONS.map((d) => [d.id, d] as const))('%s', (_id, row) => {
    const pkg = {
      namespace: NAMESPACE_OF[row.naming](row.id),
      name: 'lib-foo+bar',
      version: VERSION_OF[row.versionFormat]!,
      versionFormat: row.versionFormat,
    };
    const purl = packageUrl(pkg);
    expect(readSbom(cyclonedxOf(purl)).packages).toEqual([{ purl, ...pkg }]);
  });

  /** A package of each ecosystem whose name exercises its split and spelling. */
  const APPLICATION_PACKAGES: Record<string, { name: string; version: string }> = {
    npm: { name: '@babel/core', version: '7.0.0-beta.1' },
    pypi: { name: 'zope-interface', version: '5.4.0.post1' },
    go: { name: 'golang.org/x/net', version: 'v0.0.0-20191109021931-daa7c04131f5' },
    maven: { name: 'org.apache.logging.log4j:log4j-core', version: '2.14.1' },
    rubygems: { name: 'Rails', version: '7.0.4' },
    'crates.io': { name: 'serde_json', version: '1.0.108' },
    nuget: { name: 'newtonsoft.json', version: '13.0.1' },
    packagist: { name: 'laravel/framework', version: 'v10.0.0' },
  };

  it('has a package for every ecosystem row', () =>
    expect(Object.keys(APPLICATION_PACKAGES).sort()).toEqual(APPLICATION_ECOSYSTEMS.map((e) => e.namespace).sort()));

  it.each(APPLICATION_ECOSYSTEMS.map((e) => [e.namespace, e] as const))('%s', (namespace, row) => {
    const pkg = { namespace, ...APPLICATION_PACKAGES[namespace]!, versionFormat: row.versionFormat };
    const purl = packageUrl(pkg);
    expect(readSbom(cyclonedxOf(purl)).packages).toEqual([{ purl, ...pkg }]);
  });
});

describe('malformed documents', () => {
  const cdx = (components: unknown): string => JSON.stringify({ bomFormat: 'CycloneDX', specVersion: '1.5', components });
  const spdx = (fields: object): string => JSON.stringify({ spdxVersion: 'SPDX-2.3', SPDXID: 'SPDXRef-DOCUMENT', ...fields });
  const purlRef = (locator: unknown) => ({ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: locator });

  it.each([
    ['not JSON', 'lodash 4.17.15', undefined, /^the document is not JSON: Tarsier reads CycloneDX 1.4–1.6 and SPDX 2.2\/2.3 JSON/],
    ['CycloneDX XML', '<?xml version="1.0"?><bom xmlns="http://cyclonedx.org/schema/bom/1.5"/>', undefined, /^the document is XML/],
    ['SPDX tag-value', 'SPDXVersion: SPDX-2.3\nDataLicense: CC0-1.0\n', undefined, /^the document is SPDX tag-value/],
    ['a JSON array', '[]', undefined, /not a JSON object/],
    ['neither format', '{"name":"x"}', undefined, /neither bomFormat \(CycloneDX\) nor spdxVersion \(SPDX\)/],
    ['another bomFormat', '{"bomFormat":"SWID"}', 'bomFormat', /^bomFormat is "SWID", not "CycloneDX"$/],
    ['CycloneDX 1.3', '{"bomFormat":"CycloneDX","specVersion":"1.3"}', 'specVersion', /^specVersion "1.3" is not read/],
    ['SPDX 2.1', '{"spdxVersion":"SPDX-2.1"}', 'spdxVersion', /^spdxVersion "SPDX-2.1" is not read/],
    ['components an object', cdx({}), 'components', /^components is not an array$/],
    ['a component a string', cdx(['lodash']), 'components[0]', /^components\[0\] is not an object$/],
    [
      'a purl without pkg:',
      cdx([{}, {}, {}, { name: 'lodash', purl: 'npm/lodash@4.17.15' }]),
      'components[3].purl',
      /^components\[3\]\.purl is not a package URL \("npm\/lodash@4.17.15": .*"pkg" scheme/,
    ],
    [
      'a nested purl a number',
      cdx([{ components: [{}, { purl: 42 }] }]),
      'components[0].components[1].purl',
      /^components\[0\]\.components\[1\]\.purl is not a string$/,
    ],
    [
      'metadata.component a list',
      '{"bomFormat":"CycloneDX","specVersion":"1.6","metadata":{"component":[]}}',
      'metadata.component',
      /is not an object/,
    ],
    ['packages an object', spdx({ packages: {} }), 'packages', /^packages is not an array$/],
    [
      'a purl reference no purl',
      spdx({ packages: [{}, { externalRefs: [purlRef('cpe:2.3:a:x:y:1')] }] }),
      'packages[1].externalRefs[0].referenceLocator',
      /^packages\[1\]\.externalRefs\[0\]\.referenceLocator is not a package URL/,
    ],
    [
      'a purl reference without a locator',
      spdx({ packages: [{ externalRefs: [purlRef(undefined)] }] }),
      'packages[0].externalRefs[0].referenceLocator',
      /is not a package URL$/,
    ],
    ['documentDescribes a number', spdx({ documentDescribes: [7] }), 'documentDescribes[0]', /^documentDescribes\[0\] is not a string$/],
  ])('%s', (_what, text, field, message) => {
    let error: unknown;
    try {
      readSbom(text);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(MalformedSbom);
    expect(error).toBeInstanceOf(TarsierError);
    expect(error).toMatchObject({ code: 'bad_request', field });
    expect((error as Error).message).toMatch(message);
  });
});
