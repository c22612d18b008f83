import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseCriterionComment, parseUbuntuOval, ubuntuSeverity } from '../../src/ecosystems/ubuntu/oval.js';
import { UBUNTU_RELEASES, ubuntuCodename, ubuntuNamespace } from '../../src/ecosystems/ubuntu/releases.js';

const FIXTURE = new URL('../fixtures/feeds/ubuntu/com.ubuntu.xenial.cve.oval-excerpt.xml', import.meta.url);

/** One criterion of a synthetic definition and the test/object/state/variable behind it. */
interface Crit {
  readonly comment: string;
  readonly binaries?: readonly string[];
  readonly evr?: string;
  /** dpkginfo_test unless told (variable_test models the running-kernel checks). */
  readonly testType?: string;
  /** Binary names written literally in the object instead of through a constant_variable. */
  readonly literalName?: boolean;
}

interface Def {
  readonly cve?: string;
  readonly title?: string;
  readonly severity?: string;
  readonly description?: string;
  readonly refUrl?: string;
  readonly klass?: string;
  readonly criteria: readonly Crit[];
}

/** Writes a document in the shape of Canonical's current generator (variables for binary names). */
function ubuntuDoc(defs: readonly Def[]): string {
  const definitions: string[] = [];
  const tests: string[] = [];
  const objects: string[] = [];
  const states: string[] = [];
  const variables: string[] = [];
  let n = 0;
  defs.forEach((def, d) => {
    const criteria = def.criteria.map((c) => {
      const id = `oval:com.ubuntu.jammy:tst:${++n}`;
      const obj = `oval:com.ubuntu.jammy:obj:${n}`;
      const ste = `oval:com.ubuntu.jammy:ste:${n}`;
      const v = `oval:com.ubuntu.jammy:var:${n}`;
      const testType = c.testType ?? 'dpkginfo_test';
      tests.push(
        `<linux-def:${testType} id="${id}" version="1" check="at least one"><linux-def:object object_ref="${obj}"/>` +
          (c.evr !== undefined ? `<linux-def:state state_ref="${ste}"/>` : '') +
          `</linux-def:${testType}>`,
      );
      if (c.literalName) {
        objects.push(
          `<linux-def:dpkginfo_object id="${obj}" version="1">${(c.binaries ?? []).map((b) => `<linux-def:name>${b}</linux-def:name>`).join('')}</linux-def:dpkginfo_object>`,
        );
      } else {
        objects.push(
          `<linux-def:dpkginfo_object id="${obj}" version="1"><linux-def:name var_ref="${v}" var_check="at least one"/></linux-def:dpkginfo_object>`,
        );
        variables.push(
          `<constant_variable id="${v}" version="1" datatype="string">${(c.binaries ?? []).map((b) => `<value>${b}</value>`).join('')}</constant_variable>`,
        );
      }
      if (c.evr !== undefined) {
        states.push(
          `<linux-def:dpkginfo_state id="${ste}" version="1"><linux-def:evr datatype="debian_evr_string" operation="less than">${c.evr}</linux-def:evr></linux-def:dpkginfo_state>`,
        );
      }
      return `<criterion test_ref="${id}" comment="${c.comment}"/>`;
    });
    const cve = def.cve;
    definitions.push(
      `<definition class="${def.klass ?? 'vulnerability'}" id="oval:com.ubuntu.jammy:def:${d + 1}" version="1"><metadata>` +
        `<title>${def.title ?? `${cve} on Ubuntu 22.04 LTS (jammy) - medium`}</title>` +
        `<description>${def.description ?? `Description of ${cve}.`}</description>` +
        `<affected family="unix"><platform>Ubuntu 22.04 LTS</platform></affected>` +
        (cve ? `<reference source="CVE" ref_id="${cve}" ref_url="${def.refUrl ?? `https://ubuntu.com/security/${cve}`}"/>` : '') +
        `<advisory><severity>${def.severity ?? 'Medium'}</severity><rights>Copyright (C) 2099 Canonical Ltd.</rights></advisory>` +
        `</metadata><criteria><extend_definition definition_ref="oval:com.ubuntu.jammy:def:100" comment="Ubuntu 22.04 LTS (jammy) is installed." applicability_check="true"/>` +
        `<criteria operator="OR">${criteria.join('')}</criteria></criteria></definition>`,
    );
  });
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<oval_definitions xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5" ` +
    `xmlns:linux-def="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">` +
    `<definitions>${definitions.join('\n')}</definitions><tests>${tests.join('\n')}</tests>` +
    `<objects>${objects.join('\n')}</objects><states>${states.join('\n')}</states>` +
    `<variables>${variables.join('\n')}</variables></oval_definitions>`
  );
}

const parse = (xml: string, namespace = 'ubuntu:22.04') => parseUbuntuOval(Readable.from([Buffer.from(xml)]), namespace);

describe('parseUbuntuOval on the xenial excerpt', () => {
  it('reads CVE-2015-4471: cabextract unfixed, libmspack fixed (source names only, not the binary libmspack0)', async () => {
    const data = await parseUbuntuOval(createReadStream(FIXTURE), 'ubuntu:16.04');
    expect(data.namespaces).toEqual(['ubuntu:16.04']);
    // The inventory definition (class="inventory") is not a vulnerability.
    expect(data.vulnerabilities).toHaveLength(1);
    const [v] = data.vulnerabilities;
    expect(v).toEqual({
      namespace: 'ubuntu:16.04',
      name: 'CVE-2015-4471',
      description:
        'Off-by-one error in the lzxd_decompress function in lzxd.c in libmspack before 0.5 allows remote attackers to cause a denial of service (buffer under-read and application crash) via a crafted CAB archive. It was discovered that cabextract incorrectly handled certain malformed CAB files. A remote attacker could use this issue to cause cabextract to crash, resulting in a denial of service.',
      link: 'https://cve.mitre.org/cgi-bin/cvename.cgi?name=CVE-2015-4471',
      severity: 'Medium',
      metadata: null,
      fixedIn: [
        // "cabextract package in xenial is affected and needs fixing.": no state, no fix.
        { feature: 'cabextract', version: null },
        // "libmspack package in xenial was vulnerable but has been fixed (note: '0.4-3').":
        // the source package takes the note; the object's binary name libmspack0 is not emitted.
        { feature: 'libmspack', version: '0.4-3' },
      ],
    });
  });

  it('gives the same answer whatever the chunking of the input', async () => {
    const { readFile } = await import('node:fs/promises');
    const bytes = await readFile(FIXTURE);
    const chunks: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 7) chunks.push(bytes.subarray(i, i + 7));
    const whole = await parseUbuntuOval(createReadStream(FIXTURE), 'ubuntu:16.04');
    const chunked = await parseUbuntuOval(Readable.from(chunks), 'ubuntu:16.04');
    expect(chunked).toEqual(whole);
  });
});

describe('parseUbuntuOval rules (current generator shape)', () => {
  it("fixed: the source named by the comment, with the note version; the variable's binaries are not emitted", async () => {
    const data = await parse(
      ubuntuDoc([
        {
          cve: 'CVE-2099-0001',
          criteria: [
            {
              comment: "openssl package in jammy, was vulnerable but has been fixed (note: '3.0.2-0ubuntu1.10').",
              binaries: ['libssl3', 'openssl', 'libssl-dev'],
              evr: '0:3.0.2-0ubuntu1.10',
            },
          ],
        },
      ]),
    );
    expect(data.vulnerabilities).toEqual([
      {
        namespace: 'ubuntu:22.04',
        name: 'CVE-2099-0001',
        description: 'Description of CVE-2099-0001.',
        link: 'https://ubuntu.com/security/CVE-2099-0001',
        severity: 'Medium',
        metadata: null,
        // the source "openssl" with the note's version; libssl3 and libssl-dev are binaries.
        fixedIn: [{ feature: 'openssl', version: '3.0.2-0ubuntu1.10' }],
      },
    ]);
  });

  it('unfixed statuses give null, whatever the state says: needed, needs-triage, deferred (fix deferred), pending, ignored (will not fix), released without version', async () => {
    const data = await parse(
      ubuntuDoc([
        {
          cve: 'CVE-2099-0002',
          criteria: [
            { comment: 'needed-src package in jammy is affected and needs fixing.', binaries: ['needed-bin'], evr: '0:1.0-1' },
            { comment: 'triage-src package in jammy is affected and may need fixing.', binaries: ['triage-bin'] },
            {
              comment:
                "deferred-src package in jammy is affected, but a decision has been made to defer addressing it (note: '2099-01-01').",
              binaries: ['deferred-bin'],
              evr: '0:1.0-1',
            },
            {
              comment:
                "pending-src package in jammy is affected. An update containing the fix has been completed and is pending publication (note: '1.0-2').",
              binaries: ['pending-bin'],
              evr: '0:1.0-2',
            },
            {
              comment:
                "ignored-src: while related to the CVE in some way, a decision has been made to ignore this issue (note: 'end of life').",
              binaries: ['ignored-bin'],
              evr: '0:1.0-1',
            },
            {
              comment: 'noversion-src package in jammy was vulnerable and has been fixed, but no release version available for it.',
              binaries: ['noversion-bin'],
              evr: '0:1.0-1',
            },
          ],
        },
      ]),
    );
    expect(data.vulnerabilities).toHaveLength(1);
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([
      { feature: 'deferred-src', version: null, state: 'fix_deferred' },
      { feature: 'ignored-src', version: null, state: 'will_not_fix' },
      { feature: 'needed-src', version: null },
      { feature: 'noversion-src', version: null },
      { feature: 'pending-src', version: null },
      { feature: 'triage-src', version: null },
    ]);
  });

  it('leaves not-affected packages out, and a CVE with only those produces no record', async () => {
    const data = await parse(
      ubuntuDoc([
        {
          cve: 'CVE-2099-0003',
          criteria: [
            {
              comment:
                "intel-microcode package in jammy, is related to the CVE in some way and has been fixed (note: '3.20210608.0ubuntu1').",
              binaries: ['intel-microcode'],
              evr: '0:3.20210608.0ubuntu1',
            },
            {
              comment: "other package in jammy, while related to the CVE in some way, is not affected (note: 'code not present').",
              binaries: ['other'],
            },
            { comment: 'kept package in jammy is affected and needs fixing.', binaries: ['kept'] },
          ],
        },
        {
          cve: 'CVE-2099-0004',
          criteria: [
            {
              comment: "quiet package in jammy, is related to the CVE in some way and has been fixed (note: '1.0-1').",
              binaries: ['quiet'],
              evr: '0:1.0-1',
            },
          ],
        },
      ]),
    );
    expect(data.vulnerabilities.map((v) => v.name)).toEqual(['CVE-2099-0003']);
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'kept', version: null }]);
    expect(data.namespaces).toEqual(['ubuntu:22.04']);
  });

  it('skips running-kernel checks and criteria that name no package', async () => {
    const data = await parse(
      ubuntuDoc([
        {
          cve: 'CVE-2099-0005',
          criteria: [
            { comment: 'Is kernel linux running?', testType: 'uname_test' },
            {
              comment: "linux package in jammy was vulnerable but has been fixed (note: '5.15.0-91.101').",
              testType: 'variable_test',
              evr: '0:5.15.0-91',
            },
            {
              comment: "zlib package in jammy was vulnerable but has been fixed (note: '1:1.2.11.dfsg-2ubuntu9.2').",
              binaries: ['zlib1g'],
              evr: '1:1.2.11.dfsg-2ubuntu9.2',
            },
          ],
        },
      ]),
    );
    // only the source zlib (its binary zlib1g is not emitted); the linux criterion is a kernel check.
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'zlib', version: '1:1.2.11.dfsg-2ubuntu9.2' }]);
  });

  it('skips invalid versions; a package named twice is affected while any of its criteria says so', async () => {
    const gccDefaults = [
      {
        comment: "gcc-defaults package in jammy was vulnerable but has been fixed (note: '1.193ubuntu1').",
        binaries: ['gcc', 'cpp'],
        evr: '4:11.2.0-1ubuntu1',
      },
      {
        comment: "gcc-defaults package in jammy was vulnerable but has been fixed (note: '1.191ubuntu1').",
        binaries: ['gcc-multilib', 'cpp'],
        evr: '4:11.1.0-1ubuntu1',
      },
      {
        comment: "gcc-defaults package in jammy was vulnerable but has been fixed (note: '1.195ubuntu1').",
        binaries: ['cpp'],
        evr: '4:11.3.0-1ubuntu1',
      },
    ];
    const bad = {
      comment: "bad package in jammy was vulnerable but has been fixed (note: '1.0-1!').",
      binaries: ['bad-bin'],
      evr: '0:1.0-1!',
    };
    const fixed = await parse(ubuntuDoc([{ cve: 'CVE-2099-0006', criteria: [bad, ...gccDefaults] }]));
    // "bad" (invalid note version) is skipped; gcc-defaults is affected below its highest note
    // version (OVAL: the definition is true when any criterion is); the binaries are not emitted.
    expect(fixed.vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'gcc-defaults', version: '1.195ubuntu1' }]);
    const unfixed = await parse(
      ubuntuDoc([
        {
          cve: 'CVE-2099-0006',
          criteria: [...gccDefaults, { comment: 'gcc-defaults package in jammy is affected and needs fixing.', binaries: ['gcc'] }],
        },
      ]),
    );
    // A criterion with no fix leaves every version affected, whatever the others fix.
    expect(unfixed.vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'gcc-defaults', version: null }]);
  });

  it('without a note, a fixed source package takes the state evr; literal binary names in the object are not emitted', async () => {
    const data = await parse(
      ubuntuDoc([
        {
          cve: 'CVE-2099-0007',
          criteria: [
            {
              comment: 'curl package in jammy was vulnerable but has been fixed.',
              binaries: ['curl', 'libcurl4'],
              evr: '0:7.81.0-1ubuntu1.15',
              literalName: true,
            },
          ],
        },
      ]),
    );
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'curl', version: '0:7.81.0-1ubuntu1.15' }]);
  });

  it('emits only the source named by the comment, never the binaries of the variable or the object', async () => {
    const data = await parse(
      ubuntuDoc([
        {
          cve: 'CVE-2099-0008',
          criteria: [
            {
              comment: "libfoo package in jammy was vulnerable but has been fixed (note: '1.2-3ubuntu0.1').",
              binaries: ['libfoo1', 'libfoo-dev'],
              evr: '0:1.2-3ubuntu0.1',
            },
          ],
        },
        {
          cve: 'CVE-2099-0009',
          criteria: [
            { comment: 'libbar package in jammy is affected and needs fixing.', binaries: ['libbar1', 'libbar-dev'], literalName: true },
            // a binary named like another criterion's source does not lend it its version
            { comment: 'libbaz package in jammy is affected and needs fixing.', binaries: ['libbaz1'] },
            {
              comment: "libqux package in jammy was vulnerable but has been fixed (note: '2.0-1').",
              binaries: ['libbaz', 'libqux2'],
              evr: '0:2.0-1',
            },
          ],
        },
      ]),
    );
    expect(data.vulnerabilities).toEqual([
      {
        namespace: 'ubuntu:22.04',
        name: 'CVE-2099-0008',
        description: 'Description of CVE-2099-0008.',
        link: 'https://ubuntu.com/security/CVE-2099-0008',
        severity: 'Medium',
        metadata: null,
        fixedIn: [{ feature: 'libfoo', version: '1.2-3ubuntu0.1' }],
      },
      {
        namespace: 'ubuntu:22.04',
        name: 'CVE-2099-0009',
        description: 'Description of CVE-2099-0009.',
        link: 'https://ubuntu.com/security/CVE-2099-0009',
        severity: 'Medium',
        metadata: null,
        fixedIn: [
          { feature: 'libbar', version: null },
          { feature: 'libbaz', version: null },
          { feature: 'libqux', version: '2.0-1' },
        ],
      },
    ]);
  });

  it('picks the version per status: note, else state evr, else null when fixed; the state evr (never the note) when unknown', async () => {
    const data = await parse(
      ubuntuDoc([
        {
          cve: 'CVE-2099-0030',
          criteria: [
            // fixed: the note wins over the state
            {
              comment: "noted package in jammy was vulnerable but has been fixed (note: '2.0-2').",
              binaries: ['noted-bin'],
              evr: '0:2.0-1',
            },
            // fixed, but the note is no version: the state's evr
            {
              comment: "wordnote package in jammy was vulnerable but has been fixed (note: 'see USN').",
              binaries: ['wordnote-bin'],
              evr: '0:3.0-1',
            },
            // fixed, neither note nor state: null
            { comment: 'bare package in jammy was vulnerable but has been fixed.', binaries: ['bare-bin'] },
            // unknown status: the state's evr, the note ignored
            { comment: "mystery package in jammy has an unrecognised status (note: '9.9-9').", binaries: ['mystery-bin'], evr: '0:4.0-1' },
            // unknown status, no state: null
            { comment: 'stateless package in jammy has an unrecognised status.', binaries: ['stateless-bin'] },
          ],
        },
      ]),
    );
    expect(data.vulnerabilities).toEqual([
      {
        namespace: 'ubuntu:22.04',
        name: 'CVE-2099-0030',
        description: 'Description of CVE-2099-0030.',
        link: 'https://ubuntu.com/security/CVE-2099-0030',
        severity: 'Medium',
        metadata: null,
        fixedIn: [
          { feature: 'bare', version: null },
          { feature: 'mystery', version: '0:4.0-1' },
          { feature: 'noted', version: '2.0-2' },
          { feature: 'stateless', version: null },
          { feature: 'wordnote', version: '0:3.0-1' },
        ],
      },
    ]);
  });

  it('reads severities, names from the title, the old "The \'x\' package" comments and cuts update instructions', async () => {
    const data = await parse(
      ubuntuDoc([
        { cve: 'CVE-2099-0010', severity: 'Untriaged', criteria: [{ comment: 'a package in jammy is affected and needs fixing.' }] },
        { cve: 'CVE-2099-0011', severity: 'Negligible', criteria: [{ comment: 'a package in jammy is affected and needs fixing.' }] },
        { cve: 'CVE-2099-0012', severity: 'Critical', criteria: [{ comment: 'a package in jammy is affected and needs fixing.' }] },
        {
          title: 'CVE-2099-0013 on Ubuntu 22.04 LTS (jammy) - high',
          severity: 'High',
          description:
            'First line\n   second  line.\n\n    Update Instructions:\n\n    Run `sudo pro fix CVE-2099-0013` to fix the vulnerability.\n\n    php-openid - 2.2.2-1\n    No subscription required',
          criteria: [{ comment: "The 'php-openid' package in trusty is affected and needs fixing.", binaries: ['php-openid'] }],
        },
      ]),
    );
    expect(data.vulnerabilities.map((v) => [v.name, v.severity, v.link])).toEqual([
      ['CVE-2099-0010', 'Unknown', 'https://ubuntu.com/security/CVE-2099-0010'],
      ['CVE-2099-0011', 'Negligible', 'https://ubuntu.com/security/CVE-2099-0011'],
      ['CVE-2099-0012', 'Critical', 'https://ubuntu.com/security/CVE-2099-0012'],
      // no reference: the name comes from the title, the link is built from it
      ['CVE-2099-0013', 'High', 'https://ubuntu.com/security/CVE-2099-0013'],
    ]);
    expect(data.vulnerabilities[3]?.description).toBe('First line second line.');
    expect(data.vulnerabilities[3]?.fixedIn).toEqual([{ feature: 'php-openid', version: null }]);
  });

  it('keeps multi-byte text split across chunks and ignores non-vulnerability classes', async () => {
    const xml = ubuntuDoc([
      {
        cve: 'CVE-2099-0020',
        description: 'naïve — “quoted” ✓',
        criteria: [{ comment: 'a package in jammy is affected and needs fixing.' }],
      },
      { cve: 'CVE-2099-0021', klass: 'inventory', criteria: [{ comment: 'b package in jammy is affected and needs fixing.' }] },
    ]);
    const bytes = Buffer.from(xml);
    const chunks: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 3) chunks.push(bytes.subarray(i, i + 3));
    const data = await parseUbuntuOval(Readable.from(chunks), 'ubuntu:22.04');
    expect(data.vulnerabilities.map((v) => [v.name, v.description])).toEqual([['CVE-2099-0020', 'naïve — “quoted” ✓']]);
  });

  it('orders vulnerabilities by name with numbers in natural order', async () => {
    const data = await parse(
      ubuntuDoc(
        ['CVE-2099-10000', 'CVE-2099-9999', 'CVE-2098-20000'].map((cve) => ({
          cve,
          criteria: [{ comment: 'a package in jammy is affected and needs fixing.' }],
        })),
      ),
    );
    expect(data.vulnerabilities.map((v) => v.name)).toEqual(['CVE-2098-20000', 'CVE-2099-9999', 'CVE-2099-10000']);
  });

  it('rejects malformed XML, a document that is not OVAL, and an empty input with clear errors', async () => {
    await expect(parse('<oval_definitions><definitions><definition class="vulnerability">')).rejects.toThrow(
      /^Ubuntu OVAL \(ubuntu:22\.04\): malformed XML at \d+:\d+: unclosed tag: definition/,
    );
    await expect(parse('<oval_definitions><definitions></tests></oval_definitions>')).rejects.toThrow(/malformed XML at 1:\d+/);
    await expect(parse('<html><body>503 Service Unavailable</body></html>')).rejects.toThrow(
      'Ubuntu OVAL (ubuntu:22.04): not an OVAL definitions document (root element <html>)',
    );
    await expect(parse('')).rejects.toThrow(/Ubuntu OVAL \(ubuntu:22\.04\)/);
    await expect(parseUbuntuOval(Readable.from([Buffer.from([0x3c, 0x6f, 0xff, 0xfe])]), 'ubuntu:22.04')).rejects.toThrow(
      'Ubuntu OVAL (ubuntu:22.04): the document is not valid UTF-8',
    );
  });

  it('passes a read error of the input through', async () => {
    const input = new Readable({
      read() {
        this.destroy(new Error('connection reset'));
      },
    });
    await expect(parseUbuntuOval(input, 'ubuntu:22.04')).rejects.toThrow('connection reset');
  });
});

describe('parseCriterionComment and ubuntuSeverity', () => {
  it('reads source, status and note version', () => {
    expect(parseCriterionComment("openssl package in noble was vulnerable but has been fixed (note: '3.0.13-0ubuntu3.5').")).toEqual({
      source: 'openssl',
      status: 'fixed',
      noteVersion: '3.0.13-0ubuntu3.5',
    });
    expect(
      parseCriterionComment(
        "tiff package in xenial is affected, but a decision has been made to defer addressing it (note: '2017-02-24').",
      ),
    ).toEqual({
      source: 'tiff',
      status: 'unfixed',
      noteVersion: '2017-02-24',
      fixState: 'fix_deferred',
    });
    expect(
      parseCriterionComment("foo package in jammy, while related to the CVE in some way, is not affected (note: 'code not present')."),
    ).toEqual({
      source: 'foo',
      status: 'not-affected',
      noteVersion: undefined,
    });
    expect(
      parseCriterionComment("bar package in jammy has a vulnerability that is not known (status: 'active'). It is pending evaluation."),
    ).toEqual({
      source: 'bar',
      status: 'unfixed',
      noteVersion: undefined,
    });
    expect(parseCriterionComment('Ubuntu 22.04 LTS (jammy) is installed.')).toBeUndefined();
    expect(parseCriterionComment('Is kernel linux-aws running?')).toBeUndefined();
  });

  it('maps every Ubuntu priority', () => {
    expect(['Untriaged', 'Negligible', 'Low', 'Medium', 'High', 'Critical', 'bogus'].map((s) => ubuntuSeverity(s))).toEqual([
      'Unknown',
      'Negligible',
      'Low',
      'Medium',
      'High',
      'Critical',
      'Unknown',
    ]);
    expect(ubuntuSeverity('', 'CVE-2015-4471 on Ubuntu 16.04 LTS (xenial) - low.')).toBe('Low');
  });
});

describe('UBUNTU_RELEASES', () => {
  it('maps codenames to versions and namespaces', () => {
    expect(UBUNTU_RELEASES.trusty).toBe('14.04');
    expect(UBUNTU_RELEASES.xenial).toBe('16.04');
    expect(UBUNTU_RELEASES.noble).toBe('24.04');
    expect(UBUNTU_RELEASES.questing).toBe('25.10');
    expect(ubuntuNamespace('jammy')).toBe('ubuntu:22.04');
    expect(ubuntuNamespace('plucky')).toBe('ubuntu:25.04');
    expect(ubuntuNamespace('oracular')).toBe('ubuntu:24.10');
    expect(ubuntuNamespace('warty')).toBeUndefined();
    expect(ubuntuNamespace('toString')).toBeUndefined();
    expect(ubuntuCodename('20.04')).toBe('focal');
    expect(Object.keys(UBUNTU_RELEASES)).toHaveLength(32);
  });
});

describe('parseUbuntuOval streaming', () => {
  it('parses a ~20 MB document generated as a stream, with exact counts', async () => {
    const COUNT = 7200;
    const pad = 'x'.repeat(1400);
    let produced = 0;
    async function* generate(): AsyncGenerator<Buffer> {
      const emit = (s: string): Buffer => {
        const b = Buffer.from(s);
        produced += b.length;
        return b;
      };
      yield emit(
        '<?xml version="1.0"?><oval_definitions xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5" xmlns:linux-def="x"><definitions>',
      );
      for (let i = 0; i < COUNT; i++) {
        const pkg = `pkg${i % 700}`;
        yield emit(
          `<definition class="vulnerability" id="oval:x:def:${i}" version="1"><metadata><title>CVE-2099-${10000 + i} on Ubuntu 22.04 LTS (jammy) - low</title>` +
            `<description>Synthetic ${i} ${pad}</description><reference source="CVE" ref_id="CVE-2099-${10000 + i}" ref_url="https://ubuntu.com/security/CVE-2099-${10000 + i}"/>` +
            `<advisory><severity>Low</severity></advisory></metadata><criteria operator="OR">` +
            `<criterion test_ref="oval:x:tst:${i}0" comment="${pkg} package in jammy was vulnerable but has been fixed (note: '1.${i}-1')."/>` +
            `<criterion test_ref="oval:x:tst:${i}1" comment="other${i % 50} package in jammy is affected and needs fixing."/></criteria></definition>`,
        );
      }
      yield emit('</definitions><tests>');
      for (let i = 0; i < COUNT; i++) {
        yield emit(
          `<linux-def:dpkginfo_test id="oval:x:tst:${i}0" version="1"><linux-def:object object_ref="oval:x:obj:${i}0"/><linux-def:state state_ref="oval:x:ste:${i}"/></linux-def:dpkginfo_test>` +
            `<linux-def:dpkginfo_test id="oval:x:tst:${i}1" version="1"><linux-def:object object_ref="oval:x:obj:${i}1"/></linux-def:dpkginfo_test>`,
        );
      }
      yield emit('</tests><objects>');
      for (let i = 0; i < COUNT; i++) {
        yield emit(
          `<linux-def:dpkginfo_object id="oval:x:obj:${i}0" version="1"><linux-def:name var_ref="oval:x:var:${i}"/></linux-def:dpkginfo_object>` +
            `<linux-def:dpkginfo_object id="oval:x:obj:${i}1" version="1"><linux-def:name>other${i % 50}-bin</linux-def:name></linux-def:dpkginfo_object>`,
        );
      }
      yield emit('</objects><states>');
      for (let i = 0; i < COUNT; i++) {
        yield emit(
          `<linux-def:dpkginfo_state id="oval:x:ste:${i}" version="1"><linux-def:evr datatype="debian_evr_string" operation="less than">0:1.${i}-1</linux-def:evr></linux-def:dpkginfo_state>`,
        );
      }
      yield emit('</states><variables>');
      for (let i = 0; i < COUNT; i++) {
        yield emit(
          `<constant_variable id="oval:x:var:${i}" version="1" datatype="string"><value>lib${i % 700}</value><value>bin${i % 700}</value></constant_variable>`,
        );
      }
      yield emit('</variables></oval_definitions>');
    }
    const started = Date.now();
    const data = await parseUbuntuOval(Readable.from(generate()), 'ubuntu:22.04');
    const elapsed = Date.now() - started;
    expect(produced).toBeGreaterThan(20_000_000);
    expect(elapsed).toBeLessThan(20_000);
    expect(data.namespaces).toEqual(['ubuntu:22.04']);
    expect(data.vulnerabilities).toHaveLength(COUNT);
    // each: the fixed source pkgN and the unfixed source otherN; the binaries (libN, binN from the
    // variable, otherN-bin from the object) are not emitted
    expect(data.vulnerabilities.reduce((n, v) => n + v.fixedIn.length, 0)).toBe(COUNT * 2);
    const v = data.vulnerabilities[1234];
    expect(v?.name).toBe('CVE-2099-11234');
    expect(v?.severity).toBe('Low');
    expect(v?.fixedIn).toEqual([
      { feature: 'other34', version: null },
      { feature: 'pkg534', version: '1.1234-1' },
    ]);
  });
});
