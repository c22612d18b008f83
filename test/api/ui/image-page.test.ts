/**
 * The dashboard's image page (/ui/images/{digest}) against a real registry: its numbers are the
 * images API's (GET /tarsier/v1/images/{digest}), read through the data-testid attributes the page
 * documents; what to upgrade (upgradePlan) is unit-tested below; an unknown digest is an HTML 404.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upgradePlan, type PlannedPackage } from '../../../src/api/ui/pages/image.js';
import { SEVERITIES } from '../../../src/model/vulnerability.js';
import { json, testApp, type TestApp } from '../../helpers/app.js';
import { byTestId, elements, numberAt, text } from '../../helpers/html-text.js';
import { addVulnerability, type VulnerabilitySeed } from '../../helpers/vulnerabilities.js';
import { debianLayer, layer, ociLayout, pushImage } from '../../helpers/oci-image.js';
import { missingRegistryPrograms, startRegistry, type Registry } from '../../helpers/registry.js';

const missing = missingRegistryPrograms();
const skipped = missing.length > 0 ? ` (skipped: ${missing.join(', ')} not installed)` : '';

const NAMESPACE = 'debian:9';

/** bash 4.4-5, fixed in two versions: the upgrade goes to the higher. */
const BASH_HIGH: VulnerabilitySeed = { Name: 'CVE-2099-2001', Severity: 'High', FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u1' }] };
const BASH_CRITICAL: VulnerabilitySeed = {
  Name: 'CVE-2099-2002',
  Severity: 'Critical',
  FixedIn: [{ Name: 'bash', Version: '4.4-5+deb9u3' }],
};
/** zlib: no fix yet, High (remains) and Medium. */
const ZLIB_HIGH: VulnerabilitySeed = { Name: 'CVE-2099-2003', Severity: 'High', FixedIn: [{ Name: 'zlib', Version: 'None' }] };
const ZLIB_MEDIUM: VulnerabilitySeed = { Name: 'CVE-2099-2004', Severity: 'Medium', FixedIn: [{ Name: 'zlib', Version: 'None' }] };
/** jq, which the second layer installs. */
const JQ_LOW: VulnerabilitySeed = { Name: 'CVE-2099-2005', Severity: 'Low', FixedIn: [{ Name: 'jq', Version: '1.5+dfsg-2' }] };

describe.skipIf(missing.length > 0)(`the image page${skipped}`, () => {
  let registry: Registry;
  let t: TestApp;
  let scratch: string;
  let digest: string;
  let api: any;
  let page: string;
  let contentType: string | undefined;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'tarsier-ui-image-'));
    registry = await startRegistry();
    t = await testApp({ yaml: `  registries:\n    "${registry.host}": { insecure: true }` });
    for (const v of [BASH_HIGH, BASH_CRITICAL, ZLIB_HIGH, ZLIB_MEDIUM, JQ_LOW]) await addVulnerability(t, NAMESPACE, v);
    // BASH_HIGH is known exploited; EPSS ranks ZLIB_HIGH above nothing else of its severity.
    await t.pool.query(
      `INSERT INTO kev (cve, vendor_project, product, vulnerability_name, date_added, due_date, known_ransomware_campaign_use, required_action)
       VALUES ($1, 'GNU', 'bash', 'bash', '2099-01-02', '2099-01-23', 'Known', 'Upgrade')`,
      [BASH_HIGH.Name],
    );
    await t.pool.query(`INSERT INTO epss (cve, score, percentile, scored_on) VALUES ($1, 0.5, 0.97, '2099-01-03')`, [ZLIB_HIGH.Name]);

    const installsJq = layer({
      'var/lib/dpkg/status':
        readFileSync(new URL('../../fixtures/dpkg/debian-9-stretch.status', import.meta.url), 'utf8').trimEnd() +
        '\n\nPackage: jq\nStatus: install ok installed\nVersion: 1.5+dfsg-1.3\nArchitecture: amd64\n',
    });
    const layout = await ociLayout(join(scratch, 'layout'), { layers: [debianLayer(9), installsJq] });
    digest = await pushImage(registry, layout.dir, 'team/ui', 'v1');
    const scan = await t.app.inject({ method: 'POST', url: '/tarsier/v1/images', payload: { reference: `${registry.host}/team/ui:v1` } });
    expect(scan.statusCode, scan.body).toBe(201);

    const detail = await t.app.inject({ url: `/tarsier/v1/images/${digest}` });
    expect(detail.statusCode, detail.body).toBe(200);
    api = json(detail).Image;
    const res = await t.app.inject({ url: `/ui/images/${digest}` });
    expect(res.statusCode, res.body).toBe(200);
    contentType = res.headers['content-type'] as string | undefined;
    page = res.body;
  });
  afterAll(async () => {
    await registry?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  it('is an HTML page about the digest, with where registries hold it', () => {
    expect(contentType).toMatch(/^text\/html/);
    expect(page).toMatch(/^<!doctype html>/);
    expect(byTestId(page, 'image-digest')).toEqual([digest]);
    const references = elements(page, 'tr', 'reference');
    expect(references.map((r) => r.attributes['data-repository'])).toEqual(api.References.map((r: any) => `${r.Registry}/${r.Repository}`));
    expect(text(references[0]!.html)).toContain('v1');
    expect(text(references[0]!.html)).toContain('linux/amd64');
  });

  it("shows the API's Summary and KnownExploited", () => {
    expect(api.Summary).toEqual({
      Critical: { Total: 1, Fixable: 1 },
      High: { Total: 2, Fixable: 1 },
      Medium: { Total: 1, Fixable: 0 },
      Low: { Total: 1, Fixable: 1 },
    });
    for (const severity of SEVERITIES) {
      const summary = api.Summary[severity] as { Total: number; Fixable: number } | undefined;
      expect(numberAt(page, `count-${severity}`) ?? 0, severity).toBe(summary?.Total ?? 0);
      expect(numberAt(page, `fixable-${severity}`) ?? 0, severity).toBe(summary?.Fixable ?? 0);
    }
    expect(numberAt(page, 'count-Defcon1')).toBeUndefined();
    expect(api.KnownExploited).toBe(1);
    expect(numberAt(page, 'kev-count')).toBe(api.KnownExploited);
  });

  it('says what data the numbers rest on; an image of a namespace without data reads "unknown", never 0', async () => {
    const rows = elements(page, 'tr', 'namespace-data');
    expect(rows.map((r) => [r.attributes['data-namespace'], r.attributes['data-state']])).toEqual([[NAMESPACE, 'current']]);
    expect(text(rows[0]!.html)).toContain('api');
    expect(byTestId(page, 'data-missing')).toEqual([]);

    // Debian 10: no debian:10 data here.
    const layout = await ociLayout(join(scratch, 'buster'), { layers: [debianLayer(10)] });
    const buster = await pushImage(registry, layout.dir, 'team/buster', 'v1');
    const scan = await t.app.inject({
      method: 'POST',
      url: '/tarsier/v1/images',
      payload: { reference: `${registry.host}/team/buster:v1` },
    });
    expect(scan.statusCode, scan.body).toBe(201);
    const unknown = (await t.app.inject({ url: `/ui/images/${buster}` })).body;
    expect(byTestId(unknown, 'count-Critical')).toEqual(['unknown']);
    expect(byTestId(unknown, 'kev-count')).toEqual(['unknown']);
    expect(byTestId(unknown, 'data-missing')[0]).toMatch(/^Unknown: there is no vulnerability data for debian:10/);
    expect(elements(unknown, 'tr', 'namespace-data').map((r) => [r.attributes['data-namespace'], r.attributes['data-state']])).toEqual([
      ['debian:10', 'missing'],
    ]);
    // The images list says the same.
    const list = (await t.app.inject({ url: '/ui?sort=first-seen' })).body;
    const row = elements(list, 'tr', 'image-row').find((r) => r.attributes['data-digest'] === buster)!;
    expect(row.attributes['data-state']).toBe('missing');
    expect(text(row.html)).toContain('unknown no vulnerability data for debian:10');
  });

  it('says what to upgrade: bash to its highest fix removes both its findings; the unfixed High one remains', () => {
    const upgrades = elements(page, 'tr', 'upgrade');
    expect(upgrades.map((u) => u.attributes['data-package'])).toEqual(['bash']);
    expect(byTestId(page, 'upgrade-to')).toEqual(['4.4-5+deb9u3']);
    expect(byTestId(page, 'upgrade-removes')).toEqual(['2']);
    expect(numberAt(page, 'upgrade-removed')).toBe(2);
    expect(numberAt(page, 'unfixed-high')).toBe(1);
  });

  it('lists the layers bottom first with the packages each added and the vulnerabilities they bring', () => {
    const layers = elements(page, 'tr', 'layer');
    expect(layers.map((l) => l.attributes['data-digest'])).toEqual(api.Layers);
    expect(layers.map((l) => l.attributes.id)).toEqual(['layer-1', 'layer-2']);
    const added = (d: string) => api.Packages.filter((p: any) => p.AddedBy === d);
    expect(byTestId(page, 'layer-packages').map(Number)).toEqual(api.Layers.map((d: string) => added(d).length));
    expect(byTestId(page, 'layer-vulnerabilities').map(Number)).toEqual(
      api.Layers.map((d: string) => new Set(added(d).flatMap((p: any) => p.Vulnerabilities.map((v: any) => v.Name))).size),
    );
    expect(byTestId(page, 'layer-vulnerabilities')).toEqual(['4', '1']);
  });

  it('lists one row per vulnerability and package, most severe first, then KEV, then EPSS', () => {
    const findings = elements(page, 'tr', 'finding');
    const apiFindings = api.Packages.flatMap((p: any) => p.Vulnerabilities.map((v: any) => `${v.Name} ${p.Name}`));
    expect(numberAt(page, 'finding-count')).toBe(apiFindings.length);
    expect(findings.map((f) => `${f.attributes['data-vulnerability']} ${f.attributes['data-package']}`)).toEqual([
      `${BASH_CRITICAL.Name} bash`,
      `${BASH_HIGH.Name} bash`, // KEV first among the High ones
      `${ZLIB_HIGH.Name} zlib`,
      `${ZLIB_MEDIUM.Name} zlib`,
      `${JQ_LOW.Name} jq`,
    ]);
    expect([...findings.map((f) => `${f.attributes['data-vulnerability']} ${f.attributes['data-package']}`)].sort()).toEqual(
      [...apiFindings].sort(),
    );
    const row = (name: string) => findings.find((f) => f.attributes['data-vulnerability'] === name)!.html;
    expect(row(BASH_CRITICAL.Name)).toContain(`href="/ui/vulnerabilities/${BASH_CRITICAL.Name}"`);
    expect(row(BASH_CRITICAL.Name)).toContain('sev-critical');
    expect(text(row(BASH_CRITICAL.Name))).toContain('4.4-5+deb9u3');
    expect(row(BASH_HIGH.Name)).toContain('class="kev"');
    expect(text(row(ZLIB_HIGH.Name))).toContain('no fix yet');
    expect(text(row(ZLIB_HIGH.Name))).toContain('50.0 %');
    expect(row(ZLIB_HIGH.Name)).toContain('href="#layer-1"');
    expect(row(JQ_LOW.Name)).toContain('href="#layer-2"');
    // Semantic tables.
    expect(page).toMatch(/<caption>\s*Findings/);
    expect(page).toMatch(/<th scope="col">\s*Vulnerability\s*<\/th>/);
  });

  it('lists every package, collapsed when there are many', () => {
    expect(numberAt(page, 'package-count')).toBe(api.Packages.length);
    expect(elements(page, 'tr', 'package').map((p) => p.attributes['data-package'])).toEqual(api.Packages.map((p: any) => p.Name));
    expect(api.Packages.length).toBeGreaterThan(30);
    expect(page).toMatch(/<details>\s*<summary>\s*Show all [\d,]+ packages\s*<\/summary>/);
  });
});

describe('the image page of an unknown digest', () => {
  let t: TestApp;
  beforeAll(async () => void (t = await testApp()));

  it('is an HTML 404', async () => {
    const res = await t.app.inject({ url: `/ui/images/sha256:${'0'.repeat(64)}` });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('<h1>Not found</h1>');
    expect(res.body).toContain(`image sha256:${'0'.repeat(64)} is not known`);
  });

  it('answers a malformed digest with an HTML 400', async () => {
    const res = await t.app.inject({ url: '/ui/images/sha256:nothex' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });
});

describe('upgradePlan', () => {
  const pkg = (
    name: string,
    vulnerabilities: Array<[string, PlannedPackage['vulnerabilities'][number]['severity'], string | null]>,
    version = '1.0-1',
  ): PlannedPackage => ({
    name,
    version,
    namespace: 'debian:12',
    versionFormat: 'dpkg',
    vulnerabilities: vulnerabilities.map(([n, severity, fixedBy]) => ({ name: n, severity, fixedBy })),
  });

  it('is empty for no packages', () => {
    expect(upgradePlan([])).toEqual({ upgrades: [], removed: 0, remaining: 0 });
  });

  it('upgrades each package once, to the highest fixed version by the package manager order', () => {
    // dpkg: 1.0-10 > 1.0-9 (a string comparison would say the opposite); epochs win.
    const plan = upgradePlan([
      pkg('openssl', [
        ['CVE-1', 'High', '1.0-9'],
        ['CVE-2', 'Critical', '1.0-10'],
      ]),
      pkg('curl', [
        ['CVE-3', 'High', '1:0.1'],
        ['CVE-4', 'Defcon1', '2.0'],
      ]),
    ]);
    expect(plan.upgrades).toEqual([
      { package: 'curl', namespace: 'debian:12', from: '1.0-1', to: '1:0.1', removes: ['CVE-3', 'CVE-4'] },
      { package: 'openssl', namespace: 'debian:12', from: '1.0-1', to: '1.0-10', removes: ['CVE-1', 'CVE-2'] },
    ]);
    expect(plan.removed).toBe(4);
    expect(plan.remaining).toBe(0);
  });

  it('orders by findings removed, then by name; ignores Medium and lower; counts the unfixed High+ ones', () => {
    const plan = upgradePlan([
      pkg('zlib', [['CVE-1', 'High', '2']]),
      pkg('bash', [['CVE-2', 'High', '2']]),
      pkg('glibc', [
        ['CVE-3', 'Critical', '3'],
        ['CVE-4', 'High', '2'],
        ['CVE-5', 'Medium', '9'],
        ['CVE-6', 'Critical', null],
      ]),
      pkg('perl', [
        ['CVE-7', 'Low', '5'],
        ['CVE-8', 'Medium', null],
        ['CVE-9', 'High', null],
      ]),
    ]);
    expect(plan.upgrades.map((u) => [u.package, u.to, u.removes.length])).toEqual([
      ['glibc', '3', 2],
      ['bash', '2', 1],
      ['zlib', '2', 1],
    ]);
    expect(plan.removed).toBe(4);
    // CVE-6 in glibc and CVE-9 in perl: no fixed version.
    expect(plan.remaining).toBe(2);
  });

  it('counts a vulnerability unfixed in one package and fixed in another as one finding remaining', () => {
    const plan = upgradePlan([pkg('a', [['CVE-1', 'High', '2']]), pkg('b', [['CVE-1', 'High', null]])]);
    expect(plan.upgrades.map((u) => u.package)).toEqual(['a']);
    expect(plan.remaining).toBe(1);
  });

  it('compares versions of a format it does not know as strings', () => {
    const plan = upgradePlan([
      {
        ...pkg('left-pad', [
          ['GHSA-1', 'High', '1.2.0'],
          ['GHSA-2', 'High', '1.3.0'],
        ]),
        versionFormat: 'semver',
      },
    ]);
    expect(plan.upgrades[0]!.to).toBe('1.3.0');
  });
});
