import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { decompressed } from '../../src/decompress.js';
import { TarsierError } from '../../src/errors.js';
import type { SourceData } from '../../src/model/source-data.js';
import type { SourcePart } from '../../src/model/updater.js';
import { fixStateOf, type Vulnerability } from '../../src/model/vulnerability.js';
import { parseRedHatVex, rhelNamespace, type RedHatVexDocument } from '../../src/ecosystems/rhel/vex.js';
import { parseVexFeed, readArchive, readDocumentTimes, rhelVexUpdater } from '../../src/ecosystems/rhel/vex-updater.js';
import { vexArchive, vexCsv } from '../helpers/rhel-vex-feed.js';
import { tarball } from '../helpers/tarball.js';

const fixtureText = (name: string) => readFileSync(new URL(`../fixtures/feeds/redhat/csaf-vex/${name}.json`, import.meta.url), 'utf8');
const golden = (name: string) =>
  JSON.parse(readFileSync(new URL(`../fixtures/expected/rhel-vex-${name}.json`, import.meta.url), 'utf8')) as RedHatVexDocument;

const FIXTURES = ['cve-2021-0084', 'cve-2023-0045', 'cve-2023-0049', 'cve-2023-38545', 'cve-2023-42670'];

describe('parseRedHatVex on real documents', () => {
  for (const name of FIXTURES) {
    it(`${name}: every field as the golden file says`, () => {
      const got = parseRedHatVex(fixtureText(name));
      const want = golden(name);
      expect(got.id).toBe(want.id);
      expect(got.deleted).toBe(false);
      expect(got.vulnerabilities.map((v) => v.namespace)).toEqual(want.vulnerabilities.map((v) => v.namespace));
      for (const [i, v] of want.vulnerabilities.entries()) {
        const g = got.vulnerabilities[i]!;
        expect(g.name, v.namespace).toBe(v.name);
        expect(g.description, v.namespace).toBe(v.description);
        expect(g.link, v.namespace).toBe(v.link);
        expect(g.severity, v.namespace).toBe(v.severity);
        expect(g.metadata, v.namespace).toBeNull();
        expect(g.fixedIn, v.namespace).toEqual(v.fixedIn);
      }
    });
  }

  const statesOf = (doc: RedHatVexDocument) =>
    Object.fromEntries(doc.vulnerabilities.map((v) => [v.namespace, Object.fromEntries(v.fixedIn.map((f) => [f.feature, fixStateOf(f)]))]));

  it('known_affected: "Will not fix" and "Out of support scope" are will_not_fix, "Affected" is affected', () => {
    expect(statesOf(parseRedHatVex(fixtureText('cve-2023-0045')))).toMatchObject({
      'rhel:8': { kernel: 'will_not_fix', 'kernel-rt': 'affected' },
      'rhel:9': { kernel: 'will_not_fix', 'kernel-rt': 'affected' },
    });
    // RHEL 6's vim is "Out of support scope", the others "Will not fix".
    expect(statesOf(parseRedHatVex(fixtureText('cve-2023-0049')))).toEqual({
      'rhel:6': { vim: 'will_not_fix' },
      'rhel:7': { vim: 'will_not_fix' },
      'rhel:8': { vim: 'will_not_fix' },
      'rhel:9': { vim: 'will_not_fix' },
    });
  });

  it('current documents: "Fix deferred" is fix_deferred, "Will not fix" and "Out of support scope" are will_not_fix, per RHEL major', () => {
    // gawk: RHEL 6 out of support scope, 7–9 will not fix; OpenShift's rhcos in the vim document is not RHEL.
    expect(statesOf(parseRedHatVex(fixtureText('cve-2023-4156')))).toEqual({
      'rhel:6': { gawk: 'will_not_fix' },
      'rhel:7': { gawk: 'will_not_fix' },
      'rhel:8': { gawk: 'will_not_fix' },
      'rhel:9': { gawk: 'will_not_fix' },
    });
    const vim = parseRedHatVex(fixtureText('cve-2025-1215'));
    expect(statesOf(vim)).toEqual({
      'rhel:6': { vim: 'will_not_fix' },
      'rhel:7': { vim: 'will_not_fix' },
      'rhel:8': { vim: 'will_not_fix' },
      'rhel:9': { vim: 'fix_deferred' },
      'rhel:10': { vim: 'fix_deferred' },
    });
    expect(vim.vulnerabilities.every((v) => v.severity === 'Low' && v.fixedIn.every((f) => f.version === null))).toBe(true);
  });

  it('known_not_affected is not_affected, with no version', () => {
    const doc = parseRedHatVex(fixtureText('cve-2023-42670'));
    const all = doc.vulnerabilities.flatMap((v) => v.fixedIn);
    expect(all.length).toBeGreaterThan(100);
    expect(all.every((f) => f.state === 'not_affected' && f.version === null)).toBe(true);
    // Red Hat Storage 3 (cpe:/a:redhat:storage:3) is not RHEL.
    expect(doc.vulnerabilities.map((v) => v.namespace)).toEqual(['rhel:6', 'rhel:7', 'rhel:8', 'rhel:9']);
  });

  it("CVE-2024-7348 (postgresql): a module's packages are components of the module, itself a component of the product; each fix is scoped to its stream, E4S left out", () => {
    const { vulnerabilities } = parseRedHatVex(fixtureText('cve-2024-7348-modules-excerpt'));
    const macros = (version: string, module: string) => ({
      feature: 'postgresql-test-rpm-macros',
      version,
      arches: ['noarch'],
      module,
    });
    expect(vulnerabilities.map((v) => [v.namespace, v.name, v.severity, v.fixedIn])).toEqual([
      [
        'rhel:8',
        'CVE-2024-7348',
        'High',
        [
          macros('0:12.20-1.module+el8.10.0+22214+9beb89d6', 'postgresql:12'),
          macros('0:13.16-1.module+el8.10.0+22213+5adc94fe', 'postgresql:13'),
          macros('0:15.8-1.module+el8.10.0+22212+a51fe170', 'postgresql:15'),
        ],
      ],
      ['rhel:9', 'CVE-2024-7348', 'High', [macros('0:15.8-1.module+el9.4.0+22208+cd6b92ff', 'postgresql:15')]],
    ]);
  });

  it('fixed: the main stream keeps the later of its two fixes; EUS 9.0, Satellite and JBCS builds are left out', () => {
    const rhel9 = parseRedHatVex(fixtureText('cve-2023-38545')).vulnerabilities.find((v) => v.namespace === 'rhel:9')!;
    expect(new Set(rhel9.fixedIn.map((f) => f.version))).toEqual(new Set(['0:7.76.1-26.el9_3.2']));
    expect(rhel9.fixedIn.every((f) => fixStateOf(f) === 'fixed')).toBe(true);
  });
});

// --- Hand-made documents for what the real ones do not show.

interface Status {
  id: string;
  cpe: string;
  purl?: string;
  name?: string;
}

function vexDocument(opts: {
  id?: string;
  status?: string;
  fixed?: Status[];
  affected?: Status[];
  notAffected?: Status[];
  investigating?: Status[];
  remediations?: Array<{ category: string; details?: string; product_ids: string[] }>;
  threats?: Array<{ details: string; product_ids: string[] }>;
  aggregate?: string;
}): string {
  const all = [...(opts.fixed ?? []), ...(opts.affected ?? []), ...(opts.notAffected ?? []), ...(opts.investigating ?? [])];
  const products = new Map<string, string>();
  const components = new Map<string, Status>();
  for (const s of all) {
    const [product, component] = [s.id.slice(0, s.id.indexOf(':')), s.id.slice(s.id.indexOf(':') + 1)];
    products.set(product, s.cpe);
    components.set(component, s);
  }
  const id = opts.id ?? 'CVE-2099-0001';
  return JSON.stringify({
    document: {
      aggregate_severity: { text: opts.aggregate ?? 'Moderate' },
      category: 'csaf_vex',
      tracking: { id, status: opts.status ?? 'final' },
    },
    product_tree: {
      branches: [
        {
          category: 'vendor',
          name: 'Red Hat',
          branches: [
            ...[...products].map(([product, cpe]) => ({
              category: 'product_name',
              name: product,
              product: { name: product, product_id: product, product_identification_helper: { cpe } },
            })),
            ...[...components].map(([component, s]) => ({
              category: 'product_version',
              name: s.name ?? component,
              product: {
                name: s.name ?? component,
                product_id: component,
                ...(s.purl ? { product_identification_helper: { purl: s.purl } } : {}),
              },
            })),
          ],
        },
      ],
      relationships: all.map((s) => ({
        category: 'default_component_of',
        full_product_name: { name: s.id, product_id: s.id },
        product_reference: s.id.slice(s.id.indexOf(':') + 1),
        relates_to_product_reference: s.id.slice(0, s.id.indexOf(':')),
      })),
    },
    vulnerabilities: [
      {
        cve: id,
        notes: [
          { category: 'summary', text: 'libfoo: summary' },
          { category: 'description', text: '  An example\n   flaw in libfoo.  ' },
        ],
        product_status: {
          ...(opts.fixed ? { fixed: opts.fixed.map((s) => s.id) } : {}),
          ...(opts.affected ? { known_affected: opts.affected.map((s) => s.id) } : {}),
          ...(opts.notAffected ? { known_not_affected: opts.notAffected.map((s) => s.id) } : {}),
          ...(opts.investigating ? { under_investigation: opts.investigating.map((s) => s.id) } : {}),
        },
        remediations: opts.remediations ?? [],
        threats: (opts.threats ?? []).map((t) => ({ category: 'impact', ...t })),
      },
    ],
  });
}

const RHEL9 = 'cpe:/a:redhat:enterprise_linux:9::appstream';
const fixedRpm = (product: string, cpe: string, name: string, version: string, arch = 'x86_64', extra = '') => ({
  id: `${product}:${name}-${version}.${arch}`,
  cpe,
  purl: `pkg:rpm/redhat/${name}@${version.replace(/^\d+:/, '')}?arch=${arch}${extra}`,
});
const unfixedRpm = (product: string, cpe: string, name: string, qualifiers = '') => ({
  id: `${product}:${name}`,
  cpe,
  purl: `pkg:rpm/redhat/${name}${qualifiers}`,
});

const only = (json: string): Vulnerability[] => [...parseRedHatVex(json).vulnerabilities];

describe('parseRedHatVex rules', () => {
  it('none_available "Deferred" (and "Fix deferred") is fix_deferred; no remediation is affected', () => {
    const ids = ['red_hat_enterprise_linux_9:libfoo', 'red_hat_enterprise_linux_9:libbar', 'red_hat_enterprise_linux_9:libbaz'];
    const [v] = only(
      vexDocument({
        affected: ['libfoo', 'libbar', 'libbaz'].map((n) =>
          unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', n),
        ),
        remediations: [
          { category: 'none_available', details: 'Deferred', product_ids: [ids[0]!] },
          { category: 'none_available', details: 'Fix deferred', product_ids: [ids[1]!] },
          { category: 'workaround', details: 'Do not use libbaz.', product_ids: ids },
        ],
      }),
    );
    expect(v!.fixedIn).toEqual([
      { feature: 'libbar', version: null, state: 'fix_deferred' },
      { feature: 'libbaz', version: null },
      { feature: 'libfoo', version: null, state: 'fix_deferred' },
    ]);
  });

  it('fixed versions carry the epoch qualifier (0 when absent); source rpms are left out, an rpmmod qualifier scopes a fix to its module stream', () => {
    const [v] = only(
      vexDocument({
        fixed: [
          fixedRpm('AppStream-9.4.0.Z.MAIN', RHEL9, 'openssl', '1:3.0.7-99.el9_4', 'x86_64', '&epoch=1'),
          fixedRpm('AppStream-9.4.0.Z.MAIN', RHEL9, 'openssl', '1:3.0.7-99.el9_4', 'src', '&epoch=1'),
          fixedRpm('AppStream-9.4.0.Z.MAIN', RHEL9, 'libfoo', '0:1.2-3.el9_4'),
          fixedRpm('AppStream-9.4.0.Z.MAIN', RHEL9, 'only-source', '0:1.0-1.el9', 'src'),
          fixedRpm(
            'AppStream-9.4.0.Z.MAIN',
            RHEL9,
            'nodejs',
            '1:18.19.0-1.module+el9.3.0+1+abc',
            'x86_64',
            '&rpmmod=nodejs:18:9030020231120082734:rhel9',
          ),
        ],
        threats: [{ details: 'Important', product_ids: ['AppStream-9.4.0.Z.MAIN:libfoo-0:1.2-3.el9_4.x86_64'] }],
      }),
    );
    expect(v).toEqual({
      namespace: 'rhel:9',
      name: 'CVE-2099-0001',
      description: 'An example flaw in libfoo.',
      link: 'https://access.redhat.com/security/cve/CVE-2099-0001',
      severity: 'High',
      metadata: null,
      fixedIn: [
        { feature: 'libfoo', version: '0:1.2-3.el9_4', arches: ['x86_64'] },
        { feature: 'nodejs', version: '0:18.19.0-1.module+el9.3.0+1+abc', arches: ['x86_64'], module: 'nodejs:18' },
        { feature: 'openssl', version: '1:3.0.7-99.el9_4', arches: ['x86_64'] },
      ],
    });
  });

  it('a package namespaced into a module stream (pkg:rpmmod/redhat/<name:stream>/<name>) is its source package, scoped to the stream; a module itself names no package', () => {
    const [v] = only(
      vexDocument({
        affected: [
          {
            id: 'red_hat_enterprise_linux_8:ruby:2.6/ruby',
            cpe: 'cpe:/o:redhat:enterprise_linux:8',
            purl: 'pkg:rpmmod/redhat/ruby:2.6/ruby',
          },
          { id: 'red_hat_enterprise_linux_8:ruby', cpe: 'cpe:/o:redhat:enterprise_linux:8', purl: 'pkg:rpm/redhat/ruby?arch=src' },
          {
            id: 'red_hat_enterprise_linux_8:ruby:3.0:8060020220810162001:ad008a3a',
            cpe: 'cpe:/o:redhat:enterprise_linux:8',
            purl: 'pkg:rpmmod/redhat/ruby@3.0:8060020220810162001:ad008a3a',
          },
        ],
        remediations: [{ category: 'no_fix_planned', details: 'Will not fix', product_ids: ['red_hat_enterprise_linux_8:ruby:2.6/ruby'] }],
      }),
    );
    expect(v!.fixedIn).toEqual([
      { feature: 'ruby', version: null, source: true },
      { feature: 'ruby', version: null, module: 'ruby:2.6', state: 'will_not_fix', source: true },
    ]);
  });

  it('an unfixed component named by its source rpm (arch=src) is marked as naming a source package; a fixed source rpm beats it', () => {
    const [v] = only(
      vexDocument({
        fixed: [
          fixedRpm('AppStream-9.4.0.Z.MAIN', RHEL9, 'curl', '0:7.76.1-29.el9_4', 'src'),
          fixedRpm('AppStream-9.4.0.Z.MAIN', RHEL9, 'libcurl', '0:7.76.1-29.el9_4'),
        ],
        affected: [
          unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'vim', '?arch=src'),
          unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'curl', '?arch=src'),
          unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'libfoo'),
        ],
        remediations: [{ category: 'none_available', details: 'Fix deferred', product_ids: ['red_hat_enterprise_linux_9:vim'] }],
      }),
    );
    // vim: its binaries (vim-minimal, vim-enhanced) are matched by their source; libfoo names a binary;
    // curl's source rpm is fixed in a minor release, whose binaries carry the fix (libcurl).
    expect(v!.fixedIn).toEqual([
      { feature: 'libcurl', version: '0:7.76.1-29.el9_4', arches: ['x86_64'] },
      { feature: 'libfoo', version: null },
      { feature: 'vim', version: null, state: 'fix_deferred', source: true },
    ]);
  });

  it("Red Hat's current documents name vim and gawk by their source rpm", () => {
    for (const [name, component] of [
      ['cve-2025-1215', 'vim'],
      ['cve-2023-4156', 'gawk'],
    ] as const) {
      const entries = parseRedHatVex(fixtureText(name)).vulnerabilities.map((v) => [
        v.namespace,
        v.fixedIn.map((f) => [f.feature, f.source]),
      ]);
      expect(entries.length, name).toBeGreaterThan(3);
      for (const [namespace, fixedIn] of entries) expect(fixedIn, `${name} ${namespace}`).toEqual([[component, true]]);
    }
  });

  it('a component without a purl is read from its name (name-E:V-R.arch for a fix)', () => {
    const [v] = only(
      vexDocument({
        fixed: [{ id: '8Base-x:libfoo-2:1.0-4.el8.aarch64', cpe: 'cpe:/a:redhat:enterprise_linux:8::appstream' }],
        affected: [{ id: 'red_hat_enterprise_linux_8:libbar', cpe: 'cpe:/o:redhat:enterprise_linux:8' }],
        notAffected: [{ id: 'red_hat_enterprise_linux_8:container-tools:rhel8/podman', cpe: 'cpe:/o:redhat:enterprise_linux:8' }],
      }),
    );
    expect(v!.fixedIn).toEqual([
      { feature: 'libbar', version: null },
      { feature: 'libfoo', version: '2:1.0-4.el8', arches: ['aarch64'] },
    ]);
  });

  it('EUS, AUS, E4S, TUS, ELS and layered products are left out; under_investigation is left out', () => {
    const out = only(
      vexDocument({
        fixed: [
          fixedRpm('AppStream-9.0.0.Z.EUS', 'cpe:/a:redhat:rhel_eus:9.0::appstream', 'libfoo', '0:1.0-1.el9_0'),
          fixedRpm('7Server-7.7.AUS', 'cpe:/o:redhat:rhel_aus:7.7::server', 'libfoo', '0:1.0-1.el7_7'),
          fixedRpm('8Base-RHOSE-4.12', 'cpe:/a:redhat:openshift:4.12::el8', 'libfoo', '0:1.0-1.el8'),
          fixedRpm('7Server-ELS', 'cpe:/o:redhat:rhel_els:7', 'libfoo', '0:1.0-2.el7'),
        ],
        investigating: [unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'libbar')],
      }),
    );
    expect(out).toEqual([]);
  });

  it('one package named twice in a namespace: a fix beats any other state, the higher fix of each architecture the lower', () => {
    const [v] = only(
      vexDocument({
        fixed: [
          fixedRpm('AppStream-9.2.0.Z.MAIN.EUS', RHEL9, 'libfoo', '0:1.0-10.el9_2'),
          fixedRpm('AppStream-9.4.0.Z.MAIN', RHEL9, 'libfoo', '0:1.0-9.el9_4'),
          fixedRpm('AppStream-9.4.0.Z.MAIN', RHEL9, 'libfoo', '0:1.0-11.el9_4', 'aarch64'),
        ],
        affected: [
          unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'libfoo'),
          unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'libbar'),
          { id: 'red_hat_enterprise_linux_9:libbar.src', cpe: 'cpe:/o:redhat:enterprise_linux:9', purl: 'pkg:rpm/redhat/libbar?arch=src' },
        ],
        notAffected: [unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'libbaz')],
        remediations: [{ category: 'no_fix_planned', details: 'Will not fix', product_ids: ['red_hat_enterprise_linux_9:libbar'] }],
      }),
    );
    // libbar: "Will not fix" for the binary, no remediation (affected) for the source rpm of the same name:
    // affected, named by the source (which stands for the binary of its name too).
    // libfoo: fixed for x86_64 in two minor releases (the later build of the EUS stream is the higher),
    // for aarch64 in one; a package of another architecture is named by no fixed product.
    expect(v!.fixedIn).toEqual([
      { feature: 'libbar', version: null, source: true },
      { feature: 'libbaz', version: null, state: 'not_affected' },
      { feature: 'libfoo', version: '0:1.0-11.el9_4', arches: ['aarch64'] },
      { feature: 'libfoo', version: '0:1.0-10.el9_2', arches: ['x86_64'] },
    ]);
  });

  it('severity: the highest impact among the namespace’s products, else aggregate_severity', () => {
    const out = only(
      vexDocument({
        aggregate: 'critical',
        affected: [
          unfixedRpm('red_hat_enterprise_linux_8', 'cpe:/o:redhat:enterprise_linux:8', 'libfoo'),
          unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'libfoo'),
          unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'libbar'),
        ],
        threats: [
          { details: 'Low', product_ids: ['red_hat_enterprise_linux_9:libfoo'] },
          { details: 'Moderate', product_ids: ['red_hat_enterprise_linux_9:libbar'] },
        ],
      }),
    );
    expect(out.map((v) => [v.namespace, v.severity])).toEqual([
      ['rhel:8', 'Critical'],
      ['rhel:9', 'Medium'],
    ]);
  });

  it('a deleted document gives nothing and says so; a product id without a relationship is skipped', () => {
    expect(parseRedHatVex('{"document":{"tracking":{"id":"CVE-2023-0030","status":"deleted"}}}')).toEqual({
      id: 'CVE-2023-0030',
      deleted: true,
      vulnerabilities: [],
    });
    const json = JSON.parse(
      vexDocument({ affected: [unfixedRpm('red_hat_enterprise_linux_9', 'cpe:/o:redhat:enterprise_linux:9', 'libfoo')] }),
    );
    json.vulnerabilities[0].product_status.known_affected.push('nowhere:libbar');
    expect(only(JSON.stringify(json))[0]!.fixedIn).toEqual([{ feature: 'libfoo', version: null }]);
    expect(() => parseRedHatVex('{not json')).toThrow();
  });

  it('rhelNamespace: the main stream of RHEL only', () => {
    const cases: Array<[string, string | undefined]> = [
      ['cpe:/o:redhat:enterprise_linux:9', 'rhel:9'],
      ['cpe:/a:redhat:enterprise_linux:9::appstream', 'rhel:9'],
      ['cpe:/o:redhat:enterprise_linux:9::baseos', 'rhel:9'],
      ['cpe:/a:redhat:enterprise_linux:8::crb', 'rhel:8'],
      ['cpe:/o:redhat:enterprise_linux:7::server', 'rhel:7'],
      ['cpe:/o:redhat:enterprise_linux:10', 'rhel:10'],
      ['cpe:2.3:o:redhat:enterprise_linux:9:*:*:*:*:*:*:*', 'rhel:9'],
      ['cpe:/a:redhat:rhel_eus:9.2::appstream', undefined],
      ['cpe:/a:redhat:rhel_e4s:8.6::appstream', undefined],
      ['cpe:/o:redhat:rhel_aus:7.7::server', undefined],
      ['cpe:/a:redhat:rhel_tus:8.4::appstream', undefined],
      ['cpe:/o:redhat:rhel_els:7', undefined],
      ['cpe:/a:redhat:enterprise_linux:9.2::appstream', undefined],
      ['cpe:/a:redhat:openshift:4.16::el9', undefined],
      ['cpe:/a:redhat:satellite:6', undefined],
      ['cpe:/a:redhat:storage:3', undefined],
      ['', undefined],
    ];
    for (const [cpe, namespace] of cases) expect(rhelNamespace(cpe), cpe).toBe(namespace);
  });
});

// --- The updater: archive + changes.csv + deletions.csv.

const BASE = 'https://security.example/data/csaf/v2/vex';
const ROOT = `${BASE}/`;

/** A feed: path → content, served to parts() by fetchText and to parse() as the runner would (decompressed). */
function feed(files: Record<string, string | Buffer>) {
  const fetchText = async (url: string) => {
    const body = files[url.slice(ROOT.length)];
    if (body === undefined) throw new Error(`GET ${url} answered 404`);
    return body.toString();
  };
  const streams = async (urls: readonly string[]) =>
    Promise.all(
      urls.map((url) => {
        const body = files[url.slice(ROOT.length)];
        if (body === undefined) throw new Error(`${url} does not exist upstream`);
        return decompressed(Readable.from([Buffer.from(body)]), (detail) => new TarsierError('internal', detail));
      }),
    );
  return { fetchText, streams };
}

const csv = vexCsv;
const archiveOf = vexArchive;

/** cve-2023-0049 as re-published: RHEL 9's vim now "Deferred" instead of "Will not fix". */
function republished0049(): string {
  const doc = JSON.parse(fixtureText('cve-2023-0049'));
  for (const r of doc.vulnerabilities[0].remediations) {
    if (r.category === 'no_fix_planned') r.product_ids = r.product_ids.filter((id: string) => id !== 'red_hat_enterprise_linux_9:vim');
  }
  doc.vulnerabilities[0].remediations.push({
    category: 'none_available',
    details: 'Deferred',
    product_ids: ['red_hat_enterprise_linux_9:vim'],
  });
  return JSON.stringify(doc);
}

describe('rhelVexUpdater', () => {
  const upstream = () => ({
    'archive_latest.txt': 'csaf_vex_2023-10-31.tar.zst\n',
    'csaf_vex_2023-10-31.tar.zst': archiveOf({
      '2021/cve-2021-0084.json': fixtureText('cve-2021-0084'),
      '2023/cve-2023-0045.json': fixtureText('cve-2023-0045'),
      '2023/cve-2023-0049.json': fixtureText('cve-2023-0049'),
      './2023/cve-2023-42670.json': fixtureText('cve-2023-42670'),
    }),
    'changes.csv': csv([
      ['2023/cve-2023-0049.json', '2023-11-02T08:00:00+00:00'], // re-published since the archive
      ['2023/cve-2023-38545.json', '2023-10-30T12:00:00+00:00'], // new, less than a day before the archive's date
      ['2023/cve-2023-0045.json', '2023-10-01T00:00:00+00:00'], // in the archive, unchanged since
      ['2021/cve-2021-0084.json', '2023-09-01T00:00:00+00:00'],
      ['2023/cve-2023-9999.json', '2023-11-01T00:00:00+00:00'], // changed, then withdrawn: not fetched
      ['2023/cve-2023-42670.json', '2023-10-15T00:00:00+00:00'],
      ['index.txt', '2023-11-03T00:00:00+00:00'], // not a document: skipped
    ]),
    'deletions.csv': csv([
      ['2021/cve-2021-0084.json', '2023-11-01T09:00:00+00:00'], // withdrawn after the archive: disappears
      ['2023/cve-2023-9999.json', '2023-11-01T10:00:00+00:00'],
      ['2023/cve-2023-42670.json', '2023-01-01T00:00:00+00:00'], // deleted, then re-published: stays
    ]),
    '2023/cve-2023-0049.json': republished0049(),
    '2023/cve-2023-38545.json': fixtureText('cve-2023-38545'),
  });

  it('has one part: the archive archive_latest.txt names, deletions.csv, and the documents changed since the archive', async () => {
    const { fetchText } = feed(upstream());
    const parts: ReadonlyArray<SourcePart<SourceData>> = await rhelVexUpdater.parts(BASE, fetchText);
    expect(rhelVexUpdater.name).toBe('rhel-vex');
    expect(rhelVexUpdater.kind).toBe('vulnerabilities');
    expect(parts.map((p) => [p.key, p.urls, p.optional ?? false])).toEqual([
      [
        'rhel-vex',
        [`${ROOT}csaf_vex_2023-10-31.tar.zst`, `${ROOT}deletions.csv`, `${ROOT}2023/cve-2023-0049.json`, `${ROOT}2023/cve-2023-38545.json`],
        false,
      ],
    ]);
  });

  it('overlays the archive: a changed document replaces the archived one, a deleted one disappears, a new one is added', async () => {
    const { fetchText, streams } = feed(upstream());
    const [part] = await rhelVexUpdater.parts(`${BASE}/`, fetchText);
    const data = await part!.parse(await streams(part!.urls));
    // Every major the feed covers, rhel:5 too though its one record was withdrawn: the runner withdraws it there.
    expect(data.namespaces).toEqual(['rhel:5', 'rhel:6', 'rhel:7', 'rhel:8', 'rhel:9', 'rhel:10']);
    expect(data.vulnerabilities.filter((v) => v.namespace === 'rhel:5')).toEqual([]);
    const names = (ns: string) => data.vulnerabilities.filter((v) => v.namespace === ns).map((v) => v.name);
    // CVE-2021-0084 (withdrawn) is gone; CVE-2023-42670 came back after its deletion.
    expect(names('rhel:9')).toEqual(['CVE-2023-0045', 'CVE-2023-0049', 'CVE-2023-38545', 'CVE-2023-42670']);
    expect(data.vulnerabilities.some((v) => v.name === 'CVE-2021-0084')).toBe(false);
    const vim = (ns: string) => data.vulnerabilities.find((v) => v.namespace === ns && v.name === 'CVE-2023-0049')!.fixedIn;
    expect(vim('rhel:9')).toEqual([{ feature: 'vim', version: null, state: 'fix_deferred' }]);
    expect(vim('rhel:8')).toEqual([{ feature: 'vim', version: null, state: 'will_not_fix' }]);
    // The other documents as parsed alone.
    for (const name of ['cve-2023-0045', 'cve-2023-38545', 'cve-2023-42670']) {
      for (const v of golden(name).vulnerabilities) {
        expect(data.vulnerabilities.find((d) => d.namespace === v.namespace && d.name === v.name)).toEqual(v);
      }
    }
  });

  it('a document that marks itself deleted drops its archived copy', async () => {
    const files = {
      ...upstream(),
      '2023/cve-2023-0049.json': '{"document":{"tracking":{"id":"CVE-2023-0049","status":"deleted"}}}',
    };
    const { fetchText, streams } = feed(files);
    const [part] = await rhelVexUpdater.parts(BASE, fetchText);
    const data = await part!.parse(await streams(part!.urls));
    expect(data.vulnerabilities.some((v) => v.name === 'CVE-2023-0049')).toBe(false);
  });

  it('refuses an archive_latest.txt that names no dated archive, an archive that is no tar or holds no document', async () => {
    await expect(rhelVexUpdater.parts(BASE, feed({ ...upstream(), 'archive_latest.txt': 'latest.tar.zst' }).fetchText)).rejects.toThrow(
      /archive_latest\.txt names/,
    );
    const plan = { changed: [], changes: new Map<string, number>() };
    const text = (s: string) => Readable.from([Buffer.from(s)]);
    await expect(parseVexFeed([text('not a tar at all, just text'.repeat(40)), text('')], plan)).rejects.toThrow(/not a tar|cut short/);
    await expect(parseVexFeed([Readable.from([tarball([{ path: 'README', content: 'hi' }])]), text('')], plan)).rejects.toThrow(
      /holds no document/,
    );
    const broken = tarball([{ path: '2023/cve-2023-0001.json', content: '{"document":' }]);
    await expect(parseVexFeed([Readable.from([broken]), text('')], plan)).rejects.toThrow(/cve-2023-0001\.json is not a JSON document/);
    await expect(
      readArchive(Readable.from([tarball([{ path: '2023/cve-2023-0001.json', content: '{}' }], { eof: false })]), () => {}),
    ).rejects.toThrow(/cut short/);
  });

  it('reads changes.csv and deletions.csv: the latest time per document; a bad time fails', () => {
    const times = readDocumentTimes(
      csv([
        ['2023/cve-2023-0001.json', '2023-11-01T00:00:00+00:00'],
        ['2023/cve-2023-0001.json', '2023-11-02T00:00:00Z'],
        ['../etc/passwd', '2023-11-02T00:00:00Z'],
      ]),
      'changes.csv',
    );
    expect([...times]).toEqual([['2023/cve-2023-0001.json', Date.parse('2023-11-02T00:00:00Z')]]);
    expect(() => readDocumentTimes('"2023/cve-2023-0001.json","yesterday"\n', 'changes.csv')).toThrow(/line 1/);
  });
});
