/**
 * The rpm family's advisories end to end, on the real feed excerpts of test/fixtures/feeds: each
 * served in its upstream layout from a local HTTP server and read by the real updater, then layers
 * of rpm databases built here (the packages just below, at and above each fix, for the
 * architectures the advisories name or not) indexed through the v1 API, and each package's
 * vulnerabilities and FixedBy asserted.
 *
 * - Several fixes of one package in one record are alternatives (OVAL's reading of several
 *   definitions, Photon's rows): affected below the highest, which is the FixedBy.
 * - An advisory limited to some architectures (Red Hat's arch patterns, Amazon's package lists)
 *   does not affect a package of another one; a noarch package is matched by entries for every
 *   architecture; a multilib package is affected when one of its copies is.
 * - Microsoft's `greater than` and `less than or equal` bounds, Photon's "Fixed" without a version
 *   and its non-CVE ids.
 * - SUSE's products: a service pack's LTSS variant applies only where its release package is
 *   installed, and there together with the service pack's own entries.
 */
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { layerTar } from '../helpers/image-archives.js';
import { ndbDatabase, rpmHeader, type HeaderSpec } from '../helpers/rpmdb.js';
import { amazonRepositories, indexLayer, layerVulnerabilities, updaterFor } from '../helpers/source-runs.js';

const fixture = (path: string): Buffer => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));

/** A layer: a distribution's os-release over an rpm database holding these packages. */
const rpmLayer = (osRelease: string, packages: readonly HeaderSpec[]): Buffer =>
  layerTar({
    'etc/os-release': fixture(`osrelease/${osRelease}/etc/os-release`),
    'var/lib/rpm/Packages.db': ndbDatabase(packages.map(rpmHeader)),
  });

/** The same vulnerabilities for a package at each of these versions, as vulnerable() gives them. */
const eachVersion = (name: string, versions: readonly string[], vulnerabilities: string[]): Record<string, string[]> =>
  Object.fromEntries(versions.map((version) => [`${name} ${version}`, vulnerabilities]));

/** The packages of names at one version and architecture. */
const each = (names: readonly string[], spec: Omit<HeaderSpec, 'name'>): HeaderSpec[] => names.map((name) => ({ name, ...spec }));

/** A server and a feed server holding files (path → content, given its URLs), after one run of a source reading them under base. */
async function afterRun(
  source: string,
  base: string,
  files: (server: FeedServer) => Record<string, Buffer | string>,
): Promise<{ t: TestApp; server: FeedServer }> {
  const t = await testApp();
  const server = await startFeedServer();
  for (const [path, content] of Object.entries(files(server))) server.put(path, content);
  const summary = await updaterFor(t.pool, source, server.url(base))();
  expect(summary.error).toBeUndefined();
  expect(summary.status).toBe('updated');
  return { t, server };
}

describe('Red Hat OVAL (RHSA-2020:1980, git, RHEL 8)', () => {
  const ARCH_DEPENDENT = ['git', 'git-core', 'git-daemon', 'git-debugsource', 'git-instaweb', 'git-subtree', 'git-svn'];

  it('does not match i686 packages against states limited to aarch64|ppc64le|s390x|x86_64; matches x86_64, multilib and noarch ones', async () => {
    // The single-advisory OVAL file in the place of the RHEL 8 stream (compression is sniffed).
    const { t, server } = await afterRun('rhel', '/rhel/', () => ({
      '/rhel/RHEL8/rhel-8-including-unpatched.oval.xml.bz2': fixture('feeds/redhat/oval/com.redhat.rhsa-20201980.xml'),
    }));

    const installed = { version: '2.18.4', release: '1.el8_2' };
    await indexLayer(
      t,
      server,
      'rhel8-i686',
      rpmLayer('rhel-8', [...each(ARCH_DEPENDENT, { ...installed, arch: 'i686' }), { name: 'perl-Git', ...installed, arch: 'noarch' }]),
    );
    await indexLayer(
      t,
      server,
      'rhel8-x86_64',
      rpmLayer('rhel-8', [
        ...each(['git', 'git-daemon'], { ...installed, arch: 'x86_64' }),
        // Both copies of a multilib package: one feature, affected through its x86_64 copy.
        ...each(['git-core'], { ...installed, arch: 'x86_64' }),
        ...each(['git-core'], { ...installed, arch: 'i686' }),
        ...each(['git-svn'], { version: '2.18.4', release: '2.el8_2', arch: 'x86_64' }),
      ]),
    );

    const rhsa = ['RHSA-2020:1980 0:2.18.4-2.el8_2'];
    expect(await layerVulnerabilities(t, 'rhel8-i686')).toEqual({ 'perl-Git 2.18.4-1.el8_2': rhsa });
    expect(await layerVulnerabilities(t, 'rhel8-x86_64')).toEqual({
      'git 2.18.4-1.el8_2': rhsa,
      'git-core 2.18.4-1.el8_2': rhsa,
      'git-daemon 2.18.4-1.el8_2': rhsa,
    });
  });
});

describe('Amazon Linux 2 updateinfo (ALAS2-2018-939, ALAS2-2018-942)', () => {
  it('does not match an i686 qemu against a package list for x86_64 only; matches the x86_64 one and the noarch kernel-doc', async () => {
    const { t, server } = await afterRun('amzn', '/amzn/', (feeds) =>
      amazonRepositories(feeds, fixture('feeds/amazon/repomd.xml'), fixture('feeds/amazon/alas2-updateinfo-excerpt.xml')),
    );

    const QEMU = ['qemu-kvm', 'qemu-img', 'qemu-kvm-common', 'qemu-kvm-tools', 'qemu-kvm-debuginfo'];
    const qemu = { epoch: 10, version: '1.5.3', release: '140.amzn2.5.3' };
    await indexLayer(t, server, 'al2-i686', rpmLayer('amazon-2', each(QEMU, { ...qemu, arch: 'i686' })));
    await indexLayer(
      t,
      server,
      'al2-x86_64',
      rpmLayer('amazon-2', [
        ...each(QEMU, { ...qemu, arch: 'x86_64' }),
        { name: 'kernel-doc', version: '4.9.76', release: '38.78.amzn2', arch: 'noarch' },
        // kernel-headers is listed for x86_64 only: its i686 build is not affected.
        { name: 'kernel-headers', version: '4.9.76', release: '38.78.amzn2', arch: 'i686' },
      ]),
    );

    expect(await layerVulnerabilities(t, 'al2-i686')).toEqual({});
    const alas942 = ['ALAS2-2018-942 10:1.5.3-141.amzn2.5.3'];
    expect(await layerVulnerabilities(t, 'al2-x86_64')).toEqual({
      ...Object.fromEntries(QEMU.map((name) => [`${name} 10:1.5.3-140.amzn2.5.3`, alas942])),
      'kernel-doc 4.9.76-38.78.amzn2': ['ALAS2-2018-939 4.9.76-38.79.amzn2'],
    });
  });
});

describe("Microsoft's OVAL (Azure Linux 3.0, CBL-Mariner 2.0)", () => {
  it('reports below the higher of two fixes, and honours greater-than and less-than-or-equal bounds', async () => {
    const { t, server } = await afterRun('azurelinux', '/azl/', () => ({
      '/azl/azurelinux-3.0-oval.xml': fixture('feeds/azurelinux/azurelinux-3.0-oval-excerpt.xml'),
      '/azl/cbl-mariner-2.0-oval.xml': fixture('feeds/azurelinux/cbl-mariner-2.0-oval-excerpt.xml'),
    }));

    // Azure Linux advisories name source packages: the binaries carry their SOURCERPM.
    const built = (name: string, source: string, version: string, release: string): HeaderSpec => ({
      name,
      version,
      release,
      arch: 'x86_64',
      sourceRpm: `${source}-${version}-${release}.src.rpm`,
    });
    await indexLayer(
      t,
      server,
      'azl3',
      rpmLayer('azurelinux-3.0', [
        ...['3.azl3', '4.azl3', '4.azl3.1', '5.azl3', '6.azl3'].map((r) => built('xorg-x11-server-Xvfb', 'xorg-x11-server', '1.20.10', r)),
        built('golang', 'golang', '1.20.6', '1.azl3'),
      ]),
    );
    // CVE-2023-1393: "less than 1.20.10-6" (def:44478) and "less than 1.20.10-4" (def:35358).
    expect(await layerVulnerabilities(t, 'azl3')).toEqual({
      ...eachVersion(
        'xorg-x11-server',
        ['1.20.10-3.azl3', '1.20.10-4.azl3', '1.20.10-4.azl3.1', '1.20.10-5.azl3'],
        ['CVE-2023-1393 0:1.20.10-6.azl3'],
      ),
      // Above "greater than 0:0.0.0.azl3", below 1.20.7-1; and below 1.20.10-1.
      'golang 1.20.6-1.azl3': ['CVE-2023-29409 0:1.20.7-1.azl3', 'CVE-2023-39323 0:1.20.10-1.azl3'],
    });

    await indexLayer(
      t,
      server,
      'mariner2',
      rpmLayer('mariner-2.0', [
        // CVE-2023-29404: "greater than 0:1.19.0.cm2" and "less than 0:1.20.7-1.cm2". rpm compares the
        // version first, and 1.19.0 is below 1.19.0.cm2: neither of the first two is above the bound.
        ...['1.18.10', '1.19.0', '1.19.5'].map((v) => built('golang', 'golang', v, '1.cm2')),
        // CVE-2022-3736: no patch, "less than or equal 0:9.16.33-1.cm2".
        built('bind-libs', 'bind', '9.16.33', '1.cm2'),
        built('bind-utils', 'bind', '9.16.33', '1.cm2.1'),
        // CVE-2023-0687: not applicable.
        built('glibc', 'glibc', '2.35', '4.cm2'),
      ]),
    );
    expect(await layerVulnerabilities(t, 'mariner2')).toEqual({
      'golang 1.19.5-1.cm2': ['CVE-2023-29404 0:1.20.7-1.cm2'],
      'bind 9.16.33-1.cm2': ['CVE-2022-3736 None'],
    });
  });
});

describe('Photon OS CVE metadata (4.0)', () => {
  it('reports below the higher of two rows, leaves out "Fixed" without a version, keeps BDSA ids', async () => {
    const { t, server } = await afterRun('photon', '/photon/', () => ({
      '/photon/cve_data_photon4.0.json': fixture('feeds/photon/cve_data_photon4.0-excerpt.json'),
    }));

    await indexLayer(
      t,
      server,
      'photon4',
      rpmLayer('photon-4.0', [
        // CVE-2024-4453: "all versions before 1.22.7-3.ph4" and "all versions before 1.22.7-2".
        ...['1.ph4', '2', '2.1', '2.ph4', '3.ph4'].map((release) => ({
          name: 'gstreamer-plugins-base',
          version: '1.22.7',
          release,
          arch: 'x86_64',
        })),
        // CVE-2023-50447: "Fixed" with res_ver "NA"; CVE-2024-7592: fixed in 3.10.11-11.ph4.
        { name: 'python3', version: '3.10.11', release: '10.ph4', arch: 'x86_64' },
        { name: 'krb5-devel', version: '1.17', release: '14.ph4', arch: 'x86_64' },
      ]),
    );
    expect(await layerVulnerabilities(t, 'photon4')).toEqual({
      ...eachVersion('gstreamer-plugins-base', ['1.22.7-1.ph4', '1.22.7-2', '1.22.7-2.1', '1.22.7-2.ph4'], ['CVE-2024-4453 1.22.7-3.ph4']),
      'python3 3.10.11-10.ph4': ['CVE-2024-7592 3.10.11-11.ph4'],
      'krb5-devel 1.17-14.ph4': ['BDSA-2025-0719 1.17-15.ph4'],
    });
  });
});

describe('SUSE OVAL (SLES 15 SP4 with and without LTSS, SP6)', () => {
  it('applies the LTSS product only to layers with its release package, FixedBy with its epoch, and unfixed packages above 0:0-0', async () => {
    const { t, server } = await afterRun('suse', '/suse/', () => ({
      '/suse/suse.linux.enterprise.server.15-affected.xml.gz': gzipSync(fixture('feeds/suse/sles-15-sp6-affected-excerpt.xml')),
    }));

    const sles = (version: string, packages: readonly HeaderSpec[]): Buffer =>
      layerTar({
        'etc/os-release': `NAME="SLES"\nVERSION_ID="${version}"\nID="sles"\nID_LIKE="suse"\n`,
        'var/lib/rpm/Packages.db': ndbDatabase(packages.map(rpmHeader)),
      });
    const product = (name: string, version: string): HeaderSpec => ({ name, version, release: '150400.1.1', arch: 'x86_64' });
    const openssl = (name: string, release: string): HeaderSpec => ({ name, version: '3.0.8', release, arch: 'x86_64' });
    // CVE-2099-0001: SP4 fixes libopenssl3 in 150400.4.60.1; SP4-LTSS fixes it and openssl-3 in 150400.4.69.1.
    const sp4Packages = [
      ...['150400.4.59.1', '150400.4.60.1', '150400.4.69.1'].map((r) => openssl('libopenssl3', r)),
      openssl('openssl-3', '150399.4.69.1'),
    ];
    await indexLayer(t, server, 'sp4', sles('15.4', [product('sles-release', '15.4'), ...sp4Packages]));
    await indexLayer(
      t,
      server,
      'sp4-ltss',
      sles('15.4', [product('sles-release', '15.4'), product('sles-ltss-release', '15.4'), ...sp4Packages]),
    );

    expect(await layerVulnerabilities(t, 'sp4')).toEqual({ 'libopenssl3 3.0.8-150400.4.59.1': ['CVE-2099-0001 0:3.0.8-150400.4.60.1'] });
    const ltss = ['CVE-2099-0001 0:3.0.8-150400.4.69.1'];
    expect(await layerVulnerabilities(t, 'sp4-ltss')).toEqual({
      ...eachVersion('libopenssl3', ['3.0.8-150400.4.59.1', '3.0.8-150400.4.60.1'], ltss),
      'openssl-3 3.0.8-150399.4.69.1': ltss,
    });

    await indexLayer(
      t,
      server,
      'sp6',
      sles('15.6', [
        product('sles-release', '15.6'),
        // CVE-2099-0002: libxml2-2 "greater than 0:0-0", no fix.
        { name: 'libxml2-2', version: '0', release: '0', arch: 'x86_64' },
        { name: 'libxml2-2', version: '2.10.3', release: '150500.5.5.1', arch: 'x86_64' },
        { name: 'kernel-default', version: '6.4.0', release: '150600.23.25.1', arch: 'x86_64' },
      ]),
    );
    expect(await layerVulnerabilities(t, 'sp6')).toEqual({
      'libxml2-2 2.10.3-150500.5.5.1': ['CVE-2099-0002 None'],
      'kernel-default 6.4.0-150600.23.25.1': ['CVE-2099-0003 0:6.4.0-150600.23.30.1'],
    });
  });

  it('writes the implied epoch of a version read from a criterion comment (states unreadable)', async () => {
    const { t, server } = await afterRun('suse', '/suse/', () => ({
      '/suse/suse.linux.enterprise.server.15-affected.xml.gz': gzipSync(fixture('feeds/suse/suse-oval-excerpt.xml')),
    }));
    await indexLayer(
      t,
      server,
      'sp1-ltss',
      layerTar({
        'var/lib/rpm/Packages.db': ndbDatabase(
          [
            { name: 'sles-release', version: '15.1', release: '1.1', arch: 'x86_64' },
            { name: 'sles-ltss-release', version: '15.1', release: '1.1', arch: 'x86_64' },
            { name: 'kernel-default', version: '4.12.14', release: '197.89.1', arch: 'x86_64' },
          ].map(rpmHeader),
        ),
      }),
    );
    expect(await layerVulnerabilities(t, 'sp1-ltss')).toEqual({ 'kernel-default 4.12.14-197.89.1': ['CVE-2021-29154 0:4.12.14-197.89.2'] });
  });
});
