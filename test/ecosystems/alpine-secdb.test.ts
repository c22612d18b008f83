import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { alpineLink, chainguardLink, mergeSourceData, parseSecdb } from '../../src/ecosystems/alpine/secdb.js';
import type { Vulnerability } from '../../src/model/vulnerability.js';
import type { SourceData } from '../../src/model/source-data.js';

const feed = (path: string) => readFileSync(new URL(`../fixtures/feeds/${path}`, import.meta.url));
const ALPINE = 'https://security.alpinelinux.org/vuln/';
const CHAINGUARD = 'https://images.chainguard.dev/security/';

function find(data: SourceData, name: string, namespace?: string): Vulnerability | undefined {
  return data.vulnerabilities.find((v) => v.name === name && (namespace === undefined || v.namespace === namespace));
}

/** A secdb record as the parser stores it: no description, severity or metadata; a link under linkBase. */
function secdbRecord(namespace: string, name: string, fixes: Record<string, string>, linkBase = ALPINE): Vulnerability {
  const fixedIn = Object.entries(fixes).map(([feature, version]) => ({ feature, version }));
  return { namespace, name, description: '', link: `${linkBase}${name}`, severity: 'Unknown', metadata: null, fixedIn };
}

/** name → "feature@version,…" for compact whole-document comparisons. */
function summary(data: SourceData): Record<string, string> {
  return Object.fromEntries(
    data.vulnerabilities.map((v) => [v.name, v.fixedIn.map((f) => `${f.feature}@${f.version ?? 'None'}`).join(',')]),
  );
}

/** A one-package secdb document. */
function secdb(packages: Record<string, Record<string, unknown>>, distroversion: unknown = 'v3.19'): string {
  return JSON.stringify({
    distroversion,
    reponame: 'main',
    urlprefix: 'https://dl-cdn.alpinelinux.org/alpine',
    apkurl: '{{urlprefix}}/{{distroversion}}/{{reponame}}/{{arch}}/{{pkg.name}}-{{pkg.ver}}.apk',
    archs: ['x86_64'],
    packages: Object.entries(packages).map(([name, secfixes]) => ({ pkg: { name, secfixes } })),
  });
}

describe('Alpine secdb: v3.10 community excerpt', () => {
  const data = parseSecdb(feed('alpine/secdb-v3.10-community.json'), {});

  it('names its namespace from distroversion', () => {
    expect(data.namespaces).toEqual(['alpine:v3.10']);
  });

  it('has one record per id, sorted by name', () => {
    expect(summary(data)).toEqual({
      'CVE-2016-6830': 'chicken@4.11.1-r0',
      'CVE-2016-6831': 'chicken@4.11.1-r0',
      'CVE-2017-6949': 'chicken@4.12.0-r3',
      'CVE-2017-9334': 'chicken@4.12.0-r2',
      'CVE-2018-12435': 'botan@2.7.0-r0',
      'CVE-2018-20187': 'botan@2.9.0-r0',
      'CVE-2018-9127': 'botan@2.5.0-r0',
      'CVE-2018-9860': 'botan@2.6.0-r0',
      'CVE-2019-9929': 'cfengine@3.12.2-r0',
    });
    expect(data.vulnerabilities.map((v) => v.name)).toEqual([
      'CVE-2016-6830',
      'CVE-2016-6831',
      'CVE-2017-6949',
      'CVE-2017-9334',
      'CVE-2018-12435',
      'CVE-2018-20187',
      'CVE-2018-9127',
      'CVE-2018-9860',
      'CVE-2019-9929',
    ]);
  });

  it('stores each record field by field', () => {
    expect(find(data, 'CVE-2018-9860')).toEqual(secdbRecord('alpine:v3.10', 'CVE-2018-9860', { botan: '2.6.0-r0' }));
    expect(find(data, 'CVE-2016-6831')).toEqual(secdbRecord('alpine:v3.10', 'CVE-2016-6831', { chicken: '4.11.1-r0' }));
    expect(find(data, 'CVE-2019-9929')).toEqual(secdbRecord('alpine:v3.10', 'CVE-2019-9929', { cfengine: '3.12.2-r0' }));
  });
});

describe('Alpine secdb: v3.15 main excerpt', () => {
  const data = parseSecdb(feed('alpine/secdb-v3.15-main-excerpt.json'), {});

  it('keeps fixed ids and skips the "0" (not affected) key', () => {
    expect(data.namespaces).toEqual(['alpine:v3.15']);
    expect(summary(data)).toEqual({
      'CVE-2016-0634': 'bash@4.4.12-r1',
      'CVE-2017-15873': 'busybox@1.27.2-r4',
      'CVE-2017-15874': 'busybox@1.27.2-r4',
      'CVE-2017-16544': 'busybox@1.27.2-r4',
    });
    for (const id of ['CVE-2021-42373', 'CVE-2021-42376', 'CVE-2021-42377']) expect(find(data, id)).toBeUndefined();
  });

  it('stores each record field by field', () => {
    expect(find(data, 'CVE-2016-0634')).toEqual(secdbRecord('alpine:v3.15', 'CVE-2016-0634', { bash: '4.4.12-r1' }));
    expect(find(data, 'CVE-2017-16544')).toEqual(secdbRecord('alpine:v3.15', 'CVE-2017-16544', { busybox: '1.27.2-r4' }));
  });

  it('reads a string as it reads a Buffer', () => {
    expect(parseSecdb(feed('alpine/secdb-v3.15-main-excerpt.json').toString('utf8'), {})).toEqual(data);
  });
});

describe('Wolfi security.json excerpt', () => {
  const data = parseSecdb(feed('wolfi/security-excerpt.json'), { namespace: 'wolfi:rolling' });

  it('uses the given namespace and Chainguard links', () => {
    expect(data.namespaces).toEqual(['wolfi:rolling']);
    // 27 packages, 59 (version, id) pairs, 6 of them under "0": 53 records.
    expect(data.vulnerabilities).toHaveLength(53);
    expect(data.vulnerabilities.every((v) => v.namespace === 'wolfi:rolling' && v.link === `${CHAINGUARD}${v.name}`)).toBe(true);
  });

  it('stores each record field by field', () => {
    expect(find(data, 'CVE-2022-3602')).toEqual(secdbRecord('wolfi:rolling', 'CVE-2022-3602', { openssl: '3.0.7-r0' }, CHAINGUARD));
    expect(find(data, 'CVE-2022-38533')).toEqual(secdbRecord('wolfi:rolling', 'CVE-2022-38533', { binutils: '2.39-r2' }, CHAINGUARD));
    const s = summary(data);
    expect(s['CVE-2022-38126']).toBe('binutils@2.39-r1');
    expect(s['CVE-2022-38128']).toBe('binutils@2.39-r3');
    expect(s['CVE-2018-1000156']).toBe('patch@2.7.6-r3');
    expect(s['CVE-2022-37434']).toBe('zlib@1.2.12-r3');
    expect(s['CVE-2018-25032']).toBe('zlib@1.2.12-r0');
    expect(s['CVE-2023-39325']).toBe('apko@0.10.0-r6');
    expect(s['CVE-2023-3978']).toBe('apko@0.10.0-r6');
    expect(s['CVE-2023-30551']).toBe('apko@0.8.0-r1');
    expect(s['CVE-2023-28842']).toBe('apko@0.7.3-r1');
    expect(s['CVE-2022-41720']).toBe('go@1.19.4-r0');
    expect(s['CVE-2020-10735']).toBe('python3@3.0.7-r0');
  });

  it('skips every id under "0"', () => {
    for (const id of ['CVE-2016-2781', 'CVE-2019-6293', 'CVE-2017-8806', 'CVE-2023-45283', 'CVE-2023-45284', 'GHSA-jq35-85cj-fj4p']) {
      expect(find(data, id)).toBeUndefined();
    }
  });

  it('needs a namespace, as the file has no distroversion', () => {
    expect(() => parseSecdb(feed('wolfi/security-excerpt.json'), {})).toThrow(/distroversion/);
  });
});

describe('secdb rules', () => {
  it('names the namespace from distroversion, edge included', () => {
    expect(parseSecdb(secdb({ musl: { '1.2.5-r1': ['CVE-2099-0001'] } }, 'edge'), {}).namespaces).toEqual(['alpine:edge']);
    expect(parseSecdb(secdb({ musl: { '1.2.5-r1': ['CVE-2099-0001'] } }, 'v3.20'), {}).vulnerabilities[0]?.namespace).toBe('alpine:v3.20');
    expect(() => parseSecdb(secdb({}, '3.20'), {})).toThrow(/distroversion/);
    expect(() => parseSecdb('[]', {})).toThrow(/not a JSON object/);
  });

  it('links with the given function, or by namespace', () => {
    const doc = secdb({ musl: { '1.2.5-r1': ['CVE-2099-0001'] } });
    expect(parseSecdb(doc, { link: (id) => `https://example.test/${id}` }).vulnerabilities[0]?.link).toBe(
      'https://example.test/CVE-2099-0001',
    );
    expect(parseSecdb(doc, { namespace: 'chainguard:rolling' }).vulnerabilities[0]?.link).toBe(`${CHAINGUARD}CVE-2099-0001`);
    expect(alpineLink('CVE-1')).toBe(`${ALPINE}CVE-1`);
    expect(chainguardLink('CVE-1')).toBe(`${CHAINGUARD}CVE-1`);
  });

  it('splits entries on whitespace and keeps only id-looking tokens', () => {
    const data = parseSecdb(
      secdb({
        xen: {
          '4.18.2-r0': [
            'CVE-2099-0001 XSA-450',
            '  CVE-2099-0002\tGHSA-abcd-1234-efgh  ',
            '',
            '   ',
            'CVE-2099-0003, (see upstream note)',
            'ALPINE-13661',
            'cve-2099-0004',
            '#',
            42,
          ],
        },
      }),
      {},
    );
    expect(summary(data)).toEqual({
      'ALPINE-13661': 'xen@4.18.2-r0',
      'CVE-2099-0001': 'xen@4.18.2-r0',
      'CVE-2099-0002': 'xen@4.18.2-r0',
      'CVE-2099-0003': 'xen@4.18.2-r0',
      'GHSA-abcd-1234-efgh': 'xen@4.18.2-r0',
      'XSA-450': 'xen@4.18.2-r0',
    });
  });

  it('keeps the lowest fixed version (apk ordering) of an id listed twice in one package', () => {
    const versions = { '1.10-r0': ['CVE-2099-0001'], '1.9-r0': ['CVE-2099-0001'], '1.9-r1': ['CVE-2099-0001', 'CVE-2099-0002'] };
    const data = parseSecdb(secdb({ pkg: versions }), {});
    // String order would say 1.10-r0 < 1.9-r0; apk says 1.9-r0 < 1.9-r1 < 1.10-r0.
    expect(summary(data)).toEqual({ 'CVE-2099-0001': 'pkg@1.9-r0', 'CVE-2099-0002': 'pkg@1.9-r1' });
    const reversed = Object.fromEntries(Object.entries(versions).reverse());
    expect(parseSecdb(secdb({ pkg: reversed }), {})).toEqual(data);
  });

  it('keeps a real fixed version when the id is also listed under "0"', () => {
    const data = parseSecdb(secdb({ pkg: { '0': ['CVE-2099-0001', 'CVE-2099-0002'], '2.0-r0': ['CVE-2099-0001'] } }), {});
    expect(summary(data)).toEqual({ 'CVE-2099-0001': 'pkg@2.0-r0' });
  });

  it('lists every origin package fixing an id, sorted', () => {
    const data = parseSecdb(secdb({ zlib: { '1.3-r0': ['CVE-2099-0001'] }, 'apk-tools': { '2.14.1-r0': ['CVE-2099-0001'] } }), {});
    expect(find(data, 'CVE-2099-0001')?.fixedIn).toEqual([
      { feature: 'apk-tools', version: '2.14.1-r0' },
      { feature: 'zlib', version: '1.3-r0' },
    ]);
  });

  it('skips invalid apk versions and malformed packages', () => {
    const data = JSON.parse(
      secdb({
        good: {
          '1.0-r0': ['CVE-2099-0001'],
          'not-a-version': ['CVE-2099-0002'],
          '1.0-r': ['CVE-2099-0003'],
          '1.0 beta': ['CVE-2099-0004'],
        },
      }),
    ) as { packages: unknown[] };
    data.packages.push({ pkg: { name: 'nosecfixes' } }, { pkg: { secfixes: { '1.0-r0': ['CVE-2099-0005'] } } }, { notpkg: {} }, 7);
    const parsed = parseSecdb(JSON.stringify(data), {});
    expect(summary(parsed)).toEqual({ 'CVE-2099-0001': 'good@1.0-r0' });
  });
});

describe('mergeSourceData', () => {
  it('joins the files of several branches', () => {
    const merged = mergeSourceData([
      parseSecdb(feed('alpine/secdb-v3.15-main-excerpt.json'), {}),
      parseSecdb(feed('alpine/secdb-v3.10-community.json'), {}),
    ]);
    expect(merged.namespaces).toEqual(['alpine:v3.10', 'alpine:v3.15']);
    expect(merged.vulnerabilities).toHaveLength(13);
    expect(merged.vulnerabilities.map((v) => `${v.namespace} ${v.name}`).slice(0, 2)).toEqual([
      'alpine:v3.10 CVE-2016-6830',
      'alpine:v3.10 CVE-2016-6831',
    ]);
    expect(merged.vulnerabilities.map((v) => `${v.namespace} ${v.name}`).slice(-4)).toEqual([
      'alpine:v3.15 CVE-2016-0634',
      'alpine:v3.15 CVE-2017-15873',
      'alpine:v3.15 CVE-2017-15874',
      'alpine:v3.15 CVE-2017-16544',
    ]);
  });

  it('joins main and community of one branch record by record', () => {
    const main = parseSecdb(secdb({ openssl: { '3.1.4-r1': ['CVE-2099-0001'], '3.1.5-r0': ['CVE-2099-0002'] } }), {});
    const community = parseSecdb(
      secdb({ 'openssl1.1-compat': { '1.1.1w-r1': ['CVE-2099-0001'] }, openssl: { '3.1.10-r0': ['CVE-2099-0002'] } }),
      {},
    );
    const merged = mergeSourceData([main, community]);
    expect(merged.namespaces).toEqual(['alpine:v3.19']);
    expect(merged.vulnerabilities).toEqual([
      secdbRecord('alpine:v3.19', 'CVE-2099-0001', { openssl: '3.1.4-r1', 'openssl1.1-compat': '1.1.1w-r1' }),
      // 3.1.5-r0 < 3.1.10-r0 under apk ordering (not under string ordering).
      secdbRecord('alpine:v3.19', 'CVE-2099-0002', { openssl: '3.1.5-r0' }),
    ]);
    expect(mergeSourceData([community, main])).toEqual(merged);
  });

  it('takes the highest severity, the first description, link and metadata, and a known fix over none', () => {
    const v = (over: Partial<Vulnerability>): Vulnerability => ({
      namespace: 'debian:12',
      name: 'CVE-2099-0001',
      description: '',
      link: '',
      severity: 'Unknown',
      metadata: null,
      fixedIn: [],
      ...over,
    });
    const merged = mergeSourceData([
      {
        namespaces: ['debian:12'],
        vulnerabilities: [
          v({
            severity: 'Low',
            fixedIn: [
              { feature: 'a', version: null },
              { feature: 'b', version: '2.0-1' },
            ],
          }),
        ],
      },
      {
        namespaces: ['debian:12', 'debian:11'],
        vulnerabilities: [
          v({
            description: 'first',
            link: 'https://one',
            severity: 'High',
            metadata: { NVD: { CVSSv3: { Score: 9.8 } } },
            // 1:0.9-1 is above 2.0-1 under dpkg (epoch), so b keeps 2.0-1.
            fixedIn: [
              { feature: 'a', version: '1.0-1' },
              { feature: 'b', version: '1:0.9-1' },
              { feature: 'c', version: '3.0-1' },
            ],
          }),
        ],
      },
      {
        namespaces: [],
        vulnerabilities: [
          v({
            description: 'second',
            link: 'https://two',
            severity: 'Medium',
            metadata: { other: 1 },
            fixedIn: [{ feature: 'c', version: null }],
          }),
        ],
      },
    ]);
    expect(merged).toEqual({
      namespaces: ['debian:11', 'debian:12'],
      vulnerabilities: [
        v({
          description: 'first',
          link: 'https://one',
          severity: 'High',
          metadata: { NVD: { CVSSv3: { Score: 9.8 } } },
          fixedIn: [
            { feature: 'a', version: '1.0-1' },
            { feature: 'b', version: '2.0-1' },
            { feature: 'c', version: '3.0-1' },
          ],
        }),
      ],
    });
  });

  it('keeps the first version seen in a namespace of unknown format', () => {
    const part = (version: string): SourceData => ({
      namespaces: ['acme:1'],
      vulnerabilities: [
        {
          namespace: 'acme:1',
          name: 'X-1',
          description: '',
          link: '',
          severity: 'Unknown',
          metadata: null,
          fixedIn: [{ feature: 'p', version }],
        },
      ],
    });
    expect(mergeSourceData([part('2'), part('1')]).vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'p', version: '2' }]);
    expect(mergeSourceData([part('1'), part('2')]).vulnerabilities[0]?.fixedIn).toEqual([{ feature: 'p', version: '1' }]);
  });

  it('merges nothing into nothing', () => {
    expect(mergeSourceData([])).toEqual({ namespaces: [], vulnerabilities: [] });
  });
});
