import { createReadStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  amazonAdvisoryLink,
  amazonMirrorUrl,
  amazonSeverity,
  parseAmazonUpdateinfo,
  updateinfoLocation,
} from '../../src/ecosystems/amazon/updateinfo.js';
import type { Vulnerability } from '../../src/model/vulnerability.js';

const feeds = fileURLToPath(new URL('../fixtures/feeds/amazon/', import.meta.url));

function fixture(name: string): Readable {
  return createReadStream(join(feeds, name));
}

/** A document as a stream of small Buffer chunks (exercises chunk boundaries and UTF-8 decoding). */
function chunked(text: string, size = 7): Readable {
  const bytes = Buffer.from(text, 'utf8');
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  return Readable.from(chunks);
}

function byName(vulns: readonly Vulnerability[], name: string): Vulnerability {
  const v = vulns.find((x) => x.name === name);
  if (v === undefined) throw new Error(`no ${name}`);
  return v;
}

function pkg(attrs: string): string {
  return `<package ${attrs}><filename>x.rpm</filename></package>`;
}

function doc(updates: string): string {
  return `<?xml version="1.0" ?>\n<updates>${updates}</updates>`;
}

function update(id: string, packages: string[], { type = 'security', severity = 'low', cves = [] as string[] } = {}): string {
  const refs = cves.map((c) => `<reference href="https://example.invalid/${c}" id="${c}" title="" type="cve" />`).join('');
  return (
    `<update author="a" from="a" status="final" type="${type}" version="1.4"><id>${id}</id>` +
    `<title>t</title><issued date="2020-01-01 00:00" /><severity>${severity}</severity>` +
    `<description>d ${id}</description><references>${refs}</references>` +
    `<pkglist><collection short="c"><name>n</name>${packages.join('')}</collection></pkglist></update>`
  );
}

describe('parseAmazonUpdateinfo: Amazon Linux 1 excerpt (quay/clair testdata)', () => {
  it('reads both advisories field by field', async () => {
    const data = await parseAmazonUpdateinfo(fixture('alas1-updateinfo-excerpt.xml'), 'amzn:2018.03');
    expect(data.namespaces).toEqual(['amzn:2018.03']);
    expect(data.vulnerabilities.map((v) => v.name)).toEqual(['ALAS-2011-1', 'ALAS-2011-2']);

    const httpd = byName(data.vulnerabilities, 'ALAS-2011-1');
    expect(httpd.namespace).toBe('amzn:2018.03');
    expect(httpd.severity).toBe('Medium');
    expect(httpd.link).toBe('https://alas.aws.amazon.com/ALAS-2011-1.html');
    expect(httpd.description).toBe(
      'Package updates are available for Amazon Linux AMI that fix the following vulnerabilities: ' +
        'CVE-2011-3192: A flaw was found in the way the Apache HTTP Server handled Range HTTP headers. ' +
        'A remote attacker could use this flaw to cause httpd to use an excessive amount of memory and CPU time ' +
        'via HTTP requests with a specially-crafted Range header. The byterange filter in the Apache HTTP Server ' +
        '1.3.x, 2.0.x through 2.0.64, and 2.2.x through 2.2.19 allows remote attackers to cause a denial of service ' +
        '(memory and CPU consumption) via a Range header that expresses multiple overlapping ranges, as exploited ' +
        'in the wild in August 2011, a different vulnerability than CVE-2007-0086.',
    );
    // The RHSA reference (type="redhat") is not a CVE.
    expect(httpd.metadata).toEqual({ ALAS: { CVEs: ['CVE-2011-3192'] } });
    expect(httpd.cves).toEqual(['CVE-2011-3192']);
    // 11 <package> rows: 5 names on i686 and x86_64, httpd-manual on noarch → 6 entries, each for
    // the architectures listed with it, by name.
    const both = ['i686', 'x86_64'];
    expect(httpd.fixedIn).toEqual([
      { feature: 'httpd', version: '2.2.21-1.18.amzn1', arches: both },
      { feature: 'httpd-debuginfo', version: '2.2.21-1.18.amzn1', arches: both },
      { feature: 'httpd-devel', version: '2.2.21-1.18.amzn1', arches: both },
      { feature: 'httpd-manual', version: '2.2.21-1.18.amzn1', arches: ['noarch'] },
      { feature: 'httpd-tools', version: '2.2.21-1.18.amzn1', arches: both },
      { feature: 'mod_ssl', version: '1:2.2.21-1.18.amzn1', arches: both },
    ]);

    const cyrus = byName(data.vulnerabilities, 'ALAS-2011-2');
    expect(cyrus.severity).toBe('High'); // "important"
    expect(cyrus.link).toBe('https://alas.aws.amazon.com/ALAS-2011-2.html');
    expect(
      cyrus.description.startsWith(
        'Package updates are available for Amazon Linux that fix the following vulnerabilities: CVE-2011-3208: Stack-based buffer overflow',
      ),
    ).toBe(true);
    expect(cyrus.description.endsWith('with the privileges of the cyrus user.')).toBe(true);
    expect(cyrus.description).not.toMatch(/\s{2}|\n/);
    expect(cyrus.metadata).toEqual({ ALAS: { CVEs: ['CVE-2011-3208'] } });
    expect(cyrus.cves).toEqual(['CVE-2011-3208']);
    expect(cyrus.fixedIn).toEqual(
      ['cyrus-imapd', 'cyrus-imapd-debuginfo', 'cyrus-imapd-devel', 'cyrus-imapd-utils'].map((feature) => ({
        feature,
        version: '2.3.16-6.4.amzn1',
        arches: both,
      })),
    );
  });

  it("accepts the brief's amzn:1 spelling with the same AL1 links", async () => {
    const data = await parseAmazonUpdateinfo(fixture('alas1-updateinfo-excerpt.xml'), 'amzn:1');
    expect(data.namespaces).toEqual(['amzn:1']);
    expect(data.vulnerabilities.map((v) => [v.namespace, v.link])).toEqual([
      ['amzn:1', 'https://alas.aws.amazon.com/ALAS-2011-1.html'],
      ['amzn:1', 'https://alas.aws.amazon.com/ALAS-2011-2.html'],
    ]);
  });
});

describe('parseAmazonUpdateinfo: Amazon Linux 2 excerpt (quay/clair testdata)', () => {
  it('reads both advisories field by field', async () => {
    const data = await parseAmazonUpdateinfo(fixture('alas2-updateinfo-excerpt.xml'), 'amzn:2');
    expect(data.namespaces).toEqual(['amzn:2']);
    expect(data.vulnerabilities.map((v) => v.name)).toEqual(['ALAS2-2018-939', 'ALAS2-2018-942']);

    const kernel = byName(data.vulnerabilities, 'ALAS2-2018-939');
    expect(kernel.namespace).toBe('amzn:2');
    expect(kernel.severity).toBe('Critical');
    expect(kernel.link).toBe('https://alas.aws.amazon.com/AL2/ALAS-2018-939.html');
    expect(kernel.metadata).toEqual({ ALAS: { CVEs: ['CVE-2017-5754', 'CVE-2017-5715'] } });
    // Exactly the two <reference type="cve"> of the advisory, in its order (Meltdown, then Spectre v2), not sorted.
    expect(kernel.cves).toEqual(['CVE-2017-5754', 'CVE-2017-5715']);
    // The blank line inside the description collapses like any other whitespace.
    expect(kernel.description).toContain(
      'AMD x86-64 microprocessors are not affected by this issue. CVE-2017-5715: An industry-wide issue',
    );
    expect(
      kernel.description.startsWith(
        'Package updates are available for Amazon Linux 2 that fix the following vulnerabilities: CVE-2017-5754: 1519781: CVE-2017-5754 hw: cpu:',
      ),
    ).toBe(true);
    expect(kernel.description.endsWith('1519780: CVE-2017-5715 hw: cpu: speculative execution branch target injection')).toBe(true);
    // The feed double-escapes the apostrophe (&amp;#039;): one level of XML unescaping leaves &#039;.
    expect(kernel.description).toContain('microprocessor&#039;s data cache');
    expect(kernel.fixedIn).toHaveLength(13);
    expect(kernel.fixedIn).toEqual(
      [
        'kernel',
        'kernel-debuginfo',
        'kernel-debuginfo-common-x86_64',
        'kernel-devel',
        'kernel-doc',
        'kernel-headers',
        'kernel-tools',
        'kernel-tools-debuginfo',
        'kernel-tools-devel',
        'perf',
        'perf-debuginfo',
        'python-perf',
        'python-perf-debuginfo',
      ].map((feature) => ({ feature, version: '4.9.76-38.79.amzn2', arches: [feature === 'kernel-doc' ? 'noarch' : 'x86_64'] })),
    );

    const qemu = byName(data.vulnerabilities, 'ALAS2-2018-942');
    expect(qemu.severity).toBe('High');
    expect(qemu.link).toBe('https://alas.aws.amazon.com/AL2/ALAS-2018-942.html');
    expect(qemu.metadata).toEqual({ ALAS: { CVEs: ['CVE-2017-5715'] } });
    expect(qemu.cves).toEqual(['CVE-2017-5715']);
    // Listed for x86_64 only: an i686 qemu is not what the advisory fixes.
    expect(qemu.fixedIn).toEqual(
      ['qemu-img', 'qemu-kvm', 'qemu-kvm-common', 'qemu-kvm-debuginfo', 'qemu-kvm-tools'].map((feature) => ({
        feature,
        version: '10:1.5.3-141.amzn2.5.3',
        arches: ['x86_64'],
      })),
    );
  });

  it('gives the same result when the bytes arrive in 7-byte chunks', async () => {
    const text = readFileSync(join(feeds, 'alas2-updateinfo-excerpt.xml'), 'utf8');
    const whole = await parseAmazonUpdateinfo(fixture('alas2-updateinfo-excerpt.xml'), 'amzn:2');
    const pieces = await parseAmazonUpdateinfo(chunked(text), 'amzn:2');
    expect(pieces).toEqual(whole);
  });
});

describe('parseAmazonUpdateinfo: synthetic documents', () => {
  it('omits a zero or absent epoch and keeps any other', async () => {
    const data = await parseAmazonUpdateinfo(
      Readable.from([
        doc(
          update('ALAS2023-2024-1', [
            pkg('arch="x86_64" epoch="0" name="zero" release="1.amzn2023" version="1.0"'),
            pkg('arch="x86_64" name="absent" release="2.amzn2023" version="2.0"'),
            pkg('arch="x86_64" epoch="2" name="two" release="3.amzn2023" version="3.0"'),
            pkg('arch="x86_64" epoch="" name="empty" release="4.amzn2023" version="4.0"'),
          ]),
        ),
      ]),
      'amzn:2023',
    );
    const [v] = data.vulnerabilities;
    expect(v?.link).toBe('https://alas.aws.amazon.com/AL2023/ALAS-2024-1.html');
    expect(v?.fixedIn).toEqual([
      { feature: 'absent', version: '2.0-2.amzn2023', arches: ['x86_64'] },
      { feature: 'empty', version: '4.0-4.amzn2023', arches: ['x86_64'] },
      { feature: 'two', version: '2:3.0-3.amzn2023', arches: ['x86_64'] },
      { feature: 'zero', version: '1.0-1.amzn2023', arches: ['x86_64'] },
    ]);
  });

  it('limits each fix to the architectures listed with it; one architecture listed twice: the higher fix (rpm order)', async () => {
    const data = await parseAmazonUpdateinfo(
      Readable.from([
        doc(
          update('ALAS2-2024-5', [
            pkg('arch="x86_64" epoch="0" name="same" release="1.amzn2" version="1.2"'),
            pkg('arch="aarch64" epoch="0" name="same" release="1.amzn2" version="1.2"'),
            pkg('arch="noarch" epoch="0" name="same" release="1.amzn2" version="1.2"'),
            // Per architecture: each its own fix.
            pkg('arch="x86_64" name="numeric" release="1.amzn2" version="1.10"'),
            pkg('arch="aarch64" name="numeric" release="1.amzn2" version="1.9"'),
            // One architecture twice: 1.10 > 1.9 in rpm order (but not in string order).
            pkg('arch="x86_64" name="twice" release="1.amzn2" version="1.9"'),
            pkg('arch="x86_64" name="twice" release="1.amzn2" version="1.10"'),
            // Epoch dominates: 1:0.5 is higher than 0:9.0.
            pkg('arch="x86_64" epoch="1" name="epochs" release="1" version="0.5"'),
            pkg('arch="x86_64" epoch="0" name="epochs" release="1" version="9.0"'),
            // Release compared last.
            pkg('arch="x86_64" name="release" release="10.amzn2" version="3.0"'),
            pkg('arch="x86_64" name="release" release="9.amzn2" version="3.0"'),
            // No arch attribute: every architecture.
            pkg('name="anyarch" release="1" version="1.0"'),
          ]),
        ),
      ]),
      'amzn:2',
    );
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([
      { feature: 'anyarch', version: '1.0-1' },
      { feature: 'epochs', version: '1:0.5-1', arches: ['x86_64'] },
      { feature: 'numeric', version: '1.9-1.amzn2', arches: ['aarch64'] },
      { feature: 'numeric', version: '1.10-1.amzn2', arches: ['x86_64'] },
      { feature: 'release', version: '3.0-10.amzn2', arches: ['x86_64'] },
      { feature: 'same', version: '1.2-1.amzn2', arches: ['aarch64', 'noarch', 'x86_64'] },
      { feature: 'twice', version: '1.10-1.amzn2', arches: ['x86_64'] },
    ]);
  });

  it('skips packages with an invalid or missing version, or no name', async () => {
    const data = await parseAmazonUpdateinfo(
      Readable.from([
        doc(
          update('ALAS2-2024-6', [
            pkg('arch="x86_64" name="spaces" release="1" version="1.0 beta"'),
            pkg('arch="x86_64" epoch="x" name="badepoch" release="1" version="1.0"'),
            pkg('arch="x86_64" name="noversion" release="1"'),
            pkg('arch="x86_64" name="" release="1" version="1.0"'),
            pkg('arch="x86_64" name="good" release="1" version="1.0"'),
          ]),
        ),
      ]),
      'amzn:2',
    );
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'good', version: '1.0-1', arches: ['x86_64'] }]);
  });

  it('skips non-security updates and keeps the security ones', async () => {
    const p = [pkg('arch="x86_64" name="p" release="1" version="1.0"')];
    const data = await parseAmazonUpdateinfo(
      Readable.from([
        doc(
          update('ALAS2-2024-10', p, { type: 'bugfix' }) +
            update('ALAS2-2024-11', p, { type: 'security', severity: 'medium' }) +
            update('ALAS2-2024-12', p, { type: 'enhancement' }) +
            update('ALAS2-2024-13', p, { type: 'newpackage' }),
        ),
      ]),
      'amzn:2',
    );
    expect(data.vulnerabilities.map((v) => [v.name, v.severity])).toEqual([['ALAS2-2024-11', 'Medium']]);
  });

  it('maps severities and gives metadata null when no CVE is referenced', async () => {
    const p = [pkg('arch="x86_64" name="p" release="1" version="1.0"')];
    const data = await parseAmazonUpdateinfo(
      Readable.from([
        doc(
          update('ALAS-2024-1', p, { severity: 'low', cves: ['CVE-2024-1', 'CVE-2024-2', 'CVE-2024-1'] }) +
            update('ALAS-2024-2', p, { severity: 'Critical' }) +
            update('ALAS-2024-3', p, { severity: 'moderate' }) +
            update('ALAS-2024-4', p, { severity: '' }),
        ),
      ]),
      'amzn:2018.03',
    );
    expect(data.vulnerabilities.map((v) => [v.name, v.severity, v.metadata])).toEqual([
      ['ALAS-2024-1', 'Low', { ALAS: { CVEs: ['CVE-2024-1', 'CVE-2024-2'] } }],
      ['ALAS-2024-2', 'Critical', null],
      ['ALAS-2024-3', 'Unknown', null],
      ['ALAS-2024-4', 'Unknown', null],
    ]);
    // No advisory here references a well-formed CVE id (CVE-2024-1 has too few digits): no cves.
    expect(data.vulnerabilities.map((v) => 'cves' in v)).toEqual([false, false, false, false]);
  });

  it('lists the well-formed CVE ids in the order the advisory gives them, each once', async () => {
    const p = [pkg('arch="x86_64" name="p" release="1" version="1.0"')];
    const data = await parseAmazonUpdateinfo(
      Readable.from([
        doc(
          update('ALAS2-2024-40', p, {
            cves: ['CVE-2024-9999', 'CVE-2023-12345', ' CVE-2024-0001 ', 'CVE-2024-9999', 'CVE-2024-1', 'cve-2024-5555', 'GHSA-xxxx'],
          }),
        ),
      ]),
      'amzn:2',
    );
    const [v] = data.vulnerabilities;
    expect(v?.cves).toEqual(['CVE-2024-9999', 'CVE-2023-12345', 'CVE-2024-0001']);
    // Metadata keeps every cve-typed reference as Clair did.
    expect(v?.metadata).toEqual({
      ALAS: { CVEs: ['CVE-2024-9999', 'CVE-2023-12345', 'CVE-2024-0001', 'CVE-2024-1', 'cve-2024-5555', 'GHSA-xxxx'] },
    });
  });

  it('merges an advisory listed twice: first text wins, fixes are alternatives (the higher), CVEs are appended', async () => {
    const data = await parseAmazonUpdateinfo(
      Readable.from([
        doc(
          update('ALAS2-2024-20', [pkg('arch="x86_64" name="a" release="2" version="1.0"')], {
            severity: 'low',
            cves: ['CVE-2024-2002', 'CVE-2024-1001'],
          }) +
            update(
              'ALAS2-2024-20',
              [pkg('arch="x86_64" name="a" release="1" version="1.0"'), pkg('arch="x86_64" name="b" release="1" version="1.0"')],
              { severity: 'critical', cves: ['CVE-2024-1001', 'CVE-2024-3003'] },
            ),
        ),
      ]),
      'amzn:2',
    );
    expect(data.vulnerabilities).toEqual([
      {
        namespace: 'amzn:2',
        name: 'ALAS2-2024-20',
        description: 'd ALAS2-2024-20',
        link: 'https://alas.aws.amazon.com/AL2/ALAS-2024-20.html',
        severity: 'Low',
        metadata: { ALAS: { CVEs: ['CVE-2024-2002', 'CVE-2024-1001', 'CVE-2024-3003'] } },
        fixedIn: [
          { feature: 'a', version: '1.0-2', arches: ['x86_64'] },
          { feature: 'b', version: '1.0-1', arches: ['x86_64'] },
        ],
        cves: ['CVE-2024-2002', 'CVE-2024-1001', 'CVE-2024-3003'],
      },
    ]);
  });

  it('reads CDATA descriptions and an empty document', async () => {
    const withCdata = doc(
      '<update type="security"><id>ALAS2-2024-30</id><severity>low</severity>' +
        '<description><![CDATA[  a <b>  &amp; \n c ]]></description></update>',
    );
    const data = await parseAmazonUpdateinfo(Readable.from([withCdata]), 'amzn:2');
    expect(data.vulnerabilities[0]?.description).toBe('a <b> &amp; c');
    expect(data.vulnerabilities[0]?.fixedIn).toEqual([]);

    const empty = await parseAmazonUpdateinfo(Readable.from(['<updates/>']), 'amzn:2');
    expect(empty).toEqual({ namespaces: ['amzn:2'], vulnerabilities: [] });
  });

  it('rejects malformed XML with a clear Error', async () => {
    const truncated = readFileSync(join(feeds, 'alas1-updateinfo-excerpt.xml'), 'utf8').slice(0, 3000);
    await expect(parseAmazonUpdateinfo(Readable.from([truncated]), 'amzn:1')).rejects.toThrow(
      /^Amazon updateinfo \(amzn:1\): malformed XML: /,
    );
    await expect(
      parseAmazonUpdateinfo(Readable.from(['<updates><update type="security"><id>x</update></updates>']), 'amzn:2'),
    ).rejects.toThrow(/^Amazon updateinfo \(amzn:2\): malformed XML: .*unexpected close tag/);
    await expect(parseAmazonUpdateinfo(Readable.from(['']), 'amzn:2')).rejects.toThrow(
      /^Amazon updateinfo \(amzn:2\): malformed XML: .*root element/,
    );
    await expect(parseAmazonUpdateinfo(Readable.from(['<updates></updates><x/>']), 'amzn:2')).rejects.toThrow(
      /^Amazon updateinfo \(amzn:2\): malformed XML: /,
    );
  });

  it('rejects a document that is not updateinfo, and bytes that are not UTF-8', async () => {
    await expect(parseAmazonUpdateinfo(Readable.from(['<html><body>503 Service Unavailable</body></html>']), 'amzn:2')).rejects.toThrow(
      'Amazon updateinfo (amzn:2): not a yum updateinfo document (root element <html>)',
    );
    await expect(parseAmazonUpdateinfo(Readable.from([Buffer.from([0x3c, 0x75, 0xff, 0xfe, 0x3e])]), 'amzn:2')).rejects.toThrow(
      'Amazon updateinfo (amzn:2): input is not valid UTF-8',
    );
  });

  it('rejects when the input stream fails', async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error('connection reset'));
      },
    });
    await expect(parseAmazonUpdateinfo(failing, 'amzn:2')).rejects.toThrow('connection reset');
  });
});

describe('amazonSeverity and amazonAdvisoryLink', () => {
  it.each([
    ['low', 'Low'],
    ['medium', 'Medium'],
    ['important', 'High'],
    ['critical', 'Critical'],
    [' IMPORTANT ', 'High'],
    ['moderate', 'Unknown'],
    ['', 'Unknown'],
  ])('severity %j → %s', (raw, expected) => {
    expect(amazonSeverity(raw)).toBe(expected);
  });

  it.each([
    ['ALAS-2018-1000', 'amzn:2018.03', 'https://alas.aws.amazon.com/ALAS-2018-1000.html'],
    ['ALAS-2018-1000', 'amzn:1', 'https://alas.aws.amazon.com/ALAS-2018-1000.html'],
    ['ALAS2-2019-1185', 'amzn:2', 'https://alas.aws.amazon.com/AL2/ALAS-2019-1185.html'],
    ['ALASKERNEL-5.10-2022-005', 'amzn:2', 'https://alas.aws.amazon.com/AL2/ALASKERNEL-5.10-2022-005.html'],
    ['ALAS2023-2023-223', 'amzn:2023', 'https://alas.aws.amazon.com/AL2023/ALAS-2023-223.html'],
    ['ALAS2-2019-1185', 'other', 'https://alas.aws.amazon.com/AL2/ALAS-2019-1185.html'],
    ['ALAS2023-2023-223', 'other', 'https://alas.aws.amazon.com/AL2023/ALAS-2023-223.html'],
  ])('link for %s in %s', (id, namespace, expected) => {
    expect(amazonAdvisoryLink(id, namespace)).toBe(expected);
  });
});

describe('amazonMirrorUrl', () => {
  it('returns the first line that is neither blank nor a comment', () => {
    expect(amazonMirrorUrl('https://cdn.amazonlinux.com/2/core/2.0/x86_64/abcdef/\n')).toBe(
      'https://cdn.amazonlinux.com/2/core/2.0/x86_64/abcdef/',
    );
    expect(
      amazonMirrorUrl(
        '# mirror list\r\n\r\n   \r\n  http://packages.us-west-2.amazonaws.com/2018.03/updates/abc/x86_64  \r\nhttp://second.invalid/\r\n',
      ),
    ).toBe('http://packages.us-west-2.amazonaws.com/2018.03/updates/abc/x86_64');
  });

  it('throws when there is no mirror', () => {
    expect(() => amazonMirrorUrl('# only a comment\n\n')).toThrow('Amazon mirror.list names no mirror');
    expect(() => amazonMirrorUrl('')).toThrow('Amazon mirror.list names no mirror');
  });
});

describe('updateinfoLocation', () => {
  it('finds the updateinfo location in the real repomd.xml (quay/claircore testdata)', () => {
    const repomd = readFileSync(join(feeds, 'repomd.xml'), 'utf8');
    expect(updateinfoLocation(repomd)).toBe('repodata/updateinfo.xml.gz');
  });

  it('ignores other data types and a location outside <data>', () => {
    const repomd =
      '<repomd xmlns="http://linux.duke.edu/metadata/repo"><location href="wrong"/>' +
      '<data type="updateinfo_zck"><location href="repodata/updateinfo.xml.zck"/></data>' +
      '<data type="primary"><location href="repodata/primary.xml.gz"/></data>' +
      '<data type="updateinfo"><checksum type="sha256">00</checksum><location href="repodata/abc-updateinfo.xml.gz"/></data>' +
      '</repomd>';
    expect(updateinfoLocation(repomd)).toBe('repodata/abc-updateinfo.xml.gz');
  });

  it('returns undefined without an updateinfo entry', () => {
    expect(updateinfoLocation('<repomd><data type="primary"><location href="p.xml.gz"/></data></repomd>')).toBeUndefined();
    expect(updateinfoLocation('<repomd><data type="updateinfo"><checksum>1</checksum></data></repomd>')).toBeUndefined();
  });

  it('throws on malformed XML', () => {
    expect(() => updateinfoLocation('<repomd><data type="updateinfo"><location href="x"></repomd>')).toThrow(
      /^repomd\.xml: malformed XML: /,
    );
  });
});
