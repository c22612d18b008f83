/**
 * The suse, photon, azurelinux and rhel-vex sources end to end: each feed served in its upstream
 * layout from a local HTTP server, read by the real updater (UpdaterRunner, the source chosen
 * through updater.enabledupdaters and located by updater.sources.<name>.url), then a layer made
 * of a real rpm database and a real os-release indexed through the v1 API, and the
 * vulnerabilities each package gets asserted field by field.
 *
 * The feeds are small documents written here in each source's own format (the shapes of the
 * parsers' fixtures in test/fixtures/feeds), naming packages that are in the layer's rpm database
 * at versions around the installed ones, so that a fix above, a fix below, an unfixed entry and a
 * not-affected entry can all be told apart on one layer. The advisory ids are CVE-2099-*: these
 * are not statements any vendor made.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { json, testApp, type TestApp } from '../helpers/app.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { layerTar, rpmLayerTar, type RpmImage } from '../helpers/image-archives.js';
import { ociLayout, pushImage } from '../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry } from '../helpers/registry.js';
import { serveVexFeed, vexCsv } from '../helpers/rhel-vex-feed.js';
import { indexLayer, storedVulnerability, updaterFor } from '../helpers/source-runs.js';
import { gzip } from '../helpers/tarball.js';
import { whenDone } from '../helpers/when-done.js';

const fixture = (path: string): Buffer => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));

/** A base layer: the os-release of one distribution over the rpm database of another (see each use). */
const borrowedRpmLayer = (osRelease: string, rpm: RpmImage): Buffer => {
  const database = {
    amazonlinux2023: ['rpm/amazonlinux2023-sqlite/rpmdb.sqlite', 'var/lib/rpm/rpmdb.sqlite'],
    rhel8: ['rpm/rhel8-libuuid-bdb/Packages', 'var/lib/rpm/Packages'],
    sle15: ['rpm/sle15-bci-ndb/Packages.db', 'usr/lib/sysimage/rpm/Packages.db'],
  }[rpm] as [string, string];
  return layerTar({ 'etc/os-release': fixture(`osrelease/${osRelease}/etc/os-release`), [database[1]]: fixture(database[0]) });
};

interface Report {
  namespace: string;
  versions: Map<string, string>;
  /** Feature name → its vulnerabilities sorted by name; only features with some. */
  vulnerable: Record<string, unknown[]>;
}

/** GET /v1/layers/{name}?features&vulnerabilities. */
async function layerReport(t: TestApp, name: string): Promise<Report> {
  const res = await t.app.inject({ url: `/v1/layers/${name}?features&vulnerabilities` });
  expect(res.statusCode, res.body).toBe(200);
  const layer = json(res).Layer;
  const features = layer.Features as Array<{ Name: string; Version: string; Vulnerabilities?: Array<{ Name: string }> }>;
  const vulnerable: Record<string, unknown[]> = {};
  for (const f of features) {
    const vulns = [...(f.Vulnerabilities ?? [])].sort((a, b) => a.Name.localeCompare(b.Name));
    if (vulns.length > 0) vulnerable[f.Name] = vulns;
  }
  return { namespace: layer.NamespaceName, versions: new Map(features.map((f) => [f.Name, f.Version])), vulnerable };
}

// ---------------------------------------------------------------------------------------------
// SUSE OVAL
// ---------------------------------------------------------------------------------------------

/**
 * suse.linux.enterprise.server.15-affected.xml as SUSE writes it (one definition per CVE, product
 * and package criteria side by side, rpminfo tests, objects and states), for packages of the SLE
 * 15 SP3 image: libz1 1.2.11-150000.3.36.1, bash 4.4-19.6.1, glibc 2.31-150300.41.1, perl-base.
 */
const SUSE_SLES_15 = `<?xml version="1.0" encoding="UTF-8"?>
<oval_definitions xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5" xmlns:oval="http://oval.mitre.org/XMLSchema/oval-common-5" xmlns:oval-def="http://oval.mitre.org/XMLSchema/oval-definitions-5">
  <generator>
    <oval:product_name>Marcus Updateinfo to OVAL Converter</oval:product_name>
    <oval:schema_version>5.5</oval:schema_version>
    <oval:timestamp>2099-02-01T04:00:00</oval:timestamp>
  </generator>
  <definitions>
    <definition id="oval:org.opensuse.security:def:20992001" version="1" class="vulnerability">
      <metadata>
        <title>CVE-2099-2001</title>
        <reference ref_id="Mitre CVE-2099-2001" ref_url="https://cve.mitre.org/cgi-bin/cvename.cgi?name=CVE-2099-2001" source="CVE"/>
        <reference ref_id="SUSE CVE-2099-2001" ref_url="https://www.suse.com/security/cve/CVE-2099-2001" source="SUSE CVE"/>
        <description>
    Example heap overflow in inflate
    with a crafted stream.
    </description>
        <advisory from="security@suse.de">
          <severity>Important</severity>
        </advisory>
      </metadata>
      <criteria operator="OR">
        <criteria operator="AND">
          <criteria operator="OR">
            <criterion test_ref="oval:org.opensuse.security:tst:2009992001" comment="SUSE Linux Enterprise Server 15 SP3 is installed"/>
            <criterion test_ref="oval:org.opensuse.security:tst:2009992002" comment="SUSE Linux Enterprise Module for Basesystem 15 SP3 is installed"/>
          </criteria>
          <criterion test_ref="oval:org.opensuse.security:tst:2009992101" comment="libz1-1.2.11-150000.3.48.1 is installed"/>
        </criteria>
        <criteria operator="AND">
          <criterion test_ref="oval:org.opensuse.security:tst:2009992003" comment="SUSE Linux Enterprise Server 15 SP6 is installed"/>
          <criterion test_ref="oval:org.opensuse.security:tst:2009992102" comment="libz1-1.2.13-150500.4.3.1 is installed"/>
        </criteria>
      </criteria>
    </definition>
    <definition id="oval:org.opensuse.security:def:20992002" version="1" class="vulnerability">
      <metadata>
        <title>CVE-2099-2002</title>
        <reference ref_id="SUSE CVE-2099-2002" ref_url="https://www.suse.com/security/cve/CVE-2099-2002" source="SUSE CVE"/>
        <description>Example bug in bash, fixed before the image's build.</description>
        <advisory from="security@suse.de">
          <severity>Low</severity>
        </advisory>
      </metadata>
      <criteria operator="AND">
        <criterion test_ref="oval:org.opensuse.security:tst:2009992001" comment="SUSE Linux Enterprise Server 15 SP3 is installed"/>
        <criterion test_ref="oval:org.opensuse.security:tst:2009992201" comment="bash-4.4-19.3.1 is installed"/>
      </criteria>
    </definition>
    <definition id="oval:org.opensuse.security:def:20992003" version="1" class="vulnerability">
      <metadata>
        <title>CVE-2099-2003</title>
        <reference ref_id="SUSE CVE-2099-2003" ref_url="https://www.suse.com/security/cve/CVE-2099-2003" source="SUSE CVE"/>
        <description>Example flaw in glibc, not fixed yet.</description>
        <advisory from="security@suse.de">
          <severity>Moderate</severity>
        </advisory>
      </metadata>
      <criteria operator="AND">
        <criterion test_ref="oval:org.opensuse.security:tst:2009992002" comment="SUSE Linux Enterprise Module for Basesystem 15 SP3 is installed"/>
        <criterion test_ref="oval:org.opensuse.security:tst:2009992301" comment="glibc is installed"/>
      </criteria>
    </definition>
    <definition id="oval:org.opensuse.security:def:20992004" version="1" class="vulnerability">
      <metadata>
        <title>CVE-2099-2004</title>
        <reference ref_id="SUSE CVE-2099-2004" ref_url="https://www.suse.com/security/cve/CVE-2099-2004" source="SUSE CVE"/>
        <description>Example flaw in perl modules SUSE does not ship.</description>
        <advisory from="security@suse.de">
          <severity>Critical</severity>
        </advisory>
      </metadata>
      <criteria operator="AND">
        <criterion test_ref="oval:org.opensuse.security:tst:2009992001" comment="SUSE Linux Enterprise Server 15 SP3 is installed"/>
        <criterion test_ref="oval:org.opensuse.security:tst:2009992401" comment="perl-base is not affected"/>
      </criteria>
    </definition>
  </definitions>
  <tests>
    <rpminfo_test id="oval:org.opensuse.security:tst:2009992001" version="1" comment="sles-release is ==15.3" check="at least one" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <object object_ref="oval:org.opensuse.security:obj:2009992001"/>
      <state state_ref="oval:org.opensuse.security:ste:2009992001"/>
    </rpminfo_test>
    <rpminfo_test id="oval:org.opensuse.security:tst:2009992002" version="1" comment="sle-module-basesystem-release is ==15.3" check="at least one" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <object object_ref="oval:org.opensuse.security:obj:2009992002"/>
      <state state_ref="oval:org.opensuse.security:ste:2009992001"/>
    </rpminfo_test>
    <rpminfo_test id="oval:org.opensuse.security:tst:2009992003" version="1" comment="sles-release is ==15.6" check="at least one" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <object object_ref="oval:org.opensuse.security:obj:2009992001"/>
      <state state_ref="oval:org.opensuse.security:ste:2009992002"/>
    </rpminfo_test>
    <rpminfo_test id="oval:org.opensuse.security:tst:2009992101" version="1" comment="libz1 is &lt;1.2.11-150000.3.48.1" check="at least one" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <object object_ref="oval:org.opensuse.security:obj:2009992101"/>
      <state state_ref="oval:org.opensuse.security:ste:2009992101"/>
    </rpminfo_test>
    <rpminfo_test id="oval:org.opensuse.security:tst:2009992102" version="1" comment="libz1 is &lt;1.2.13-150500.4.3.1" check="at least one" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <object object_ref="oval:org.opensuse.security:obj:2009992101"/>
      <state state_ref="oval:org.opensuse.security:ste:2009992102"/>
    </rpminfo_test>
    <rpminfo_test id="oval:org.opensuse.security:tst:2009992201" version="1" comment="bash is &lt;4.4-19.3.1" check="at least one" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <object object_ref="oval:org.opensuse.security:obj:2009992201"/>
      <state state_ref="oval:org.opensuse.security:ste:2009992201"/>
    </rpminfo_test>
    <rpminfo_test id="oval:org.opensuse.security:tst:2009992301" version="1" comment="glibc is &gt;0-0" check="at least one" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <object object_ref="oval:org.opensuse.security:obj:2009992301"/>
      <state state_ref="oval:org.opensuse.security:ste:2009992301"/>
    </rpminfo_test>
    <rpminfo_test id="oval:org.opensuse.security:tst:2009992401" version="1" comment="perl-base is ==0" check="at least one" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <object object_ref="oval:org.opensuse.security:obj:2009992401"/>
      <state state_ref="oval:org.opensuse.security:ste:2009992401"/>
    </rpminfo_test>
  </tests>
  <objects>
    <rpminfo_object id="oval:org.opensuse.security:obj:2009992001" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <name>sles-release</name>
    </rpminfo_object>
    <rpminfo_object id="oval:org.opensuse.security:obj:2009992002" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <name>sle-module-basesystem-release</name>
    </rpminfo_object>
    <rpminfo_object id="oval:org.opensuse.security:obj:2009992101" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <name>libz1</name>
    </rpminfo_object>
    <rpminfo_object id="oval:org.opensuse.security:obj:2009992201" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <name>bash</name>
    </rpminfo_object>
    <rpminfo_object id="oval:org.opensuse.security:obj:2009992301" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <name>glibc</name>
    </rpminfo_object>
    <rpminfo_object id="oval:org.opensuse.security:obj:2009992401" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <name>perl-base</name>
    </rpminfo_object>
  </objects>
  <states>
    <rpminfo_state id="oval:org.opensuse.security:ste:2009992001" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <version operation="equals">15.3</version>
    </rpminfo_state>
    <rpminfo_state id="oval:org.opensuse.security:ste:2009992002" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <version operation="equals">15.6</version>
    </rpminfo_state>
    <rpminfo_state id="oval:org.opensuse.security:ste:2009992101" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <evr datatype="evr_string" operation="less than">0:1.2.11-150000.3.48.1</evr>
    </rpminfo_state>
    <rpminfo_state id="oval:org.opensuse.security:ste:2009992102" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <evr datatype="evr_string" operation="less than">0:1.2.13-150500.4.3.1</evr>
    </rpminfo_state>
    <rpminfo_state id="oval:org.opensuse.security:ste:2009992201" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <evr datatype="evr_string" operation="less than">0:4.4-19.3.1</evr>
    </rpminfo_state>
    <rpminfo_state id="oval:org.opensuse.security:ste:2009992301" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <evr datatype="evr_string" operation="greater than">0:0-0</evr>
    </rpminfo_state>
    <rpminfo_state id="oval:org.opensuse.security:ste:2009992401" version="1" xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
      <version operation="equals">0</version>
    </rpminfo_state>
  </states>
</oval_definitions>
`;

describe('the suse source', () => {
  it('gives an SLE 15 SP3 layer (ndb database) the sles:15.3 entries: a fix above, none below, unfixed, not the not-affected one', async () => {
    const t = await testApp();
    const server = await startFeedServer();
    // The other products' files (SLE Micro, Leap, SLES 12 and 16) are absent upstream: optional parts.
    server.put('/suse/suse.linux.enterprise.server.15-affected.xml.gz', gzipSync(SUSE_SLES_15));
    const run = updaterFor(t.pool, 'suse', server.url('/suse/'));
    const summary = await run();
    expect(summary.error).toBeUndefined();
    // sles:15.3 CVE-2099-2001..2004 and sles:15.6 CVE-2099-2001.
    expect(summary).toMatchObject({ source: 'suse', status: 'updated', records: 5 });

    await indexLayer(t, server, 'sle15', rpmLayerTar('sle15'));
    const report = await layerReport(t, 'sle15');
    expect(report.namespace).toBe('sles:15.3');
    expect(report.versions.get('libz1')).toBe('1.2.11-150000.3.36.1');
    expect(report.versions.get('bash')).toBe('4.4-19.6.1');
    expect(report.versions.get('perl-base')).toBe('5.26.1-150300.17.11.1');
    expect(report.vulnerable).toEqual({
      glibc: [
        {
          Name: 'CVE-2099-2003',
          NamespaceName: 'sles:15.3',
          Description: 'Example flaw in glibc, not fixed yet.',
          Link: 'https://www.suse.com/security/cve/CVE-2099-2003',
          Severity: 'Medium',
        },
      ],
      libz1: [
        {
          Name: 'CVE-2099-2001',
          NamespaceName: 'sles:15.3',
          Description: 'Example heap overflow in inflate with a crafted stream.',
          Link: 'https://www.suse.com/security/cve/CVE-2099-2001',
          Severity: 'High',
          // The SP3 fix, not SP6's 1.2.13.
          FixedBy: '0:1.2.11-150000.3.48.1',
        },
      ],
    });

    // The not-affected entry is stored with its state, and affects nothing.
    expect(await storedVulnerability(t, 'sles:15.3', 'CVE-2099-2004')).toEqual({
      Name: 'CVE-2099-2004',
      NamespaceName: 'sles:15.3',
      Description: 'Example flaw in perl modules SUSE does not ship.',
      Link: 'https://www.suse.com/security/cve/CVE-2099-2004',
      Severity: 'Critical',
      Metadata: { FixStates: { 'perl-base': 'not_affected' } },
      FixedIn: [{ Name: 'perl-base', NamespaceName: 'sles:15.3', VersionFormat: 'rpm', Version: 'None' }],
    });
    expect((await storedVulnerability(t, 'sles:15.6', 'CVE-2099-2001')).FixedIn).toEqual([
      { Name: 'libz1', NamespaceName: 'sles:15.6', VersionFormat: 'rpm', Version: '0:1.2.13-150500.4.3.1' },
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Photon OS CVE metadata
// ---------------------------------------------------------------------------------------------

/**
 * cve_data_photon4.0.json as Broadcom publishes it: one entry per (CVE, package). The packages are
 * those of the Amazon Linux 2023 database the layer below borrows (see there): curl-minimal and
 * libcurl-minimal 8.0.1, bash 5.2.15, krb5-libs 1.20.1, expat 2.5.0.
 */
const PHOTON_4 = [
  {
    aff_ver: 'all versions before 8.4.0-1.ph4 are vulnerable',
    cve_id: 'CVE-2099-3001',
    cve_score: 9.8,
    pkg: 'curl-minimal',
    res_ver: '8.4.0-1.ph4',
    status: 'Fixed',
  },
  {
    aff_ver: 'all versions before 8.4.0-1.ph4 are vulnerable',
    cve_id: 'CVE-2099-3001',
    cve_score: 9.8,
    pkg: 'libcurl-minimal',
    res_ver: '8.4.0-1.ph4',
    status: 'Fixed',
  },
  {
    aff_ver: 'all versions before 5.1.8-1.ph4 are vulnerable',
    cve_id: 'CVE-2099-3002',
    cve_score: 7.8,
    pkg: 'bash',
    res_ver: '5.1.8-1.ph4',
    status: 'Fixed',
  },
  { aff_ver: 'NA', cve_id: 'CVE-2099-3003', cve_score: 5.0, pkg: 'krb5-libs', res_ver: 'NA', status: 'Not Affected' },
  // Written in lower case and without a status, as some entries of the 4.0 file are.
  {
    aff_ver: 'all versions before 2.6.3-1.ph4 are vulnerable',
    cve_id: 'cve-2099-3004',
    cve_score: 6.5,
    pkg: 'expat',
    res_ver: '2.6.3-1.ph4',
  },
];

describe('the photon source', () => {
  it('gives a Photon 4.0 layer the photon:4.0 entries: fixed above, none below, not the not-affected one', async () => {
    const t = await testApp();
    const server = await startFeedServer();
    // 3.0 and 5.0 are absent upstream: optional parts.
    server.put('/photon/cve_data_photon4.0.json', JSON.stringify(PHOTON_4, null, 2));
    const summary = await updaterFor(t.pool, 'photon', server.url('/photon/'))();
    expect(summary.error).toBeUndefined();
    expect(summary).toMatchObject({ source: 'photon', status: 'updated', records: 4 });

    // No Photon rpm database is in the fixtures: the layer is Photon 4.0's os-release over Amazon
    // Linux 2023's (SQLite) database, which Photon-style package names and versions are compared with.
    await indexLayer(t, server, 'photon', borrowedRpmLayer('photon-4.0', 'amazonlinux2023'));
    const report = await layerReport(t, 'photon');
    expect(report.namespace).toBe('photon:4.0');
    expect(report.versions.get('krb5-libs')).toBe('1.20.1-8.amzn2023.0.2');
    expect(report.versions.get('bash')).toBe('5.2.15-1.amzn2023.0.2');
    const curl = {
      Name: 'CVE-2099-3001',
      NamespaceName: 'photon:4.0',
      Link: 'https://nvd.nist.gov/vuln/detail/CVE-2099-3001',
      Severity: 'Critical',
      FixedBy: '8.4.0-1.ph4',
    };
    expect(report.vulnerable).toEqual({
      'curl-minimal': [curl],
      'libcurl-minimal': [curl],
      expat: [
        {
          Name: 'CVE-2099-3004',
          NamespaceName: 'photon:4.0',
          Link: 'https://nvd.nist.gov/vuln/detail/CVE-2099-3004',
          Severity: 'Medium',
          FixedBy: '2.6.3-1.ph4',
        },
      ],
    });
    expect(await storedVulnerability(t, 'photon:4.0', 'CVE-2099-3003')).toMatchObject({
      Severity: 'Medium',
      Metadata: { FixStates: { 'krb5-libs': 'not_affected' } },
      FixedIn: [{ Name: 'krb5-libs', Version: 'None' }],
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Azure Linux and CBL-Mariner OVAL
// ---------------------------------------------------------------------------------------------

interface MicrosoftDefinition {
  id: number;
  cve: string;
  pkg: string;
  patchable: 'true' | 'false' | 'Not Applicable';
  severity: string;
  operation: 'less than' | 'less than or equal';
  evr: string;
  description: string;
}

/** One of Microsoft's OVAL files (azurelinux-3.0-oval.xml, cbl-mariner-2.0-oval.xml): one definition per (CVE, package). */
function microsoftOval(domain: 'azurelinux' | 'cbl-mariner', platform: string, definitions: MicrosoftDefinition[]): string {
  const id = (kind: string, n: number) => `oval:com.microsoft.${domain}:${kind}:${n}`;
  const versionOf = (d: MicrosoftDefinition) => d.evr.replace(/^\d+:/, '').replace(/\.(azl3|cm2)$/, '');
  return `<oval_definitions xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5" xmlns:oval="http://oval.mitre.org/XMLSchema/oval-common-5" xmlns:linux-def="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">
  <generator>
    <oval:product_name>Azure Linux OVAL Definition Generator</oval:product_name>
    <oval:product_version>17</oval:product_version>
    <oval:schema_version>5.11</oval:schema_version>
    <oval:timestamp>2099-02-01T12:00:00.000000000Z</oval:timestamp>
    <oval:content_version>4073558400</oval:content_version>
  </generator>
  <definitions>
${definitions
  .map(
    (d) => `    <definition class="vulnerability" id="${id('def', d.id)}" version="1">
      <metadata>
        <title>${d.cve} affecting package ${d.pkg} for versions less than ${versionOf(d)}</title>
        <affected family="unix">
          <platform>${platform}</platform>
        </affected>
        <reference ref_id="${d.cve}" ref_url="https://nvd.nist.gov/vuln/detail/${d.cve}" source="CVE"/>
        <patchable>${d.patchable}</patchable>
        <advisory_id>${d.id}-1</advisory_id>
        <severity>${d.severity}</severity>
        <description>${d.description}</description>
      </metadata>
      <criteria operator="AND">
        <criterion comment="Package ${d.pkg} is earlier than ${versionOf(d)}, affected by ${d.cve}" test_ref="${id('tst', d.id * 1000)}"/>
      </criteria>
    </definition>`,
  )
  .join('\n')}
  </definitions>
  <tests>
${definitions
  .map(
    (
      d,
    ) => `    <linux-def:rpminfo_test check="at least one" comment="Package ${d.pkg} is earlier than ${versionOf(d)}, affected by ${d.cve}" id="${id('tst', d.id * 1000)}" version="1">
      <linux-def:object object_ref="${id('obj', d.id * 1000 + 1)}"/>
      <linux-def:state state_ref="${id('ste', d.id * 1000 + 2)}"/>
    </linux-def:rpminfo_test>`,
  )
  .join('\n')}
  </tests>
  <objects>
${definitions
  .map(
    (d) => `    <linux-def:rpminfo_object id="${id('obj', d.id * 1000 + 1)}" version="1">
      <linux-def:name>${d.pkg}</linux-def:name>
    </linux-def:rpminfo_object>`,
  )
  .join('\n')}
  </objects>
  <states>
${definitions
  .map(
    (d) => `    <linux-def:rpminfo_state id="${id('ste', d.id * 1000 + 2)}" version="1">
      <linux-def:evr datatype="evr_string" operation="${d.operation}">${d.evr}</linux-def:evr>
    </linux-def:rpminfo_state>`,
  )
  .join('\n')}
  </states>
</oval_definitions>
`;
}

/**
 * For the Amazon Linux 2023 database's expat 2.5.0, zlib 1.2.11, libxml2 2.10.4, sqlite-libs
 * 3.40.0 and curl-minimal/libcurl-minimal 8.0.1. Microsoft's OVAL names source packages (sqlite,
 * curl), which the binaries are matched by.
 */
const AZURE_LINUX_3 = microsoftOval('azurelinux', 'Azure Linux', [
  {
    id: 60001,
    cve: 'CVE-2099-4001',
    pkg: 'expat',
    patchable: 'true',
    severity: 'High',
    operation: 'less than',
    evr: '0:2.6.3-1.azl3',
    description: 'CVE-2099-4001 affecting package expat for versions less than 2.6.3-1. A patched version of the package is available.',
  },
  {
    id: 60002,
    cve: 'CVE-2099-4002',
    pkg: 'zlib',
    patchable: 'Not Applicable',
    severity: 'Critical',
    operation: 'less than',
    evr: '0:1.3.1-1.azl3',
    description:
      'CVE-2099-4002 affecting package zlib for versions less than 1.3.1-1. This CVE either no longer is or was never applicable.',
  },
  {
    id: 60003,
    cve: 'CVE-2099-4003',
    pkg: 'libxml2',
    patchable: 'false',
    severity: 'Medium',
    operation: 'less than or equal',
    evr: '0:2.11.5-1.azl3',
    description: 'CVE-2099-4003 affecting package libxml2 2.11.5-1. No patch is available currently.',
  },
  {
    id: 60004,
    cve: 'CVE-2099-4004',
    pkg: 'sqlite',
    patchable: 'true',
    severity: 'Low',
    operation: 'less than',
    evr: '0:3.39.2-1.azl3',
    description: 'CVE-2099-4004 affecting package sqlite for versions less than 3.39.2-1. A patched version of the package is available.',
  },
  {
    id: 60005,
    cve: 'CVE-2099-4005',
    pkg: 'curl',
    patchable: 'true',
    severity: 'High',
    operation: 'less than',
    evr: '0:8.8.0-2.azl3',
    description: 'CVE-2099-4005 affecting package curl for versions less than 8.8.0-2. A patched version of the package is available.',
  },
]);

const MARINER_2 = microsoftOval('cbl-mariner', 'CBL-Mariner', [
  {
    id: 60101,
    cve: 'CVE-2099-4001',
    pkg: 'expat',
    patchable: 'true',
    severity: 'High',
    operation: 'less than',
    evr: '0:2.5.0-2.cm2',
    description: 'CVE-2099-4001 affecting package expat for versions less than 2.5.0-2. A patched version of the package is available.',
  },
]);

describe('the azurelinux source', () => {
  it('gives Azure Linux 3.0 and CBL-Mariner 2.0 layers their own namespaces entries, leaving out the not-applicable one', async () => {
    const t = await testApp();
    const server = await startFeedServer();
    server.put('/azl/azurelinux-3.0-oval.xml', AZURE_LINUX_3);
    server.put('/azl/cbl-mariner-2.0-oval.xml', MARINER_2);
    const summary = await updaterFor(t.pool, 'azurelinux', server.url('/azl/'))();
    expect(summary.error).toBeUndefined();
    expect(summary).toMatchObject({ source: 'azurelinux', status: 'updated', records: 6 });

    // No Azure Linux or CBL-Mariner rpm database is in the fixtures: both layers are their
    // distribution's os-release over Amazon Linux 2023's (SQLite) database.
    await indexLayer(t, server, 'azl3', borrowedRpmLayer('azurelinux-3.0', 'amazonlinux2023'));
    await indexLayer(t, server, 'mariner2', borrowedRpmLayer('mariner-2.0', 'amazonlinux2023'));

    const azl = await layerReport(t, 'azl3');
    expect(azl.namespace).toBe('azurelinux:3.0');
    expect(azl.versions.get('zlib')).toBe('1.2.11-33.amzn2023.0.4');
    // Matched by source package: sqlite-libs is sqlite, curl-minimal and libcurl-minimal are one curl.
    expect(azl.versions.get('sqlite')).toBe('3.40.0-1.amzn2023.0.3');
    expect(azl.versions.has('sqlite-libs')).toBe(false);
    expect(azl.versions.get('curl')).toBe('8.0.1-1.amzn2023.0.1');
    expect(azl.vulnerable).toEqual({
      curl: [
        {
          Name: 'CVE-2099-4005',
          NamespaceName: 'azurelinux:3.0',
          Description:
            'CVE-2099-4005 affecting package curl for versions less than 8.8.0-2. A patched version of the package is available.',
          Link: 'https://nvd.nist.gov/vuln/detail/CVE-2099-4005',
          Severity: 'High',
          FixedBy: '0:8.8.0-2.azl3',
        },
      ],
      expat: [
        {
          Name: 'CVE-2099-4001',
          NamespaceName: 'azurelinux:3.0',
          Description:
            'CVE-2099-4001 affecting package expat for versions less than 2.6.3-1. A patched version of the package is available.',
          Link: 'https://nvd.nist.gov/vuln/detail/CVE-2099-4001',
          Severity: 'High',
          FixedBy: '0:2.6.3-1.azl3',
        },
      ],
      libxml2: [
        {
          Name: 'CVE-2099-4003',
          NamespaceName: 'azurelinux:3.0',
          Description: 'CVE-2099-4003 affecting package libxml2 2.11.5-1. No patch is available currently.',
          Link: 'https://nvd.nist.gov/vuln/detail/CVE-2099-4003',
          Severity: 'Medium',
        },
      ],
    });

    const mariner = await layerReport(t, 'mariner2');
    expect(mariner.namespace).toBe('mariner:2.0');
    expect(mariner.vulnerable).toEqual({
      expat: [
        {
          Name: 'CVE-2099-4001',
          NamespaceName: 'mariner:2.0',
          Description:
            'CVE-2099-4001 affecting package expat for versions less than 2.5.0-2. A patched version of the package is available.',
          Link: 'https://nvd.nist.gov/vuln/detail/CVE-2099-4001',
          Severity: 'High',
          FixedBy: '0:2.5.0-2.cm2',
        },
      ],
    });

    expect(await storedVulnerability(t, 'azurelinux:3.0', 'CVE-2099-4002')).toMatchObject({
      Severity: 'Critical',
      Metadata: { FixStates: { zlib: 'not_affected' } },
      FixedIn: [{ Name: 'zlib', Version: 'None' }],
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Red Hat CSAF VEX
// ---------------------------------------------------------------------------------------------

type Remediation = ['none_available', 'Affected' | 'Deferred'] | ['no_fix_planned', 'Will not fix'];

interface VexSpec {
  cve: string;
  impact: 'Low' | 'Moderate' | 'Important' | 'Critical';
  description: string;
  /** RHEL 8 (and 9) builds of libuuid that fix it: V-R. */
  fixed?: { rhel8: string; rhel9?: string };
  /** RHEL 8's libuuid affected, and Red Hat's remediation for it. */
  affected?: Remediation;
  notAffected?: boolean;
}

/**
 * One CSAF VEX document as Red Hat publishes it: the product tree (RHEL products with their CPEs,
 * the packages with their purls, default_component_of relationships), and one vulnerability with
 * its product_status, remediations and threats. Fixed builds are named per repository
 * (BaseOS-8.10.0.Z.MAIN:libuuid-0:V-R.x86_64, with the source rpm beside), unfixed components per
 * product (red_hat_enterprise_linux_8:libuuid). Red Hat often names an unfixed component by its
 * source package (util-linux); here it is the binary package, the name the layer's rpm database
 * gives and the one matched.
 */
function vexDocument(spec: VexSpec): string {
  const rhelProducts = [
    { id: 'red_hat_enterprise_linux_8', name: 'Red Hat Enterprise Linux 8', cpe: 'cpe:/o:redhat:enterprise_linux:8' },
    { id: 'BaseOS-8.10.0.Z.MAIN', name: 'Red Hat Enterprise Linux BaseOS (v. 8)', cpe: 'cpe:/o:redhat:enterprise_linux:8::baseos' },
    { id: 'BaseOS-9.4.0.Z.MAIN', name: 'Red Hat Enterprise Linux BaseOS (v. 9)', cpe: 'cpe:/o:redhat:enterprise_linux:9::baseos' },
  ];
  const builds: Array<{ repo: string; name: string; vr: string; arch: string }> = [];
  if (spec.fixed) {
    builds.push({ repo: 'BaseOS-8.10.0.Z.MAIN', name: 'libuuid', vr: spec.fixed.rhel8, arch: 'x86_64' });
    builds.push({ repo: 'BaseOS-8.10.0.Z.MAIN', name: 'util-linux', vr: spec.fixed.rhel8, arch: 'src' });
    if (spec.fixed.rhel9) builds.push({ repo: 'BaseOS-9.4.0.Z.MAIN', name: 'libuuid', vr: spec.fixed.rhel9, arch: 'x86_64' });
  }
  const buildId = (b: (typeof builds)[number]) => `${b.name}-0:${b.vr}.${b.arch}`;
  const unfixed = spec.affected || spec.notAffected ? ['red_hat_enterprise_linux_8:libuuid'] : [];
  const fixedIds = builds.map((b) => `${b.repo}:${buildId(b)}`);
  const relationships = [
    ...builds.map((b) => ({ product: buildId(b), of: b.repo })),
    ...unfixed.map(() => ({ product: 'libuuid', of: 'red_hat_enterprise_linux_8' })),
  ].map((r) => ({
    category: 'default_component_of',
    full_product_name: { name: `${r.product} as a component of ${r.of}`, product_id: `${r.of}:${r.product}` },
    product_reference: r.product,
    relates_to_product_reference: r.of,
  }));
  const remediations: unknown[] = [];
  if (fixedIds.length > 0) {
    remediations.push({
      category: 'vendor_fix',
      details: 'For details on how to apply this update, refer to:\n\nhttps://access.redhat.com/articles/11258',
      product_ids: fixedIds,
      url: 'https://access.redhat.com/errata/RHSA-2099:0001',
    });
  }
  if (spec.affected) remediations.push({ category: spec.affected[0], details: spec.affected[1], product_ids: unfixed });
  const statusIds = [...fixedIds, ...unfixed];
  return JSON.stringify({
    document: {
      aggregate_severity: { namespace: 'https://access.redhat.com/security/updates/classification/', text: spec.impact },
      category: 'csaf_vex',
      csaf_version: '2.0',
      title: spec.description,
      tracking: {
        id: spec.cve,
        status: 'final',
        version: '1',
        initial_release_date: '2099-01-04T00:00:00+00:00',
        current_release_date: '2099-01-05T00:00:00+00:00',
      },
    },
    product_tree: {
      branches: [
        {
          category: 'vendor',
          name: 'Red Hat',
          branches: [
            {
              category: 'product_family',
              name: 'Red Hat Enterprise Linux',
              branches: rhelProducts.map((p) => ({
                category: 'product_name',
                name: p.name,
                product: { name: p.name, product_id: p.id, product_identification_helper: { cpe: p.cpe } },
              })),
            },
            ...builds.map((b) => ({
              category: 'architecture',
              name: b.arch,
              branches: [
                {
                  category: 'product_version',
                  name: buildId(b),
                  product: {
                    name: buildId(b),
                    product_id: buildId(b),
                    product_identification_helper: { purl: `pkg:rpm/redhat/${b.name}@${b.vr}?arch=${b.arch}` },
                  },
                },
              ],
            })),
            ...unfixed.map(() => ({
              category: 'product_version',
              name: 'libuuid',
              product: { name: 'libuuid', product_id: 'libuuid', product_identification_helper: { purl: 'pkg:rpm/redhat/libuuid' } },
            })),
          ],
        },
      ],
      relationships,
    },
    vulnerabilities: [
      {
        cve: spec.cve,
        notes: [
          { category: 'description', text: spec.description, title: 'Vulnerability description' },
          { category: 'summary', text: spec.description, title: 'Vulnerability summary' },
        ],
        product_status: {
          ...(fixedIds.length > 0 ? { fixed: fixedIds } : {}),
          ...(spec.affected ? { known_affected: unfixed } : {}),
          ...(spec.notAffected ? { known_not_affected: unfixed } : {}),
        },
        references: [{ category: 'self', summary: 'Canonical URL', url: `https://access.redhat.com/security/cve/${spec.cve}` }],
        remediations,
        threats: [{ category: 'impact', details: spec.impact, product_ids: statusIds }],
      },
    ],
  });
}

/** What the feed holds for the RHEL 8 libuuid 2.32.1-42.el8_8 of the UBI 8 database. */
const VEX_DOCUMENTS: Record<string, VexSpec> = {
  '2099/cve-2099-1001.json': {
    cve: 'CVE-2099-1001',
    impact: 'Important',
    description: 'Example overflow in libuuid, fixed in a later build.',
    fixed: { rhel8: '2.32.1-44.el8_10', rhel9: '2.37.4-18.el9_4' },
  },
  '2099/cve-2099-1002.json': {
    cve: 'CVE-2099-1002',
    impact: 'Moderate',
    description: 'Example flaw in libuuid, fixed before the installed build.',
    fixed: { rhel8: '2.32.1-28.el8' },
  },
  '2099/cve-2099-1003.json': {
    cve: 'CVE-2099-1003',
    impact: 'Low',
    description: 'Example flaw Red Hat will not fix.',
    affected: ['no_fix_planned', 'Will not fix'],
  },
  '2099/cve-2099-1004.json': {
    cve: 'CVE-2099-1004',
    impact: 'Moderate',
    description: 'Example flaw in code RHEL 8 does not build.',
    notAffected: true,
  },
  '2099/cve-2099-1005.json': {
    cve: 'CVE-2099-1005',
    impact: 'Moderate',
    description: 'Example flaw, affected, no fix yet.',
    affected: ['none_available', 'Affected'],
  },
  '2099/cve-2099-1006.json': {
    cve: 'CVE-2099-1006',
    impact: 'Important',
    description: 'Example flaw whose fix is deferred.',
    affected: ['none_available', 'Deferred'],
  },
};

const csv = vexCsv;

/** Every document changed well before the archive's date. */
function serveVex(server: FeedServer): void {
  const documents = Object.fromEntries(Object.entries(VEX_DOCUMENTS).map(([path, spec]) => [path, vexDocument(spec)]));
  serveVexFeed(server, '/vex/', '2099-01-10', documents, '2099-01-05T00:00:00+00:00', [
    ['2099/cve-2099-0999.json', '2099-01-02T00:00:00+00:00'],
  ]);
}

const RHEL_8 = 'rhel:8';
const link = (cve: string) => `https://access.redhat.com/security/cve/${cve}`;

/** libuuid's vulnerabilities in the v1 layer report after the first run. */
const LIBUUID_VULNERABILITIES = [
  {
    Name: 'CVE-2099-1001',
    NamespaceName: RHEL_8,
    Description: 'Example overflow in libuuid, fixed in a later build.',
    Link: link('CVE-2099-1001'),
    Severity: 'High',
    FixedBy: '0:2.32.1-44.el8_10',
  },
  {
    Name: 'CVE-2099-1003',
    NamespaceName: RHEL_8,
    Description: 'Example flaw Red Hat will not fix.',
    Link: link('CVE-2099-1003'),
    Severity: 'Low',
    Metadata: { FixStates: { libuuid: 'will_not_fix' } },
  },
  {
    Name: 'CVE-2099-1005',
    NamespaceName: RHEL_8,
    Description: 'Example flaw, affected, no fix yet.',
    Link: link('CVE-2099-1005'),
    Severity: 'Medium',
  },
  {
    Name: 'CVE-2099-1006',
    NamespaceName: RHEL_8,
    Description: 'Example flaw whose fix is deferred.',
    Link: link('CVE-2099-1006'),
    Severity: 'High',
    Metadata: { FixStates: { libuuid: 'fix_deferred' } },
  },
];

describe('the rhel-vex source', () => {
  it('gives a RHEL 8 layer (bdb database) its rhel:8 records with fix states, and notifies a change of state alone once', async () => {
    const t = await testApp();
    const server = await startFeedServer();
    serveVex(server);
    const run = updaterFor(t.pool, 'rhel-vex', server.url('/vex/'));
    const first = await run();
    expect(first.error).toBeUndefined();
    // rhel:8 CVE-2099-1001..1006 and rhel:9 CVE-2099-1001.
    expect(first).toMatchObject({ source: 'rhel-vex', status: 'updated', records: 7 });

    await indexLayer(t, server, 'ubi8', rpmLayerTar('rhel8'));
    const report = await layerReport(t, 'ubi8');
    expect(report.namespace).toBe(RHEL_8);
    expect([...report.versions]).toEqual([['libuuid', '2.32.1-42.el8_8']]);
    // Not 1002 (fixed before 42.el8_8) nor 1004 (not affected).
    expect(report.vulnerable).toEqual({ libuuid: LIBUUID_VULNERABILITIES });
    expect(await storedVulnerability(t, RHEL_8, 'CVE-2099-1004')).toMatchObject({
      Metadata: { FixStates: { libuuid: 'not_affected' } },
      FixedIn: [{ Name: 'libuuid', Version: 'None' }],
    });
    expect((await storedVulnerability(t, 'rhel:9', 'CVE-2099-1001')).FixedIn).toEqual([
      { Name: 'libuuid', NamespaceName: 'rhel:9', VersionFormat: 'rpm', Version: '0:2.37.4-18.el9_4' },
    ]);
    // The first run of a source notifies nothing.
    expect((await t.pool.query('SELECT count(*)::int AS n FROM notification')).rows[0].n).toBe(0);

    // Red Hat re-publishes CVE-2099-1005: no fix planned any more. Only the state changes.
    server.put(
      '/vex/2099/cve-2099-1005.json',
      vexDocument({ ...VEX_DOCUMENTS['2099/cve-2099-1005.json']!, affected: ['no_fix_planned', 'Will not fix'] }),
    );
    server.put(
      '/vex/changes.csv',
      csv([
        ...Object.keys(VEX_DOCUMENTS).map((path): [string, string] => [path, '2099-01-05T00:00:00+00:00']),
        ['2099/cve-2099-1005.json', '2099-01-12T08:00:00+00:00'],
      ]),
    );
    const second = await run();
    expect(second.error).toBeUndefined();
    expect(second).toMatchObject({ status: 'updated', records: 7, changed: 1 });

    const { rows } = await t.pool.query(
      `SELECT x.name, o.name AS old, n.name AS new,
              (SELECT fi.fix_state FROM vulnerability_fixedin fi WHERE fi.vulnerability_id = o.id) AS old_state,
              (SELECT fi.fix_state FROM vulnerability_fixedin fi WHERE fi.vulnerability_id = n.id) AS new_state
       FROM notification x JOIN vulnerability o ON o.id = x.old_vulnerability_id JOIN vulnerability n ON n.id = x.new_vulnerability_id`,
    );
    expect(rows).toEqual([
      { name: expect.any(String), old: 'CVE-2099-1005', new: 'CVE-2099-1005', old_state: null, new_state: 'will_not_fix' },
    ]);
    const notification = await t.app.inject({ url: `/v1/notifications/${rows[0].name}` });
    expect(notification.statusCode, notification.body).toBe(200);
    const { Old, New } = json(notification).Notification;
    expect(Old.Vulnerability).toMatchObject({ Name: 'CVE-2099-1005', FixedIn: [{ Name: 'libuuid', Version: 'None' }] });
    expect(Old.Vulnerability.Metadata).toBeUndefined();
    expect(New.Vulnerability).toMatchObject({
      Name: 'CVE-2099-1005',
      Metadata: { FixStates: { libuuid: 'will_not_fix' } },
      FixedIn: [{ Name: 'libuuid', Version: 'None' }],
    });
    expect(Old.LayersIntroducingVulnerability).toEqual(['ubi8']);
    expect(New.LayersIntroducingVulnerability).toEqual(['ubi8']);

    expect((await layerReport(t, 'ubi8')).vulnerable).toEqual({
      libuuid: LIBUUID_VULNERABILITIES.map((v) =>
        v.Name === 'CVE-2099-1005' ? { ...v, Metadata: { FixStates: { libuuid: 'will_not_fix' } } } : v,
      ),
    });
    // Nothing changed since: no new version, no new notification.
    expect(await run()).toMatchObject({ status: 'unchanged', changed: 0 });
    expect((await t.pool.query('SELECT count(*)::int AS n FROM notification')).rows[0].n).toBe(1);
  });

  const missing = missingRegistryPrograms();
  it.skipIf(missing.length > 0)(
    `shows each vulnerability's FixState in the images API${missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : ''}`,
    async () => {
      const registry = await startRegistry();
      whenDone(() => registry.stop());
      const t = await testApp({ yaml: `  registries:\n    "${registry.host}": { insecure: true }` });
      const server = await startFeedServer();
      serveVex(server);
      expect(await updaterFor(t.pool, 'rhel-vex', server.url('/vex/'))()).toMatchObject({ status: 'updated', records: 7 });

      const scratch = await mkdtemp(join(tmpdir(), 'tarsier-new-sources-'));
      whenDone(() => rm(scratch, { recursive: true, force: true }));
      const layout = await ociLayout(join(scratch, 'ubi8'), { layers: [gzip(rpmLayerTar('rhel8'))] });
      const digest = await pushImage(registry, layout.dir, 'ubi8/minimal', '8');
      const scan = await t.app.inject({
        method: 'POST',
        url: '/tarsier/v1/images',
        payload: { reference: `${registry.host}/ubi8/minimal:8` },
      });
      expect(scan.statusCode, scan.body).toBe(201);

      const detail = await t.app.inject({ url: `/tarsier/v1/images/${digest}` });
      expect(detail.statusCode, detail.body).toBe(200);
      const packages = json(detail).Image.Packages as Array<{ Name: string; Vulnerabilities: Array<Record<string, unknown>> }>;
      expect(packages.map((p) => p.Name)).toEqual(['libuuid']);
      const shown = [...packages[0]!.Vulnerabilities].sort((a, b) => String(a.Name).localeCompare(String(b.Name)));
      expect(shown).toEqual(
        LIBUUID_VULNERABILITIES.map(({ Metadata: _, ...v }) => ({
          ...v,
          FixState: {
            'CVE-2099-1001': 'fixed',
            'CVE-2099-1003': 'will_not_fix',
            'CVE-2099-1005': 'affected',
            'CVE-2099-1006': 'fix_deferred',
          }[v.Name],
        })),
      );
    },
  );
});

describe('the rhel and rhel-vex sources', () => {
  it('are never enabled together', () => {
    expect(() => parseConfig('clair:\n  updater:\n    enabledupdaters: [rhel, rhel-vex]\n')).toThrow(
      /rhel-vex and rhel feed the same distributions \(their vulnerabilities would be reported twice\): enable one of them/,
    );
  });
});
