import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { SourceData } from '../../src/model/source-data.js';
import { parseSuseOval, productOf, suseSeverity } from '../../src/ecosystems/suse/oval.js';
import { suseUpdater } from '../../src/ecosystems/suse/updater.js';

const fixture = (name: string) => createReadStream(new URL(`../fixtures/feeds/suse/${name}`, import.meta.url));
const expected = async (name: string): Promise<SourceData> =>
  JSON.parse(await readFile(new URL(`../fixtures/expected/${name}`, import.meta.url), 'utf8')) as SourceData;

/** Field by field, so a failure names the record and the field that differ. */
function expectSame(actual: SourceData, wanted: SourceData): void {
  expect(actual.namespaces).toEqual(wanted.namespaces);
  expect(actual.vulnerabilities.map((v) => `${v.namespace} ${v.name}`)).toEqual(
    wanted.vulnerabilities.map((v) => `${v.namespace} ${v.name}`),
  );
  for (const [i, want] of wanted.vulnerabilities.entries()) {
    const got = actual.vulnerabilities[i]!;
    for (const field of ['description', 'link', 'severity', 'metadata', 'fixedIn'] as const) {
      expect(got[field], `${want.namespace} ${want.name} ${field}`).toStrictEqual(want[field]);
    }
  }
}

describe('SUSE OVAL', () => {
  it('reads openSUSE Leap 42.1 (clair fixture): namespace from the criteria, EVR from the rpminfo state', async () => {
    expectSame(await parseSuseOval(fixture('opensuse-oval-excerpt.xml')), await expected('suse-opensuse-oval-excerpt.json'));
  });

  it('reads SLE 15 (vunnel fixture): GA as sles:15, LTSS/BCL variants as namespaces of their own, modules, not-affected criteria, states absent (versions from the comments, with epoch 0:)', async () => {
    expectSame(await parseSuseOval(fixture('suse-oval-excerpt.xml')), await expected('suse-oval-excerpt.json'));
  });

  it("reads a SLES 15 -affected excerpt: SP namespaces, SP4-LTSS apart from SP4 with SP4's entries as alternatives, unfixed packages above 0:0-0, not-affected packages, livepatch skipped", async () => {
    expectSame(
      await parseSuseOval(fixture('sles-15-sp6-affected-excerpt.xml'), { distribution: 'sles', release: '15' }),
      await expected('suse-sles-15-sp6-affected-excerpt.json'),
    );
  });

  it('reads two products of one namespace naming a package as alternatives: affected below the higher fix', async () => {
    const branch = (product: string, nevr: string) =>
      `<criteria operator="AND"><criterion test_ref="oval:t:tst:p" comment="${product} is installed"/>` +
      `<criterion test_ref="oval:t:tst:absent" comment="${nevr} is installed"/></criteria>`;
    const xml =
      '<oval_definitions xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5"><definitions>' +
      '<definition id="oval:org.opensuse.security:def:20990009" version="1" class="vulnerability"><metadata><title>CVE-2099-0009</title>' +
      '<description>Example.</description></metadata><criteria operator="OR">' +
      branch('SUSE Linux Enterprise Module for Basesystem 15 SP6', 'libfoo1-1.0-150600.2.1') +
      branch('SUSE Linux Enterprise Server 15 SP6', 'libfoo1-1.0-150600.5.1') +
      '</criteria></definition></definitions><tests/><objects/><states/></oval_definitions>';
    const data = await parseSuseOval(Readable.from([Buffer.from(xml)]));
    expect(data.vulnerabilities.map((v) => [v.namespace, v.fixedIn])).toEqual([
      ['sles:15.6', [{ feature: 'libfoo1', version: '0:1.0-150600.5.1' }]],
    ]);
  });

  it('keeps only the namespaces of its scope', async () => {
    const leap = await parseSuseOval(fixture('opensuse-oval-excerpt.xml'), { distribution: 'sles', release: '15' });
    expect(leap).toEqual({ namespaces: [], vulnerabilities: [] });
    const sp4 = await parseSuseOval(fixture('sles-15-sp6-affected-excerpt.xml'), { distribution: 'sles', release: '15.4' });
    expect(sp4.namespaces).toEqual(['sles:15.4', 'sles:15.4-ltss']);
    expect(sp4.vulnerabilities.map((v) => `${v.namespace} ${v.name}`)).toEqual(['sles:15.4 CVE-2099-0001', 'sles:15.4-ltss CVE-2099-0001']);
  });

  it('maps product names to namespaces', () => {
    expect(productOf('SUSE Linux Enterprise Server 15 SP6 is installed')).toBe('sles:15.6');
    expect(productOf('SUSE Linux Enterprise Server 15 is installed')).toBe('sles:15');
    expect(productOf('SUSE Linux Enterprise Server 15 SP1-LTSS is installed')).toBe('sles:15.1-ltss');
    expect(productOf('SUSE Linux Enterprise Server 15-LTSS is installed')).toBe('sles:15-ltss');
    expect(productOf('SUSE Linux Enterprise Server 15 SP1-BCL is installed')).toBe('sles:15.1-bcl');
    expect(productOf('SUSE Linux Enterprise Server 16.0 is installed')).toBe('sles:16.0');
    expect(productOf('SUSE Linux Enterprise Module for Basesystem 15 SP6 is installed')).toBe('sles:15.6');
    expect(productOf('SUSE Linux Enterprise Micro 5.5 is installed')).toBe('sle-micro:5.5');
    expect(productOf('SUSE Linux Micro 6.1 is installed')).toBe('sle-micro:6.1');
    expect(productOf('openSUSE Leap 15.6 is installed')).toBe('opensuse-leap:15.6');
    expect(productOf('SUSE Linux Enterprise Server for SAP Applications 15 SP6 is installed')).toBeUndefined();
    expect(productOf('SUSE Linux Enterprise Desktop 15 SP6 is installed')).toBeUndefined();
    expect(productOf('SUSE Linux Enterprise Module for SUSE Manager Server 4.3 is installed')).toBeUndefined();
    expect(productOf('openSUSE Leap Micro 5.5 is installed')).toBeUndefined();
  });

  it('maps SUSE severities', () => {
    expect(['None', 'low', 'Moderate', 'IMPORTANT', 'Critical', '', 'high'].map(suseSeverity)).toEqual([
      'Negligible',
      'Low',
      'Medium',
      'High',
      'Critical',
      'Unknown',
      'Unknown',
    ]);
  });

  it('refuses a document that is not OVAL', async () => {
    await expect(parseSuseOval(Readable.from([Buffer.from('<html/>')]))).rejects.toThrow(/not an OVAL definitions document/);
  });
});

describe('SUSE updater', () => {
  it('lays SUSE file names out under the base, one optional part per product', async () => {
    const parts = await suseUpdater.parts('https://mirror.example/suse/oval');
    expect(parts.map((p) => p.urls)).toEqual(
      [
        'suse.linux.enterprise.server.12',
        'suse.linux.enterprise.server.15',
        'suse.linux.enterprise.server.16',
        'suse.linux.enterprise.micro.5.1',
        'suse.linux.enterprise.micro.5.2',
        'suse.linux.enterprise.micro.5.3',
        'suse.linux.enterprise.micro.5.4',
        'suse.linux.enterprise.micro.5.5',
        'suse.linux.micro.6.0',
        'suse.linux.micro.6.1',
        'suse.linux.micro.6.2',
        'opensuse.leap.15.3',
        'opensuse.leap.15.4',
        'opensuse.leap.15.5',
        'opensuse.leap.15.6',
        'opensuse.leap.16.0',
      ].map((file) => [`https://mirror.example/suse/oval/${file}-affected.xml.gz`]),
    );
    expect(new Set(parts.map((p) => p.key)).size).toBe(parts.length);
    expect(parts.every((p) => p.optional === true)).toBe(true);
  });

  it('parses a part within its own scope', async () => {
    const parts = await suseUpdater.parts('https://ftp.suse.com/pub/projects/security/oval/');
    const sles15 = parts.find((p) => p.key === 'suse.linux.enterprise.server.15')!;
    expect(sles15.urls).toEqual(['https://ftp.suse.com/pub/projects/security/oval/suse.linux.enterprise.server.15-affected.xml.gz']);
    const data = await sles15.parse([fixture('sles-15-sp6-affected-excerpt.xml')]);
    expect(data.namespaces).toEqual(['sles:15.4', 'sles:15.4-ltss', 'sles:15.6']);
    const leap = parts.find((p) => p.key === 'opensuse.leap.15.6')!;
    expect((await leap.parse([fixture('sles-15-sp6-affected-excerpt.xml')])).vulnerabilities).toEqual([]);
  });
});
