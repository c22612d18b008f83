import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readOval } from '../../src/ecosystems/oval/reader.js';
import { parseRedHatOval, redHatSeverity } from '../../src/ecosystems/rhel/oval.js';

const fixture = (path: string) => createReadStream(new URL(`../fixtures/feeds/redhat/${path}`, import.meta.url));

const parse = (xml: string, major = 9) => parseRedHatOval(Readable.from([Buffer.from(xml)]), major);

const doc = (definitions: string) =>
  `<?xml version="1.0" encoding="utf-8"?><oval_definitions xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5" ` +
  `xmlns:red-def="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux"><definitions>${definitions}</definitions>` +
  `<tests/><objects/><states/></oval_definitions>`;

const c = (comment: string, negate = false) => `<criterion comment="${comment}" test_ref="oval:t:tst:1"${negate ? ' negate="true"' : ''}/>`;
const and = (...children: string[]) => `<criteria operator="AND">${children.join('')}</criteria>`;
const or = (...children: string[]) => `<criteria operator="OR">${children.join('')}</criteria>`;
const pkg = (name: string, evr: string) => and(c(`${name} is earlier than ${evr}`), c(`${name} is signed with Red Hat redhatrelease2 key`));
const installed = (name: string) => and(c(`${name} is installed`), c(`${name} is signed with Red Hat redhatrelease2 key`));

function patch(opts: {
  id: string;
  title: string;
  severity?: string;
  description?: string;
  criteria: string;
  /** The `<reference>` elements after the RHSA one, as [source, ref_id]. */
  references?: ReadonlyArray<readonly [string, string]>;
}): string {
  const advisory = opts.title.split(': ')[0] as string;
  const references = opts.references ?? [['CVE', 'CVE-2099-0001']];
  return (
    `<definition class="patch" id="oval:com.redhat.rhsa:def:${opts.id}" version="635"><metadata><title>${opts.title}</title>` +
    `<affected family="unix"><platform>Red Hat Enterprise Linux 9</platform></affected>` +
    `<reference ref_id="${advisory}" ref_url="https://access.redhat.com/errata/${advisory}" source="RHSA"/>` +
    references
      .map(([source, id]) => `<reference ref_id="${id}" ref_url="https://access.redhat.com/security/cve/${id}" source="${source}"/>`)
      .join('') +
    `<description>${opts.description ?? 'Example.'}</description><advisory from="secalert@redhat.com">` +
    (opts.severity === undefined ? '' : `<severity>${opts.severity}</severity>`) +
    `<affected_cpe_list><cpe>cpe:/o:redhat:enterprise_linux:9</cpe></affected_cpe_list></advisory></metadata>${opts.criteria}</definition>`
  );
}

function unpatched(opts: { id: string; cve: string; resolutions: string; severity?: string; criteria: string; idPrefix?: string }): string {
  return (
    `<definition class="vulnerability" id="oval:com.redhat.${opts.idPrefix ?? 'cve'}:def:${opts.id}" version="635"><metadata>` +
    `<title>${opts.cve} libfoo: example issue (low)</title>` +
    `<reference ref_id="${opts.cve}" ref_url="https://access.redhat.com/security/cve/${opts.cve}" source="CVE"/>` +
    `<description>Unpatched ${opts.cve}.</description><advisory from="secalert@redhat.com"><severity>${opts.severity ?? 'Low'}</severity>` +
    `<affected>${opts.resolutions}</affected></advisory></metadata>${opts.criteria}</definition>`
  );
}

const resolution = (state: string, ...components: string[]) =>
  `<resolution state="${state}">${components.map((x) => `<component>${x}</component>`).join('')}</resolution>`;

const rhel9 = (...children: string[]) =>
  or(c('Red Hat Enterprise Linux must be installed'), and(c('Red Hat Enterprise Linux 9 is installed'), ...children));

describe('parseRedHatOval on real excerpts', () => {
  it('reads RHSA-2020:1980 (single-advisory OVAL): 15 git packages, High, errata link', async () => {
    const data = await parseRedHatOval(fixture('oval/com.redhat.rhsa-20201980.xml'), 8);
    expect(data.namespaces).toEqual(['rhel:8']);
    expect(data.vulnerabilities).toHaveLength(1);
    const [v] = data.vulnerabilities;
    expect(v?.namespace).toBe('rhel:8');
    expect(v?.name).toBe('RHSA-2020:1980');
    expect(v?.severity).toBe('High');
    expect(v?.link).toBe('https://access.redhat.com/errata/RHSA-2020:1980');
    expect(v?.metadata).toBeNull();
    expect(v?.cves).toEqual(['CVE-2020-11008']);
    expect(v?.description).toBe(
      'Git is a distributed revision control system with a decentralized architecture. As opposed to centralized version control systems with a client-server model, Git ensures that each working copy of a Git repository is an exact copy with complete revision history. This not only allows the user to work on and contribute to projects without the need to have permission to push the changes to their official repositories, but also makes it possible for the user to work with no network connection. The following packages have been upgraded to a later upstream version: git (2.18.4). (BZ#1826008) Security Fix(es): * git: Crafted URL containing new lines, empty host or lacks a scheme can cause credential leak (CVE-2020-11008) For more details about the security issue(s), including the impact, a CVSS score, acknowledgments, and other related information, refer to the CVE page(s) listed in the References section.',
    );
    const fixed = '0:2.18.4-2.el8_2';
    // The architecture-dependent packages' states carry <arch operation="pattern match">aarch64|ppc64le|s390x|x86_64:
    // an i686 git does not satisfy the test. The noarch ones' states name no architecture.
    const arches = ['aarch64', 'ppc64le', 's390x', 'x86_64'];
    const archDependent = new Set(['git', 'git-core', 'git-daemon', 'git-debugsource', 'git-instaweb', 'git-subtree', 'git-svn']);
    expect(v?.fixedIn).toEqual(
      [
        'git',
        'git-all',
        'git-core',
        'git-core-doc',
        'git-daemon',
        'git-debugsource',
        'git-email',
        'git-gui',
        'git-instaweb',
        'git-subtree',
        'git-svn',
        'gitk',
        'gitweb',
        'perl-Git',
        'perl-Git-SVN',
      ].map((feature) => ({ feature, version: fixed, ...(archDependent.has(feature) ? { arches } : {}) })),
    );
  });

  it('reads the same advisory as nothing for another major', async () => {
    const data = await parseRedHatOval(fixture('oval/com.redhat.rhsa-20201980.xml'), 7);
    expect(data).toEqual({ namespaces: ['rhel:7'], vulnerabilities: [] });
  });

  it('reads CVE-2021-35937 (unpatched stream, "Affected"): 16 rpm packages with no fix', async () => {
    const data = await parseRedHatOval(fixture('oval-v2/rhel-8-rpm-unpatched-excerpt.xml'), 8);
    expect(data.namespaces).toEqual(['rhel:8']);
    expect(data.vulnerabilities).toHaveLength(1);
    const [v] = data.vulnerabilities;
    expect(v?.name).toBe('CVE-2021-35937');
    expect(v?.namespace).toBe('rhel:8');
    expect(v?.severity).toBe('Medium');
    expect(v?.link).toBe('https://access.redhat.com/security/cve/CVE-2021-35937');
    expect(v?.metadata).toBeNull();
    // Named by its CVE: no list, though the definition has a CVE reference.
    expect(v).not.toHaveProperty('cves');
    expect(v?.description.startsWith('DOCUMENTATION: A race condition vulnerability was found in rpm. A local unprivileged user')).toBe(
      true,
    );
    expect(v?.description).toContain('considerably. MITIGATION: Mitigation for this issue');
    expect(v?.description).not.toMatch(/\s{2}|\n/);
    expect(v?.fixedIn).toEqual(
      [
        'python3-rpm',
        'rpm',
        'rpm-apidocs',
        'rpm-build',
        'rpm-build-libs',
        'rpm-cron',
        'rpm-debugsource',
        'rpm-devel',
        'rpm-libs',
        'rpm-plugin-fapolicyd',
        'rpm-plugin-ima',
        'rpm-plugin-prioreset',
        'rpm-plugin-selinux',
        'rpm-plugin-syslog',
        'rpm-plugin-systemd-inhibit',
        'rpm-sign',
      ].map((feature) => ({ feature, version: null })),
    );
  });

  it('keeps the module-stream advisories of the abbreviated RHEL 8 stream, each entry scoped to its stream (idm:DL1, nodejs:12; RHBA/RHEA, severity None)', async () => {
    const data = await parseRedHatOval(fixture('oval-v2/rhel-8.oval-abbreviated.xml'), 8);
    expect(data.namespaces).toEqual(['rhel:8']);
    expect(data.vulnerabilities.map((v) => [v.name, v.severity, v.link, v.fixedIn.length])).toEqual([
      ['RHBA-2019:4268', 'Negligible', 'https://access.redhat.com/errata/RHBA-2019:4268', 32],
      ['RHEA-2020:0330', 'Negligible', 'https://access.redhat.com/errata/RHEA-2020:0330', 7],
    ]);
    // The source="CVE" references of each definition, in document order.
    expect(data.vulnerabilities.map((v) => [v.name, v.cves])).toEqual([
      ['RHBA-2019:4268', ['CVE-2019-10195', 'CVE-2019-14867']],
      ['RHEA-2020:0330', ['CVE-2019-16775', 'CVE-2019-16776', 'CVE-2019-16777']],
    ]);
    expect(data.vulnerabilities[0]?.description).toBe(
      'Bug Fix(es): * IPA upgrade fails for latest ipa package when adtrust is installed (BZ#1773516)',
    );
    // Every entry of the idm:DL1 advisory is the stream's, for the architectures of its state.
    expect(new Set(data.vulnerabilities[0]?.fixedIn.map((f) => f.module))).toEqual(new Set(['idm:DL1']));
    expect(data.vulnerabilities[0]?.fixedIn.filter((f) => f.feature === 'ipa-client')).toEqual([
      { feature: 'ipa-client', version: '0:4.8.0-13.module+el8.1.0+4923+c6efe041', module: 'idm:DL1' },
    ]);
    expect(data.vulnerabilities[1]?.fixedIn).toEqual([
      { feature: 'nodejs', version: '1:12.14.1-1.module+el8.1.0+5466+30f75629', module: 'nodejs:12' },
      { feature: 'nodejs-debugsource', version: '1:12.14.1-1.module+el8.1.0+5466+30f75629', module: 'nodejs:12' },
      { feature: 'nodejs-devel', version: '1:12.14.1-1.module+el8.1.0+5466+30f75629', module: 'nodejs:12' },
      { feature: 'nodejs-docs', version: '1:12.14.1-1.module+el8.1.0+5466+30f75629', module: 'nodejs:12' },
      { feature: 'nodejs-nodemon', version: '0:1.18.3-1.module+el8.1.0+3369+37ae6a45', module: 'nodejs:12' },
      { feature: 'nodejs-packaging', version: '0:17-3.module+el8.1.0+3369+37ae6a45', module: 'nodejs:12' },
      { feature: 'npm', version: '1:6.13.4-1.12.14.1.1.module+el8.1.0+5466+30f75629', module: 'nodejs:12' },
    ]);
  });
});

describe('parseRedHatOval rules', () => {
  it('stops reading once the states are read: the variables that follow them are not needed', async () => {
    const definitions = doc(
      patch({
        id: '20990002',
        title: 'RHSA-2099:0002: zlib update (Low)',
        severity: 'Low',
        description: 'zlib',
        criteria: rhel9(pkg('zlib', '0:1.2.11-99.el9')),
      }),
    ).split('</oval_definitions>')[0]!;
    let pulledAfter = 0;
    const input = Readable.from(
      (async function* () {
        yield Buffer.from(definitions);
        // Never well-formed and never ending: only a reader that reads on would notice.
        for (;;) {
          pulledAfter += 1;
          yield Buffer.from('<variables><broken attr=');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })(),
    );
    const data = await parseRedHatOval(input, 9);
    expect(data.vulnerabilities.map((v) => `${v.name} ${v.fixedIn.map((f) => f.version).join()}`)).toEqual([
      'RHSA-2099:0002 0:1.2.11-99.el9',
    ]);
    expect(pulledAfter).toBeLessThanOrEqual(1);
    expect(input.destroyed).toBe(true);
  });

  it('patch: name, severity, link, collapsed description and every "is earlier than" package', async () => {
    const data = await parse(
      doc(
        patch({
          id: '20990001',
          title: 'RHSA-2099:0001: openssl security update (Important)',
          severity: 'Important',
          description: 'OpenSSL fix.\n\n  Security Fix(es):\n\n* openssl: example (CVE-2099-0001)',
          criteria: rhel9(or(pkg('openssl', '1:3.0.7-99.el9_4'), pkg('openssl-libs', '1:3.0.7-99.el9_4'))),
        }),
      ),
    );
    expect(data).toEqual({
      namespaces: ['rhel:9'],
      vulnerabilities: [
        {
          namespace: 'rhel:9',
          name: 'RHSA-2099:0001',
          description: 'OpenSSL fix. Security Fix(es): * openssl: example (CVE-2099-0001)',
          link: 'https://access.redhat.com/errata/RHSA-2099:0001',
          severity: 'High',
          metadata: null,
          fixedIn: [
            { feature: 'openssl', version: '1:3.0.7-99.el9_4' },
            { feature: 'openssl-libs', version: '1:3.0.7-99.el9_4' },
          ],
          cves: ['CVE-2099-0001'],
        },
      ],
    });
  });

  it('patch: cves are the well-formed ids of the CVE references in document order, each once; none → no cves', async () => {
    const data = await parse(
      doc(
        patch({
          id: '20990030',
          title: 'RHSA-2099:0030: kernel security update (Important)',
          references: [
            ['CVE', 'CVE-2099-30000'],
            ['BZ', 'CVE-2099-0002'],
            ['CVE', 'CVE-2098-1234'],
            ['cve', ' CVE-2099-0003 '],
            ['CVE', 'CVE-2099-30000'],
            ['CVE', 'CVE-2099-1'],
            ['CVE', 'not a cve'],
          ],
          criteria: rhel9(or(pkg('kernel', '0:5.14.0-99.el9'))),
        }) +
          patch({
            id: '20990031',
            title: 'RHBA-2099:0031: tzdata bug fix update (None)',
            references: [],
            criteria: rhel9(or(pkg('tzdata', '0:2099a-1.el9'))),
          }),
      ),
    );
    expect(data.vulnerabilities.map((v) => v.name)).toEqual(['RHBA-2099:0031', 'RHSA-2099:0030']);
    const [bugfix, kernel] = data.vulnerabilities;
    expect(kernel?.cves).toEqual(['CVE-2099-30000', 'CVE-2098-1234', 'CVE-2099-0003']);
    expect(bugfix).not.toHaveProperty('cves');
  });

  it('scopes packages beside "Module … is enabled" to that stream, apart from the same package outside it', async () => {
    const data = await parse(
      doc(
        patch({
          id: '20990002',
          title: 'RHSA-2099:0002: mixed update (Moderate)',
          severity: 'Moderate',
          criteria: or(
            c('Red Hat Enterprise Linux must be installed'),
            and(
              c('Red Hat Enterprise Linux 9 is installed'),
              c('Module nodejs:18 is enabled'),
              or(pkg('nodejs', '1:18.19.0-1.module+el9')),
            ),
            and(c('Red Hat Enterprise Linux 9 is installed'), or(pkg('nodejs', '1:16.20.2-4.el9'), pkg('libuv', '1:1.42.0-2.el9'))),
          ),
        }),
      ),
    );
    expect(data.vulnerabilities).toHaveLength(1);
    expect(data.vulnerabilities[0]?.severity).toBe('Medium');
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([
      { feature: 'libuv', version: '1:1.42.0-2.el9' },
      { feature: 'nodejs', version: '1:16.20.2-4.el9' },
      { feature: 'nodejs', version: '1:18.19.0-1.module+el9', module: 'nodejs:18' },
    ]);
  });

  it('gives a package that holds in a module alternative and in a plain one an entry for each (OR of facts)', async () => {
    const data = await parse(
      doc(
        patch({
          id: '20990003',
          title: 'RHSA-2099:0003: either way (Low)',
          severity: 'Low',
          criteria: and(
            c('Red Hat Enterprise Linux 9 is installed'),
            or(c('Module perl:5.32 is enabled'), c('Red Hat Enterprise Linux must be installed')),
            or(pkg('perl', '4:5.32.1-480.el9')),
          ),
        }),
      ),
    );
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([
      { feature: 'perl', version: '4:5.32.1-480.el9' },
      { feature: 'perl', version: '4:5.32.1-480.el9', module: 'perl:5.32' },
    ]);
  });

  it('drops packages beside another major; accepts packages with no major criterion', async () => {
    const data = await parse(
      doc(
        patch({
          id: '20990004',
          title: 'RHSA-2099:0004: two majors (Critical)',
          severity: 'Critical',
          criteria: or(
            and(c('Red Hat Enterprise Linux 8 is installed'), or(pkg('bash', '0:4.4.20-5.el8'))),
            and(c('Red Hat Enterprise Linux 9 is installed'), or(pkg('bash', '0:5.1.8-9.el9'))),
            pkg('zsh', '0:5.8-9.el9'),
          ),
        }),
      ),
    );
    expect(data.vulnerabilities[0]?.severity).toBe('Critical');
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([
      { feature: 'bash', version: '0:5.1.8-9.el9' },
      { feature: 'zsh', version: '0:5.8-9.el9' },
    ]);
  });

  it('skips invalid versions and negated criteria; a package named twice is affected below the higher fix', async () => {
    const data = await parse(
      doc(
        patch({
          id: '20990005',
          title: 'RHSA-2099:0005: cleanup (Low)',
          severity: 'Low',
          criteria: rhel9(
            or(
              pkg('broken', '0:1.0#2-1.el9'),
              pkg('badepoch', 'x:1.0-1.el9'),
              and(c('negated is earlier than 0:1.0-1.el9', true)),
              and(c('arch-pkg is earlier than 0:2.0-3.el9'), c('arch-pkg is signed with Red Hat redhatrelease2 key')),
              and(c('arch-pkg is earlier than 0:2.0-1.el9'), c('arch-pkg is signed with Red Hat redhatrelease2 key')),
              pkg('good', '0:1.0-1.el9'),
            ),
          ),
        }),
      ),
    );
    // OVAL: the definition holds when any of its alternatives does, so below 0:2.0-3.el9.
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([
      { feature: 'arch-pkg', version: '0:2.0-3.el9' },
      { feature: 'good', version: '0:1.0-1.el9' },
    ]);
  });

  it('limits a fix to the architectures its rpminfo state names; a state without <arch>, or an unreadable pattern, to none', async () => {
    const criterion = (test: string, comment: string) => `<criterion comment="${comment}" test_ref="oval:t:tst:${test}"/>`;
    const test = (n: string, state: string) =>
      `<red-def:rpminfo_test check="at least one" id="oval:t:tst:${n}" version="1"><red-def:object object_ref="oval:t:obj:1"/>` +
      `<red-def:state state_ref="oval:t:ste:${state}"/></red-def:rpminfo_test>`;
    const state = (n: string, arch: string | undefined, evr: string) =>
      `<red-def:rpminfo_state id="oval:t:ste:${n}" version="1">` +
      (arch === undefined ? '' : `<red-def:arch datatype="string" operation="pattern match">${arch}</red-def:arch>`) +
      `<red-def:evr datatype="evr_string" operation="less than">${evr}</red-def:evr></red-def:rpminfo_state>`;
    const xml = doc(
      patch({
        id: '20990020',
        title: 'RHSA-2099:0020: kernel update (Important)',
        criteria: rhel9(
          or(
            criterion('1', 'kernel is earlier than 0:5.14.0-2.el9'),
            criterion('2', 'kernel is earlier than 0:5.14.0-1.el9'),
            criterion('3', 'kernel-doc is earlier than 0:5.14.0-2.el9'),
            criterion('4', 'kernel-tools is earlier than 0:5.14.0-2.el9'),
          ),
        ),
      }),
    ).replace(
      '<tests/><objects/><states/>',
      `<tests>${test('1', '1')}${test('2', '2')}${test('3', '3')}${test('4', '4')}</tests><objects/>` +
        `<states>${state('1', 'aarch64|x86_64', '0:5.14.0-2.el9')}${state('2', 's390x', '0:5.14.0-1.el9')}` +
        `${state('3', undefined, '0:5.14.0-2.el9')}${state('4', 'x86_.*', '0:5.14.0-2.el9')}</states>`,
    );
    expect((await parse(xml)).vulnerabilities[0]?.fixedIn).toEqual([
      { feature: 'kernel', version: '0:5.14.0-2.el9', arches: ['aarch64', 'x86_64'] },
      { feature: 'kernel', version: '0:5.14.0-1.el9', arches: ['s390x'] },
      { feature: 'kernel-doc', version: '0:5.14.0-2.el9' },
      { feature: 'kernel-tools', version: '0:5.14.0-2.el9' },
    ]);
  });

  it('unpatched: every affected resolution state gives null FixedIn, with its fix state; other states and unaffected ids are skipped', async () => {
    const states = ['Affected', 'Fix deferred', 'Will not fix', 'Out of support scope', 'Under investigation'];
    const fixStates = [undefined, 'fix_deferred', 'will_not_fix', 'will_not_fix', undefined];
    const defs = states.map((state, i) =>
      unpatched({
        id: `2099100${i}`,
        cve: `CVE-2099-100${i}`,
        resolutions: resolution(state, 'libfoo'),
        criteria: rhel9(or(installed('libfoo'))),
      }),
    );
    defs.push(
      unpatched({
        id: '20991010',
        cve: 'CVE-2099-1010',
        resolutions: resolution('Not affected', 'libfoo'),
        criteria: rhel9(or(installed('libfoo'))),
      }),
      unpatched({ id: '20991011', cve: 'CVE-2099-1011', resolutions: '', criteria: rhel9(or(installed('libfoo'))) }),
      unpatched({
        id: '20991012',
        cve: 'CVE-2099-1012',
        idPrefix: 'unaffected',
        resolutions: resolution('Affected', 'libfoo'),
        criteria: rhel9(or(installed('libfoo'))),
      }),
    );
    const data = await parse(doc(defs.join('')));
    expect(data.vulnerabilities.map((v) => [v.name, v.link, v.severity, v.description, v.fixedIn])).toEqual(
      states.map((_, i) => [
        `CVE-2099-100${i}`,
        `https://access.redhat.com/security/cve/CVE-2099-100${i}`,
        'Low',
        `Unpatched CVE-2099-100${i}.`,
        [{ feature: 'libfoo', version: null, ...(fixStates[i] ? { state: fixStates[i] } : {}) }],
      ]),
    );
  });

  it("unpatched: a component listed only under a non-affected state is left out; a module stream's components are scoped to it", async () => {
    const data = await parse(
      doc(
        unpatched({
          id: '20992000',
          cve: 'CVE-2099-2000',
          severity: 'Important',
          resolutions: resolution('Will not fix', 'pkg-a') + resolution('Not affected', 'pkg-b'),
          criteria: or(
            c('Red Hat Enterprise Linux must be installed'),
            and(c('Red Hat Enterprise Linux 9 is installed'), or(installed('pkg-a'), installed('pkg-b'), installed('pkg-c'))),
            and(c('Red Hat Enterprise Linux 9 is installed'), c('Module php:8.1 is enabled'), or(installed('php'))),
          ),
        }),
      ),
    );
    expect(data.vulnerabilities).toEqual([
      {
        namespace: 'rhel:9',
        name: 'CVE-2099-2000',
        description: 'Unpatched CVE-2099-2000.',
        link: 'https://access.redhat.com/security/cve/CVE-2099-2000',
        severity: 'High',
        metadata: null,
        fixedIn: [
          { feature: 'php', version: null, module: 'php:8.1' },
          { feature: 'pkg-a', version: null, state: 'will_not_fix' },
          { feature: 'pkg-c', version: null },
        ],
      },
    ]);
  });

  it('merges definitions with the same advisory name and sorts by name', async () => {
    const data = await parse(
      doc(
        patch({
          id: '20990011',
          title: 'RHSA-2099:0011: b (Low)',
          severity: 'Low',
          references: [['CVE', 'CVE-2099-1100']],
          criteria: rhel9(or(pkg('b', '0:2-1.el9'))),
        }) +
          patch({ id: '20990010', title: 'RHSA-2099:0010: a (Low)', severity: 'Low', criteria: rhel9(or(pkg('a', '0:1-1.el9'))) }) +
          patch({
            id: '20990012',
            title: 'RHSA-2099:0011: b again (Critical)',
            severity: 'Critical',
            references: [['CVE', 'CVE-2099-1200']],
            criteria: rhel9(or(pkg('b', '0:1-1.el9'), pkg('b2', '0:1-1.el9'))),
          }),
      ),
    );
    expect(data.vulnerabilities.map((v) => [v.name, v.severity, v.cves, v.fixedIn])).toEqual([
      ['RHSA-2099:0010', 'Low', ['CVE-2099-0001'], [{ feature: 'a', version: '0:1-1.el9' }]],
      [
        'RHSA-2099:0011',
        'Low',
        // The first definition's, as for its text and severity.
        ['CVE-2099-1100'],
        [
          // Below either definition's fix: the higher.
          { feature: 'b', version: '0:2-1.el9' },
          { feature: 'b2', version: '0:1-1.el9' },
        ],
      ],
    ]);
  });

  it('falls back to the title for severity when the advisory has none', async () => {
    const data = await parse(doc(patch({ id: '20990020', title: 'RHSA-2099:0020: x (Low)', criteria: rhel9(or(pkg('x', '0:1-1.el9'))) })));
    expect(data.vulnerabilities[0]?.severity).toBe('Low');
  });

  it('rejects malformed XML and an invalid major with clear errors', async () => {
    await expect(parse(doc('<definition class="patch" id="x"><metadata>'))).rejects.toThrow(
      /^Red Hat OVAL \(rhel:9\): malformed XML at \d+:\d+: /,
    );
    await expect(parse('<oval_definitions><definitions><definition></definitions></oval_definitions>')).rejects.toThrow(
      /^Red Hat OVAL \(rhel:9\): malformed XML at 1:\d+: unexpected close tag/,
    );
    await expect(parse('{"not":"xml"}')).rejects.toThrow(/^Red Hat OVAL \(rhel:9\): malformed XML/);
    await expect(parse(doc(''), 0)).rejects.toThrow('Red Hat OVAL: invalid major release 0');
  });

  it('refuses a criteria tree whose alternatives explode, naming the definition', async () => {
    // 13 independent choices of an OS-major fact: 2^13 distinct fact sets.
    const choices = Array.from({ length: 13 }, (_, i) =>
      or(c(`Red Hat Enterprise Linux ${i + 10} is installed`), c('Red Hat Enterprise Linux must be installed')),
    );
    await expect(
      parse(doc(patch({ id: '20990099', title: 'RHSA-2099:0099: x (Low)', criteria: and(...choices, or(pkg('x', '0:1-1.el9'))) }))),
    ).rejects.toThrow(
      'Red Hat OVAL (rhel:9): definition oval:com.redhat.rhsa:def:20990099: OVAL criteria too complex (more than 4096 fact sets)',
    );
  });
});

describe('redHatSeverity', () => {
  it('maps every Red Hat impact', () => {
    expect(['None', 'Low', 'Moderate', 'Important', 'Critical', 'Unknown', ''].map((s) => redHatSeverity(s))).toEqual([
      'Negligible',
      'Low',
      'Medium',
      'High',
      'Critical',
      'Unknown',
      'Unknown',
    ]);
  });
});

describe('parseRedHatOval streaming', () => {
  it('parses a ~20 MB document generated as a stream, emitting definitions before the input ends', async () => {
    const COUNT = 7000;
    let produced = 0;
    let definitionsSeen = 0;
    let seenWhenDone = -1;
    const text = 'Security Fix(es): ' + 'y'.repeat(1200);
    function* generate(): Generator<Buffer> {
      const emit = (s: string): Buffer => {
        produced += s.length;
        return Buffer.from(s);
      };
      yield emit('<?xml version="1.0"?><oval_definitions xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5"><definitions>');
      for (let i = 0; i < COUNT; i++) {
        const pkgs = Array.from({ length: 10 }, (_, p) => pkg(`pkg${p}-${i % 300}`, `0:1.${i}-${p}.el9`)).join('');
        yield emit(
          patch({
            id: String(20990000 + i),
            title: `RHSA-2099:${10000 + i}: synthetic update (Moderate)`,
            severity: 'Moderate',
            description: text,
            criteria: rhel9(or(pkgs)),
          }),
        );
      }
      seenWhenDone = definitionsSeen;
      yield emit('</definitions></oval_definitions>');
    }
    // The reader hands definitions over while the generator is still producing.
    await readOval(Readable.from(generate()), { label: 'test', onDefinition: () => definitionsSeen++ });
    expect(definitionsSeen).toBe(COUNT);
    expect(seenWhenDone).toBeGreaterThan(COUNT - 100);
    expect(produced).toBeGreaterThan(20_000_000);

    const started = Date.now();
    const data = await parseRedHatOval(Readable.from(generate()), 9);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(data.vulnerabilities).toHaveLength(COUNT);
    expect(data.vulnerabilities.reduce((n, v) => n + v.fixedIn.length, 0)).toBe(COUNT * 10);
    const v = data.vulnerabilities[4321];
    expect(v?.name).toBe('RHSA-2099:14321');
    expect(v?.severity).toBe('Medium');
    expect(v?.fixedIn[0]).toEqual({ feature: 'pkg0-121', version: '0:1.4321-0.el9' });
    expect(v?.fixedIn[9]).toEqual({ feature: 'pkg9-121', version: '0:1.4321-9.el9' });
  });
});
