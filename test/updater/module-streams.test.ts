/**
 * RHEL module streams end to end: the real RHEL 8 OVAL excerpt (RHBA-2019:4268 for idm:DL1,
 * RHEA-2020:0330 for nodejs:12, whose criteria require "Module <name:stream> is enabled") beside
 * RHSA-2020:1980 (git, no module), read by the real updater; layers of rpm databases whose packages
 * carry the modularity label (rpm tag 5096) rpm gives a package built in a module stream, indexed
 * through the v1 API.
 *
 * - A module stream's advisory applies to the packages built in that stream, and to no package of
 *   the same name built outside it or in another stream.
 * - An advisory without a module applies to packages built outside every module only.
 *
 * The same holds for Red Hat's CSAF VEX documents (the rhel-vex source), which name a module's
 * packages as components of the module stream (CVE-2024-7348, postgresql:12, 13 and 15).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js';
import { layerTar } from '../helpers/image-archives.js';
import { ndbDatabase, rpmHeader, type HeaderSpec } from '../helpers/rpmdb.js';
import { runVexUpdater } from '../helpers/rhel-vex-feed.js';
import { indexLayer, layerVulnerabilities, updaterFor } from '../helpers/source-runs.js';

const fixture = (path: string): string => readFileSync(new URL(`../fixtures/${path}`, import.meta.url), 'utf8');

/** RHSA-2020:1980 (git) with the module streams' definitions of the abbreviated RHEL 8 stream added to its definitions. */
function rhel8Stream(): string {
  const abbreviated = fixture('feeds/redhat/oval-v2/rhel-8.oval-abbreviated.xml');
  const moduleDefinitions = abbreviated.slice(
    abbreviated.indexOf('<definitions>') + '<definitions>'.length,
    abbreviated.indexOf('</definitions>'),
  );
  const git = fixture('feeds/redhat/oval/com.redhat.rhsa-20201980.xml');
  const at = git.indexOf('<definitions>') + '<definitions>'.length;
  expect(at).toBeGreaterThan('<definitions>'.length);
  return git.slice(0, at) + moduleDefinitions + git.slice(at);
}

/** The modularity label of the idm:DL1 build the packages below come from. */
const IDM_LABEL = 'idm:DL1:8010020191114162016:5a9b8b9b';
const IDM_MODULE = '[idm]\nname=idm\nstream=DL1\nprofiles=\nstate=enabled\n';

/** A RHEL 8 layer: its os-release, dnf's module configuration, an rpm database holding these packages. */
const rhel8Layer = (packages: readonly HeaderSpec[], modules: Record<string, string> = {}): Buffer =>
  layerTar({
    'etc/os-release': fixture('osrelease/rhel-8/etc/os-release'),
    ...Object.fromEntries(Object.entries(modules).map(([name, text]) => [`etc/dnf/modules.d/${name}.module`, text])),
    'var/lib/rpm/Packages.db': ndbDatabase(packages.map(rpmHeader)),
  });

/** Three idm:DL1 packages one build before RHBA-2019:4268's, with the stream's label or without. */
const idmPackages = (label?: string): HeaderSpec[] =>
  (['ipa-client', 'ipa-common', 'python3-ipalib'] as const).map((name) => ({
    name,
    version: '4.8.0',
    release: '12.module+el8.1.0+4098+f286395e',
    arch: name === 'ipa-client' ? 'x86_64' : 'noarch',
    ...(label ? { modularityLabel: label } : {}),
  }));

async function afterRun(): Promise<{ t: TestApp; server: FeedServer }> {
  const t = await testApp();
  const server = await startFeedServer();
  server.put('/rhel/RHEL8/rhel-8-including-unpatched.oval.xml.bz2', rhel8Stream());
  const summary = await updaterFor(t.pool, 'rhel', server.url('/rhel/'))();
  expect(summary.error).toBeUndefined();
  expect(summary.status).toBe('updated');
  return { t, server };
}

const RHBA = 'RHBA-2019:4268 0:4.8.0-13.module+el8.1.0+4923+c6efe041';

describe('RHEL module streams (RHBA-2019:4268 idm:DL1, RHEA-2020:0330 nodejs:12, RHSA-2020:1980 git)', () => {
  it("matches a module stream's advisory to the packages built in that stream, and to no other package of the same name", async () => {
    const { t, server } = await afterRun();
    await indexLayer(t, server, 'idm-module', rhel8Layer(idmPackages(IDM_LABEL), { idm: IDM_MODULE }));
    await indexLayer(t, server, 'idm-plain', rhel8Layer(idmPackages()));
    await indexLayer(
      t,
      server,
      'nodejs-10',
      rhel8Layer(
        [
          {
            name: 'nodejs',
            epoch: 1,
            version: '10.16.3',
            release: '2.module+el8.1.0+4372+a38e7a6d',
            arch: 'x86_64',
            modularityLabel: 'nodejs:10:8010020190923102040:cdc1202b',
          },
        ],
        { nodejs: '[nodejs]\nname=nodejs\nstream=10\nprofiles=\nstate=enabled\n' },
      ),
    );

    const rhba = [RHBA];
    expect(await layerVulnerabilities(t, 'idm-module')).toEqual({
      'ipa-client 4.8.0-12.module+el8.1.0+4098+f286395e': rhba,
      'ipa-common 4.8.0-12.module+el8.1.0+4098+f286395e': rhba,
      'python3-ipalib 4.8.0-12.module+el8.1.0+4098+f286395e': rhba,
    });
    // The same names and versions built outside the module, and nodejs of the 10 stream below the 12 stream's fix.
    expect(await layerVulnerabilities(t, 'idm-plain')).toEqual({});
    expect(await layerVulnerabilities(t, 'nodejs-10')).toEqual({});

    // A layer above the module's keeps its packages as they were matched, and matches its own in the stream too.
    await indexLayer(
      t,
      server,
      'idm-child',
      rhel8Layer(
        [
          ...idmPackages(IDM_LABEL),
          {
            name: 'ipa-server',
            version: '4.8.0',
            release: '12.module+el8.1.0+4098+f286395e',
            arch: 'x86_64',
            modularityLabel: IDM_LABEL,
          },
        ],
        { idm: IDM_MODULE },
      ),
      'idm-module',
    );
    expect(await layerVulnerabilities(t, 'idm-child')).toEqual({
      'ipa-client 4.8.0-12.module+el8.1.0+4098+f286395e': rhba,
      'ipa-common 4.8.0-12.module+el8.1.0+4098+f286395e': rhba,
      'ipa-server 4.8.0-12.module+el8.1.0+4098+f286395e': rhba,
      'python3-ipalib 4.8.0-12.module+el8.1.0+4098+f286395e': rhba,
    });
  });

  it('matches an advisory without a module to packages built outside every module only', async () => {
    const { t, server } = await afterRun();
    const installed = { version: '2.18.4', release: '1.el8_2', arch: 'x86_64' };
    await indexLayer(
      t,
      server,
      'git',
      rhel8Layer([
        { name: 'git', ...installed },
        // A build of the same version in a module stream: Red Hat's advisory for git is not the stream's.
        { name: 'git-core', ...installed, modularityLabel: 'git:2.18:8020020200101000000:deadbeef' },
      ]),
    );
    expect(await layerVulnerabilities(t, 'git')).toEqual({ 'git 2.18.4-1.el8_2': ['RHSA-2020:1980 0:2.18.4-2.el8_2'] });
  });

  it('matches a CSAF VEX fix scoped to a module stream (CVE-2024-7348) to that stream only', async () => {
    const t = await testApp();
    const server = await startFeedServer();
    await runVexUpdater(t.pool, server, {
      '2024/cve-2024-7348.json': fixture('feeds/redhat/csaf-vex/cve-2024-7348-modules-excerpt.json'),
    });
    const macros = (version: string, release: string, label?: string): HeaderSpec => ({
      name: 'postgresql-test-rpm-macros',
      version,
      release,
      arch: 'noarch',
      ...(label ? { modularityLabel: label } : {}),
    });
    // One build before the 15 stream's fix; the 13 stream's fixed build; a 12 build outside every module.
    await indexLayer(
      t,
      server,
      'pg15',
      rhel8Layer([macros('15.7', '1.module+el8.10.0+21364+8e1e58c4', 'postgresql:15:8100020240214145451:489197e6')]),
    );
    await indexLayer(
      t,
      server,
      'pg13',
      rhel8Layer([macros('13.16', '1.module+el8.10.0+22213+5adc94fe', 'postgresql:13:8100020240814102212:489197e6')]),
    );
    await indexLayer(t, server, 'pg-plain', rhel8Layer([macros('12.19', '1.el8')]));

    expect(await layerVulnerabilities(t, 'pg15')).toEqual({
      'postgresql-test-rpm-macros 15.7-1.module+el8.10.0+21364+8e1e58c4': ['CVE-2024-7348 0:15.8-1.module+el8.10.0+22212+a51fe170'],
    });
    expect(await layerVulnerabilities(t, 'pg13')).toEqual({});
    expect(await layerVulnerabilities(t, 'pg-plain')).toEqual({});
  });

  it("matches a CSAF VEX entry naming a module's source package (pkg:rpmmod/redhat/ruby:2.6/ruby) to the binaries built from it in that stream only", async () => {
    const t = await testApp();
    const server = await startFeedServer();
    const product = { id: 'red_hat_enterprise_linux_8', cpe: 'cpe:/o:redhat:enterprise_linux:8' };
    const status = `${product.id}:ruby:2.6/ruby`;
    // The shape of Red Hat's documents for an unfixed module component (only what is read).
    const document = {
      document: { aggregate_severity: { text: 'Moderate' }, category: 'csaf_vex', tracking: { id: 'CVE-2099-2600', status: 'final' } },
      product_tree: {
        branches: [
          {
            category: 'vendor',
            name: 'Red Hat',
            branches: [
              {
                category: 'product_name',
                name: 'Red Hat Enterprise Linux 8',
                product: {
                  name: 'Red Hat Enterprise Linux 8',
                  product_id: product.id,
                  product_identification_helper: { cpe: product.cpe },
                },
              },
              {
                category: 'product_version',
                name: 'ruby:2.6/ruby',
                product: {
                  name: 'ruby:2.6/ruby',
                  product_id: 'ruby:2.6/ruby',
                  product_identification_helper: { purl: 'pkg:rpmmod/redhat/ruby:2.6/ruby' },
                },
              },
            ],
          },
        ],
        relationships: [
          {
            category: 'default_component_of',
            full_product_name: { name: 'ruby:2.6/ruby as a component of Red Hat Enterprise Linux 8', product_id: status },
            product_reference: 'ruby:2.6/ruby',
            relates_to_product_reference: product.id,
          },
        ],
      },
      vulnerabilities: [
        {
          cve: 'CVE-2099-2600',
          product_status: { known_affected: [status] },
          remediations: [{ category: 'no_fix_planned', details: 'Will not fix', product_ids: [status] }],
        },
      ],
    };
    await runVexUpdater(t.pool, server, { '2099/cve-2099-2600.json': JSON.stringify(document) });
    const rubyLibs = (release: string, label?: string): HeaderSpec => ({
      name: 'ruby-libs',
      version: '2.6.10',
      release,
      arch: 'x86_64',
      sourceRpm: `ruby-2.6.10-${release}.src.rpm`,
      ...(label ? { modularityLabel: label } : {}),
    });
    await indexLayer(
      t,
      server,
      'ruby-26',
      rhel8Layer([rubyLibs('1.module+el8.8.0+18268+7a5e2a0f', 'ruby:2.6:8080020230109155446:63b34585')]),
    );
    await indexLayer(
      t,
      server,
      'ruby-30',
      rhel8Layer([rubyLibs('1.module+el8.8.0+18268+7a5e2a0f', 'ruby:3.0:8080020230109155446:63b34585')]),
    );
    await indexLayer(t, server, 'ruby-plain', rhel8Layer([rubyLibs('1.el8')]));

    expect(await layerVulnerabilities(t, 'ruby-26')).toEqual({
      'ruby-libs 2.6.10-1.module+el8.8.0+18268+7a5e2a0f': ['CVE-2099-2600 None'],
    });
    expect(await layerVulnerabilities(t, 'ruby-30')).toEqual({});
    expect(await layerVulnerabilities(t, 'ruby-plain')).toEqual({});
  });
});
