import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { oracleSeverity, parseOracleOval } from '../../src/ecosystems/oracle/oval.js';

const fixture = (name: string) => createReadStream(new URL(`../fixtures/feeds/oracle/${name}`, import.meta.url));

const parse = (xml: string) => parseOracleOval(Readable.from([Buffer.from(xml)]));

const doc = (definitions: string) =>
  `<oval_definitions xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5" xmlns:oval="http://oval.mitre.org/XMLSchema/oval-common-5">` +
  `<generator><oval:product_name>Oracle Errata System</oval:product_name></generator><definitions>${definitions}</definitions></oval_definitions>`;

const c = (comment: string) => `<criterion test_ref="oval:com.oracle.elsa:tst:1" comment="${comment}"/>`;
const and = (...children: string[]) => `<criteria operator="AND">${children.join('')}</criteria>`;
const or = (...children: string[]) => `<criteria operator="OR">${children.join('')}</criteria>`;
const pkg = (name: string, evr: string, major: number) =>
  and(c(`${name} is earlier than ${evr}`), c(`${name} is signed with the Oracle Linux ${major} key`));

function elsa(opts: {
  id: string;
  title?: string;
  severity?: string;
  platforms?: readonly number[];
  cpes?: readonly string[];
  klass?: string;
  criteria: string;
  /** The ref_ids of the `source="CVE"` references. */
  cves?: readonly string[];
}): string {
  const cves = opts.cves ?? ['CVE-2099-0001'];
  return (
    `<definition id="oval:com.oracle.elsa:def:${opts.id.replace(/\D/g, '')}" version="501" class="${opts.klass ?? 'patch'}"><metadata>` +
    `<title>\n${opts.title ?? `${opts.id}: example security update (IMPORTANT)`}\n</title>` +
    `<affected family="unix">${(opts.platforms ?? []).map((m) => `<platform>Oracle Linux ${m}</platform>`).join('')}</affected>` +
    `<reference source="elsa" ref_id="${opts.id}" ref_url="https://linux.oracle.com/errata/${opts.id}.html"/>` +
    cves.map((id) => `<reference source="CVE" ref_id="${id}" ref_url="https://linux.oracle.com/cve/${id}.html"/>`).join('') +
    `<description>\n[1.0-1]\n- fix for CVE-2099-0001\n</description><advisory><severity>${opts.severity ?? 'IMPORTANT'}</severity>` +
    `<rights>Copyright 2099 Oracle, Inc.</rights><issued date="2099-01-03"/><cve>CVE-2099-0001</cve>` +
    (opts.cpes ? `<affected_cpe_list>${opts.cpes.map((x) => `<cpe>${x}</cpe>`).join('')}</affected_cpe_list>` : '') +
    `</advisory></metadata>${opts.criteria}</definition>`
  );
}

describe('parseOracleOval on real excerpts', () => {
  it('reads ELSA-2007-0057 (Oracle Linux 5) and ELSA-2018-4250 (Oracle Linux 6)', async () => {
    const data = await parseOracleOval(fixture('com.oracle.elsa-excerpt.xml'));
    expect(data.namespaces).toEqual(['oracle:5', 'oracle:6']);
    expect(data.vulnerabilities).toHaveLength(2);
    const [bind, uek] = data.vulnerabilities;
    expect(bind).toEqual({
      namespace: 'oracle:5',
      name: 'ELSA-2007-0057',
      description:
        '[30:9.3.3-8] - added fix for #224445 - CVE-2007-0493 BIND might crash after attempting to read free()-ed memory - added fix for #225229 - CVE-2007-0494 BIND dnssec denial of service - Resolves: rhbz#224445 - Resolves: rhbz#225229',
      link: 'http://linux.oracle.com/errata/ELSA-2007-0057.html',
      severity: 'Medium',
      metadata: null,
      fixedIn: ['bind', 'bind-chroot', 'bind-devel', 'bind-libbind-devel', 'bind-libs', 'bind-sdb', 'bind-utils', 'caching-nameserver'].map(
        (feature) => ({ feature, version: '30:9.3.3-8.el5' }),
      ),
      cves: ['CVE-2007-0493', 'CVE-2007-0494'],
    });
    expect(uek?.namespace).toBe('oracle:6');
    expect(uek?.name).toBe('ELSA-2018-4250');
    expect(uek?.severity).toBe('High');
    expect(uek?.link).toBe('http://linux.oracle.com/errata/ELSA-2018-4250.html');
    expect(uek?.metadata).toBeNull();
    // Its four source="CVE" references in document order (not sorted), each once.
    expect(uek?.cves).toEqual(['CVE-2018-7566', 'CVE-2017-13695', 'CVE-2018-16658', 'CVE-2018-7492']);
    expect(
      uek?.description.startsWith(
        "[2.6.39-400.302.2] - Revert 'Fix up non-directory creation in SGID directories' (Brian Maly) [Orabug: 28781234] [2.6.39-400.302.1]",
      ),
    ).toBe(true);
    expect(
      uek?.description.endsWith('- exec: Limit arg stack to at most 75% of _STK_LIM (Kees Cook) [Orabug: 28710024] {CVE-2018-14634}'),
    ).toBe(true);
    expect(uek?.fixedIn).toEqual(
      ['kernel-uek', 'kernel-uek-debug', 'kernel-uek-debug-devel', 'kernel-uek-devel', 'kernel-uek-doc', 'kernel-uek-firmware'].map(
        (feature) => ({
          feature,
          version: '0:2.6.39-400.302.2.el6uek',
        }),
      ),
    );
  });

  it('reads ELSA-2015-1193 (Oracle Linux 7, xerces-c)', async () => {
    const data = await parseOracleOval(fixture('com.oracle.elsa-ol7-excerpt.xml'));
    expect(data).toEqual({
      namespaces: ['oracle:7'],
      vulnerabilities: [
        {
          namespace: 'oracle:7',
          name: 'ELSA-2015-1193',
          description: '[3.1.1-7] Resolves: rhbz#1217104 CVE-2015-0252',
          link: 'http://linux.oracle.com/errata/ELSA-2015-1193.html',
          severity: 'Medium',
          metadata: null,
          fixedIn: [
            { feature: 'xerces-c', version: '0:3.1.1-7.el7_1' },
            { feature: 'xerces-c-devel', version: '0:3.1.1-7.el7_1' },
            { feature: 'xerces-c-doc', version: '0:3.1.1-7.el7_1' },
          ],
          cves: ['CVE-2015-0252'],
        },
      ],
    });
  });
});

describe('parseOracleOval rules', () => {
  it('splits a definition covering two majors into one vulnerability per namespace', async () => {
    const data = await parse(
      doc(
        elsa({
          id: 'ELSA-2099-1234',
          platforms: [8, 9],
          criteria: or(
            and(
              c('Oracle Linux 8 is installed'),
              or(pkg('openssl', '1:1.1.1k-12.0.1.el8_9', 8), pkg('openssl-libs', '1:1.1.1k-12.0.1.el8_9', 8)),
            ),
            and(c('Oracle Linux 9 is installed'), or(pkg('openssl', '1:3.0.7-99.0.1.el9_4', 9))),
          ),
        }),
      ),
    );
    expect(data.namespaces).toEqual(['oracle:8', 'oracle:9']);
    expect(data.vulnerabilities.map((v) => [v.namespace, v.cves])).toEqual([
      ['oracle:8', ['CVE-2099-0001']],
      ['oracle:9', ['CVE-2099-0001']],
    ]);
    expect(data.vulnerabilities.map((v) => [v.namespace, v.name, v.severity, v.link, v.description, v.fixedIn])).toEqual([
      [
        'oracle:8',
        'ELSA-2099-1234',
        'High',
        'https://linux.oracle.com/errata/ELSA-2099-1234.html',
        '[1.0-1] - fix for CVE-2099-0001',
        [
          { feature: 'openssl', version: '1:1.1.1k-12.0.1.el8_9' },
          { feature: 'openssl-libs', version: '1:1.1.1k-12.0.1.el8_9' },
        ],
      ],
      [
        'oracle:9',
        'ELSA-2099-1234',
        'High',
        'https://linux.oracle.com/errata/ELSA-2099-1234.html',
        '[1.0-1] - fix for CVE-2099-0001',
        [{ feature: 'openssl', version: '1:3.0.7-99.0.1.el9_4' }],
      ],
    ]);
  });

  it('lists the well-formed CVE reference ids in document order, each once; none → no cves', async () => {
    const criteria = and(c('Oracle Linux 9 is installed'), or(pkg('a', '0:1-1.el9', 9)));
    const data = await parse(
      doc(
        elsa({
          id: 'ELSA-2099-6000',
          cves: ['CVE-2099-60000', 'CVE-2098-0002', ' CVE-2099-0003 ', 'CVE-2099-60000', 'CVE-2099-6', 'ELSA-2099-6000'],
          criteria,
        }) + elsa({ id: 'ELSA-2099-6001', cves: [], criteria }),
      ),
    );
    const [listed, none] = data.vulnerabilities;
    expect(listed?.name).toBe('ELSA-2099-6000');
    expect(listed?.cves).toEqual(['CVE-2099-60000', 'CVE-2098-0002', 'CVE-2099-0003']);
    expect(none?.name).toBe('ELSA-2099-6001');
    expect(none).not.toHaveProperty('cves');
  });

  it("limits each arch branch's fixes to the packages of such a machine; one branch's package named twice: the higher fix", async () => {
    const data = await parse(
      doc(
        elsa({
          id: 'ELSA-2099-2000',
          criteria: and(
            c('Oracle Linux 8 is installed'),
            or(
              and(c('Oracle Linux arch is aarch64'), or(pkg('glibc', '0:2.28-236.0.2.el8', 8))),
              and(
                c('Oracle Linux arch is x86_64'),
                or(
                  pkg('glibc', '0:2.28-236.0.1.el8', 8),
                  pkg('glibc-devel', '0:2.28-236.0.1.el8', 8),
                  pkg('glibc-devel', '0:2.28-235.el8', 8),
                ),
              ),
              pkg('tzdata', '0:2024a-1.el8', 8),
            ),
          ),
        }),
      ),
    );
    expect(data.vulnerabilities).toHaveLength(1);
    expect(data.vulnerabilities[0]?.namespace).toBe('oracle:8');
    // An x86_64 machine runs x86_64, multilib i686 and noarch packages; an aarch64 one aarch64 and noarch.
    const x86 = ['athlon', 'i386', 'i486', 'i586', 'i686', 'noarch', 'x86_64'];
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([
      { feature: 'glibc', version: '0:2.28-236.0.2.el8', arches: ['aarch64', 'noarch'] },
      { feature: 'glibc', version: '0:2.28-236.0.1.el8', arches: x86 },
      { feature: 'glibc-devel', version: '0:2.28-236.0.1.el8', arches: x86 },
      // Beside no arch criterion: every architecture.
      { feature: 'tzdata', version: '0:2024a-1.el8' },
    ]);
  });

  it('skips ksplice versions and definitions whose CPEs are all userspace_ksplice', async () => {
    const data = await parse(
      doc(
        elsa({
          id: 'ELSA-2099-3000',
          criteria: and(
            c('Oracle Linux 7 is installed'),
            or(pkg('glibc', '2:2.17-326.0.3.ksplice1.el7_9', 7), pkg('nss', '0:3.90.0-2.el7_9', 7)),
          ),
        }) +
          elsa({
            id: 'ELSA-2099-3001',
            cpes: ['cpe:/a:oracle:linux:8::userspace_ksplice'],
            criteria: and(c('Oracle Linux 8 is installed'), or(pkg('openssl', '1:1.1.1k-12.el8_9', 8))),
          }) +
          elsa({
            id: 'ELSA-2099-3002',
            cpes: ['cpe:/a:oracle:linux:8::userspace_ksplice', 'cpe:/o:oracle:linux:8:10:baseos_latest'],
            criteria: and(c('Oracle Linux 8 is installed'), or(pkg('zlib', '0:1.2.11-25.el8', 8))),
          }),
      ),
    );
    expect(data.vulnerabilities.map((v) => [v.name, v.namespace, v.fixedIn])).toEqual([
      ['ELSA-2099-3000', 'oracle:7', [{ feature: 'nss', version: '0:3.90.0-2.el7_9' }]],
      ['ELSA-2099-3002', 'oracle:8', [{ feature: 'zlib', version: '0:1.2.11-25.el8' }]],
    ]);
    // The skipped ksplice-only advisory still says the document covers oracle:8.
    expect(data.namespaces).toEqual(['oracle:7', 'oracle:8']);
  });

  it('maps severities, takes the name from the elsa reference when the title has none', async () => {
    const criteria = and(c('Oracle Linux 9 is installed'), or(pkg('a', '0:1-1.el9', 9)));
    const data = await parse(
      doc(
        elsa({ id: 'ELSA-2099-0001', severity: 'N/A', criteria }) +
          elsa({ id: 'ELSA-2099-0002', severity: 'LOW', criteria }) +
          elsa({ id: 'ELSA-2099-0003', severity: 'MODERATE', criteria }) +
          elsa({ id: 'ELSA-2099-0004', severity: 'CRITICAL', criteria }) +
          elsa({ id: 'ELSA-2099-0005', severity: 'SEVERE', criteria }) +
          elsa({ id: 'ELSA-2099-0006', title: 'Unbreakable Enterprise kernel update (IMPORTANT)', criteria }),
      ),
    );
    expect(data.vulnerabilities.map((v) => [v.name, v.severity])).toEqual([
      ['ELSA-2099-0001', 'Negligible'],
      ['ELSA-2099-0002', 'Low'],
      ['ELSA-2099-0003', 'Medium'],
      ['ELSA-2099-0004', 'Critical'],
      ['ELSA-2099-0005', 'Unknown'],
      ['ELSA-2099-0006', 'High'],
    ]);
  });

  it('uses the affected platforms when no "Oracle Linux N is installed" criterion holds beside a package', async () => {
    const data = await parse(doc(elsa({ id: 'ELSA-2099-4000', platforms: [6, 7], criteria: or(pkg('tzdata', '0:2099a-1.el6', 6)) })));
    expect(data.namespaces).toEqual(['oracle:6', 'oracle:7']);
    expect(data.vulnerabilities.map((v) => [v.namespace, v.fixedIn])).toEqual([
      ['oracle:6', [{ feature: 'tzdata', version: '0:2099a-1.el6' }]],
      ['oracle:7', [{ feature: 'tzdata', version: '0:2099a-1.el6' }]],
    ]);
  });

  it('skips invalid versions, contradictory majors and non-patch definitions', async () => {
    const data = await parse(
      doc(
        elsa({
          id: 'ELSA-2099-5000',
          criteria: or(
            and(
              c('Oracle Linux 8 is installed'),
              or(pkg('bad', '0:1.0#1-1.el8', 8), pkg('worse', 'z:1-1.el8', 8), pkg('good', '0:1.0-1.el8', 8)),
            ),
            // one alternative cannot hold both Oracle Linux 8 and 9
            and(c('Oracle Linux 8 is installed'), c('Oracle Linux 9 is installed'), pkg('impossible', '0:1-1.el9', 9)),
          ),
        }) +
          elsa({ id: 'ELSA-2099-5001', klass: 'vulnerability', criteria: and(c('Oracle Linux 8 is installed'), pkg('x', '0:1-1.el8', 8)) }),
      ),
    );
    expect(data.vulnerabilities.map((v) => [v.name, v.namespace, v.fixedIn])).toEqual([
      ['ELSA-2099-5000', 'oracle:8', [{ feature: 'good', version: '0:1.0-1.el8' }]],
    ]);
  });

  it('rejects malformed XML and a document that is not OVAL with clear errors', async () => {
    await expect(parse(doc('<definition class="patch" id="x"><metadata><title>x</metadata>'))).rejects.toThrow(
      /^Oracle OVAL: malformed XML at \d+:\d+: /,
    );
    await expect(parse('<oval_definitions><definitions>')).rejects.toThrow(
      /^Oracle OVAL: malformed XML at \d+:\d+: unclosed tag: definitions/,
    );
    await expect(parse('<?xml version="1.0"?><rss><channel/></rss>')).rejects.toThrow(
      'Oracle OVAL: not an OVAL definitions document (root element <rss>)',
    );
  });
});

describe('oracleSeverity', () => {
  it('is case-insensitive', () => {
    expect(['n/a', 'Low', 'moderate', 'Important', 'critical', ''].map(oracleSeverity)).toEqual([
      'Negligible',
      'Low',
      'Medium',
      'High',
      'Critical',
      'Unknown',
    ]);
  });
});
