import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { azureLinuxSeverity, parseAzureLinuxOval } from '../../src/ecosystems/azurelinux/oval.js';
import { azureLinuxUpdater } from '../../src/ecosystems/azurelinux/updater.js';

const fixture = (name: string) => createReadStream(new URL(`../fixtures/feeds/azurelinux/${name}`, import.meta.url));
const nvd = (id: string) => `https://nvd.nist.gov/vuln/detail/${id}`;

describe('parseAzureLinuxOval on the Azure Linux 3.0 excerpt', () => {
  it('reads every record field by field', async () => {
    const data = await parseAzureLinuxOval(fixture('azurelinux-3.0-oval-excerpt.xml'), 'azurelinux:3.0');
    expect(data.namespaces).toEqual(['azurelinux:3.0']);
    const common = { namespace: 'azurelinux:3.0', metadata: null };
    expect(data.vulnerabilities).toEqual([
      {
        // Two definitions for one package (less than 1.20.10-6, then 1.20.10-4), each tested on its
        // own: affected while either says so, below 1.20.10-6. The description is the first definition's.
        ...common,
        name: 'CVE-2023-1393',
        description:
          'CVE-2023-1393 affecting package xorg-x11-server for versions less than 1.20.10-6. A patched version of the package is available.',
        link: nvd('CVE-2023-1393'),
        severity: 'High',
        fixedIn: [{ feature: 'xorg-x11-server', version: '0:1.20.10-6.azl3' }],
      },
      {
        // "less than 0:1.20.7-1.azl3" beside "greater than 0:0.0.0.azl3": both bounds, one entry.
        ...common,
        name: 'CVE-2023-29409',
        description:
          'CVE-2023-29409 affecting package golang for versions less than 1.20.7-1. A patched version of the package is available.',
        link: nvd('CVE-2023-29409'),
        severity: 'Medium',
        fixedIn: [{ feature: 'golang', version: '0:1.20.7-1.azl3', affectedAbove: '0:0.0.0.azl3' }],
      },
      {
        // The state reads "0: 1.20.10-1.azl3", the description "less than  1.20.10-1".
        ...common,
        name: 'CVE-2023-39323',
        description:
          'CVE-2023-39323 affecting package golang for versions less than 1.20.10-1. A patched version of the package is available.',
        link: nvd('CVE-2023-39323'),
        severity: 'High',
        fixedIn: [{ feature: 'golang', version: '0:1.20.10-1.azl3' }],
      },
      {
        // patchable "Not Applicable".
        ...common,
        name: 'CVE-2023-45853',
        description:
          'CVE-2023-45853 affecting package cloud-hypervisor for versions less than 32.0-2. This CVE either no longer is or was never applicable.',
        link: nvd('CVE-2023-45853'),
        severity: 'Critical',
        fixedIn: [{ feature: 'cloud-hypervisor', version: null, state: 'not_affected' }],
      },
      {
        ...common,
        name: 'CVE-2024-2511',
        description:
          'CVE-2024-2511 affecting package openssl for versions less than 3.3.0-1. An upgraded version of the package is available that resolves this issue.',
        link: nvd('CVE-2024-2511'),
        severity: 'Low',
        fixedIn: [{ feature: 'openssl', version: '0:3.3.0-1.azl3' }],
      },
      {
        // One definition per package (cmake first in the document), one record per CVE.
        ...common,
        name: 'CVE-2024-6874',
        description:
          'CVE-2024-6874 affecting package cmake for versions less than 3.30.3-2. A patched version of the package is available.',
        link: nvd('CVE-2024-6874'),
        severity: 'Medium',
        fixedIn: [
          { feature: 'cmake', version: '0:3.30.3-2.azl3' },
          { feature: 'curl', version: '0:8.8.0-1.azl3' },
        ],
      },
      {
        ...common,
        name: 'CVE-2024-47191',
        description:
          'CVE-2024-47191 affecting package oath-toolkit for versions less than 2.6.7-3. A patched version of the package is available.',
        link: nvd('CVE-2024-47191'),
        severity: 'High',
        fixedIn: [{ feature: 'oath-toolkit', version: '0:2.6.7-3.azl3' }],
      },
    ]);
  });
});

describe('parseAzureLinuxOval on the CBL-Mariner 2.0 excerpt', () => {
  it('reads every record field by field', async () => {
    const data = await parseAzureLinuxOval(fixture('cbl-mariner-2.0-oval-excerpt.xml'), 'mariner:2.0');
    expect(data.namespaces).toEqual(['mariner:2.0']);
    const common = { namespace: 'mariner:2.0', metadata: null };
    expect(data.vulnerabilities).toEqual([
      {
        // patchable false, "less than or equal 0:9.16.33-1.cm2": no fix, affected through that version only.
        ...common,
        name: 'CVE-2022-3736',
        description: 'CVE-2022-3736 affecting package bind 9.16.33-1. No patch is available currently.',
        link: nvd('CVE-2022-3736'),
        severity: 'High',
        fixedIn: [{ feature: 'bind', version: null, affectedThrough: '0:9.16.33-1.cm2' }],
      },
      {
        ...common,
        name: 'CVE-2023-0687',
        description: 'CVE-2023-0687 affecting package glibc 2.35-4. This CVE either no longer is or was never applicable.',
        link: nvd('CVE-2023-0687'),
        severity: 'Critical',
        fixedIn: [{ feature: 'glibc', version: null, state: 'not_affected' }],
      },
      {
        ...common,
        name: 'CVE-2023-21977',
        description:
          'CVE-2023-21977 affecting package mysql 8.0.32-1. An upgraded version of the package is available that resolves this issue.',
        link: nvd('CVE-2023-21977'),
        severity: 'Medium',
        fixedIn: [{ feature: 'mysql', version: '0:8.0.33-1.cm2' }],
      },
      {
        ...common,
        name: 'CVE-2023-21980',
        description:
          'CVE-2023-21980 affecting package mysql 8.0.32-1. An upgraded version of the package is available that resolves this issue.',
        link: nvd('CVE-2023-21980'),
        severity: 'High',
        fixedIn: [{ feature: 'mysql', version: '0:8.0.33-1.cm2' }],
      },
      {
        ...common,
        name: 'CVE-2023-29404',
        description:
          'CVE-2023-29404 affecting package golang for versions less than 1.20.7-1. A patched version of the package is available.',
        link: nvd('CVE-2023-29404'),
        severity: 'Critical',
        fixedIn: [{ feature: 'golang', version: '0:1.20.7-1.cm2', affectedAbove: '0:1.19.0.cm2' }],
      },
    ]);
  });
});

/** A one-definition document in Microsoft's layout. */
function document(opts: { patchable?: string; severity?: string; operation?: string; evr?: string; reference?: string }): Readable {
  const reference =
    opts.reference ?? '<reference ref_id="CVE-2099-0001" ref_url="https://nvd.nist.gov/vuln/detail/CVE-2099-0001" source="CVE"/>';
  const xml =
    `<oval_definitions xmlns="http://oval.mitre.org/XMLSchema/oval-definitions-5" xmlns:linux-def="http://oval.mitre.org/XMLSchema/oval-definitions-5#linux">` +
    `<definitions><definition class="vulnerability" id="oval:com.microsoft.azurelinux:def:1" version="1"><metadata>` +
    `<title>CVE-2099-0001 affecting package example</title>${reference}` +
    (opts.patchable === undefined ? '' : `<patchable>${opts.patchable}</patchable>`) +
    (opts.severity === undefined ? '' : `<severity>${opts.severity}</severity>`) +
    `<description>example</description></metadata><criteria operator="AND">` +
    `<criterion comment="Package example is earlier than 1.0-1" test_ref="oval:com.microsoft.azurelinux:tst:1"/></criteria></definition></definitions>` +
    `<tests><linux-def:rpminfo_test check="at least one" id="oval:com.microsoft.azurelinux:tst:1" version="1">` +
    `<linux-def:object object_ref="oval:com.microsoft.azurelinux:obj:1"/><linux-def:state state_ref="oval:com.microsoft.azurelinux:ste:1"/></linux-def:rpminfo_test></tests>` +
    `<objects><linux-def:rpminfo_object id="oval:com.microsoft.azurelinux:obj:1" version="1"><linux-def:name>example</linux-def:name></linux-def:rpminfo_object></objects>` +
    `<states><linux-def:rpminfo_state id="oval:com.microsoft.azurelinux:ste:1" version="1">` +
    `<linux-def:evr datatype="evr_string" operation="${opts.operation ?? 'less than'}">${opts.evr ?? '0:1.0-1.azl3'}</linux-def:evr></linux-def:rpminfo_state></states></oval_definitions>`;
  // Small chunks: the metadata pass and the shared reader must agree across chunk boundaries.
  const bytes = Buffer.from(xml);
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += 7) chunks.push(bytes.subarray(i, i + 7));
  return Readable.from(chunks);
}

const fixedInOf = async (input: Readable) => (await parseAzureLinuxOval(input, 'azurelinux:3.0')).vulnerabilities[0]?.fixedIn;

describe('parseAzureLinuxOval', () => {
  it('reads patchable and the state operation together', async () => {
    expect(await fixedInOf(document({ patchable: 'true' }))).toEqual([{ feature: 'example', version: '0:1.0-1.azl3' }]);
    expect(await fixedInOf(document({ patchable: 'false' }))).toEqual([{ feature: 'example', version: null }]);
    expect(await fixedInOf(document({ patchable: 'true', operation: 'less than or equal' }))).toEqual([
      { feature: 'example', version: null, affectedThrough: '0:1.0-1.azl3' },
    ]);
    expect(await fixedInOf(document({ patchable: 'false', operation: 'less than or equal' }))).toEqual([
      { feature: 'example', version: null, affectedThrough: '0:1.0-1.azl3' },
    ]);
    expect(await fixedInOf(document({ patchable: 'NOT APPLICABLE' }))).toEqual([
      { feature: 'example', version: null, state: 'not_affected' },
    ]);
    // A lower bound alone bounds nothing from above: no entry.
    expect(await fixedInOf(document({ operation: 'greater than' }))).toBeUndefined();
    expect(await fixedInOf(document({ evr: 'a:1.0' }))).toBeUndefined();
  });

  it('maps the severity words, anything else Unknown', async () => {
    const severityOf = async (severity?: string) =>
      (await parseAzureLinuxOval(document({ patchable: 'true', severity }), 'azurelinux:3.0')).vulnerabilities[0]?.severity;
    expect(await severityOf('Critical')).toBe('Critical');
    expect(await severityOf(' high ')).toBe('High');
    expect(await severityOf('Medium')).toBe('Medium');
    expect(await severityOf('LOW')).toBe('Low');
    expect(await severityOf('Important')).toBe('Unknown');
    expect(await severityOf(undefined)).toBe('Unknown');
    expect(azureLinuxSeverity('medium')).toBe('Medium');
  });

  it('skips a definition without a CVE reference, and falls back to NVD for a reference without URL', async () => {
    expect((await parseAzureLinuxOval(document({ reference: '' }), 'azurelinux:3.0')).vulnerabilities).toEqual([]);
    const data = await parseAzureLinuxOval(document({ reference: '<reference ref_id="CVE-2099-0002" source="CVE"/>' }), 'mariner:2.0');
    expect(data.vulnerabilities.map((v) => [v.name, v.link])).toEqual([['CVE-2099-0002', nvd('CVE-2099-0002')]]);
  });

  it('refuses a document that is not OVAL, and a namespace it does not know', async () => {
    await expect(parseAzureLinuxOval(Readable.from([Buffer.from('<html/>')]), 'azurelinux:3.0')).rejects.toThrow(
      /not an OVAL definitions document/,
    );
    await expect(parseAzureLinuxOval(Readable.from([Buffer.from('<oval_definitions><definitions>')]), 'azurelinux:3.0')).rejects.toThrow(
      /malformed XML/,
    );
    await expect(parseAzureLinuxOval(Readable.from([]), 'azure:3')).rejects.toThrow(/namespace/);
  });
});

describe('azureLinuxUpdater', () => {
  it('has one part per OVAL file under the base', async () => {
    const parts = await azureLinuxUpdater.parts('https://raw.githubusercontent.com/microsoft/AzureLinuxVulnerabilityData/main');
    expect(azureLinuxUpdater.name).toBe('azurelinux');
    expect(parts.map((p) => [p.key, p.urls, p.optional])).toEqual([
      ['mariner:2.0', ['https://raw.githubusercontent.com/microsoft/AzureLinuxVulnerabilityData/main/cbl-mariner-2.0-oval.xml'], true],
      ['azurelinux:3.0', ['https://raw.githubusercontent.com/microsoft/AzureLinuxVulnerabilityData/main/azurelinux-3.0-oval.xml'], false],
    ]);
  });

  it("parses a part's file for its namespace", async () => {
    const parts = await azureLinuxUpdater.parts('https://mirror.example/azl/');
    const mariner = parts.find((p) => p.key === 'mariner:2.0')!;
    expect(mariner.urls).toEqual(['https://mirror.example/azl/cbl-mariner-2.0-oval.xml']);
    const data = await mariner.parse([fixture('cbl-mariner-2.0-oval-excerpt.xml')]);
    expect(data.namespaces).toEqual(['mariner:2.0']);
    expect(data.vulnerabilities).toHaveLength(5);
  });
});
