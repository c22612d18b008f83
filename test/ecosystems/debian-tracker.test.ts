import { createReadStream, readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { DEBIAN_RELEASES, debianNamespace } from '../../src/ecosystems/debian/releases.js';
import { parseDebianTracker, urgencySeverity } from '../../src/ecosystems/debian/tracker.js';
import type { Vulnerability } from '../../src/model/vulnerability.js';

const EXCERPT = new URL('../fixtures/feeds/debian/security-tracker-excerpt.json', import.meta.url);
const LINK = 'https://security-tracker.debian.org/tracker/';

function parseDoc(doc: unknown) {
  return parseDebianTracker(Readable.from([JSON.stringify(doc)]));
}

function find(vulns: readonly Vulnerability[], namespace: string, name: string): Vulnerability | undefined {
  return vulns.find((v) => v.namespace === namespace && v.name === name);
}

/** A tracker entry for one CVE: codename → release entry. */
function cve(releases: Record<string, Record<string, unknown>>, description?: string) {
  return { scope: 'remote', ...(description === undefined ? {} : { description }), releases };
}

describe('Debian release table', () => {
  it('maps codenames to namespaces', () => {
    expect(DEBIAN_RELEASES).toEqual({
      squeeze: '6',
      wheezy: '7',
      jessie: '8',
      stretch: '9',
      buster: '10',
      bullseye: '11',
      bookworm: '12',
      trixie: '13',
      forky: '14',
      duke: '15',
      sid: 'unstable',
      unstable: 'unstable',
    });
    expect(debianNamespace('bookworm')).toBe('debian:12');
    expect(debianNamespace('sid')).toBe('debian:unstable');
    expect(debianNamespace('experimental')).toBeUndefined();
    expect(debianNamespace('toString')).toBeUndefined();
  });
});

describe('urgency → severity', () => {
  it.each([
    ['unimportant', 'Negligible'],
    ['end-of-life', 'Negligible'],
    ['low', 'Low'],
    ['low*', 'Low'],
    ['low**', 'Low'],
    ['medium', 'Medium'],
    ['medium**', 'Medium'],
    ['high', 'High'],
    ['high*', 'High'],
    ['high**', 'High'],
    ['not yet assigned', 'Unknown'],
    ['critical', 'Unknown'],
    ['', 'Unknown'],
    [undefined, 'Unknown'],
  ])('%s → %s', (urgency, severity) => {
    expect(urgencySeverity(urgency)).toBe(severity);
  });
});

describe('Debian Security Tracker excerpt', () => {
  it('finds the namespaces and every record', async () => {
    const data = await parseDebianTracker(createReadStream(EXCERPT));
    expect(data.namespaces).toEqual(['debian:10', 'debian:11', 'debian:12', 'debian:13', 'debian:8', 'debian:9', 'debian:unstable']);
    expect(data.unknownReleases).toEqual([]);
    expect(data.vulnerabilities.map((v) => `${v.namespace} ${v.name}`)).toEqual([
      'debian:10 CVE-2005-3111',
      'debian:10 CVE-2008-7220',
      'debian:10 CVE-2013-1444',
      'debian:10 CVE-2022-0456',
      'debian:11 CVE-2022-0456',
      'debian:11 CVE-2025-53603',
      'debian:12 CVE-2022-0456',
      'debian:12 CVE-2025-53603',
      'debian:13 CVE-2025-53603',
      'debian:8 CVE-2005-3111',
      'debian:8 CVE-2008-7220',
      'debian:8 CVE-2013-1444',
      'debian:9 CVE-2005-3111',
      'debian:9 CVE-2008-7220',
      'debian:9 CVE-2013-1444',
      'debian:9 CVE-2022-0456',
      'debian:unstable CVE-2005-3111',
      'debian:unstable CVE-2008-7220',
      'debian:unstable CVE-2013-1444',
      'debian:unstable CVE-2022-0456',
      'debian:unstable CVE-2025-53603',
    ]);
    expect(data.vulnerabilities).toHaveLength(21);
  });

  it('stores each record field by field', async () => {
    const { vulnerabilities: vulns } = await parseDebianTracker(createReadStream(EXCERPT));

    // prototypejs, resolved everywhere, urgency "high**".
    expect(find(vulns, 'debian:10', 'CVE-2008-7220')).toEqual({
      namespace: 'debian:10',
      name: 'CVE-2008-7220',
      description:
        'Unspecified vulnerability in Prototype JavaScript framework (prototypejs) before 1.6.0.2 allows attackers to make "cross-site ajax requests" via unknown vectors.',
      link: `${LINK}CVE-2008-7220`,
      severity: 'High',
      metadata: null,
      fixedIn: [{ feature: 'prototypejs', version: '1.6.0.2-1' }],
    });

    // txt2man in jessie, urgency "low**".
    expect(find(vulns, 'debian:8', 'CVE-2013-1444')).toEqual({
      namespace: 'debian:8',
      name: 'CVE-2013-1444',
      description:
        'A certain Debian patch for txt2man 1.5.5, as used in txt2man 1.5.5-2, 1.5.5-4, and others, allows local users to overwrite arbitrary files via a symlink attack on /tmp/2222.',
      link: `${LINK}CVE-2013-1444`,
      severity: 'Low',
      metadata: null,
      fixedIn: [{ feature: 'txt2man', version: '1.5.5-4.1' }],
    });

    // backupninja (no debianbug field), urgency "medium".
    const backupninja = find(vulns, 'debian:9', 'CVE-2005-3111');
    expect(backupninja?.severity).toBe('Medium');
    expect(backupninja?.description.startsWith('The handler code for backupninja 0.8 and earlier')).toBe(true);
    expect(backupninja?.link).toBe(`${LINK}CVE-2005-3111`);
    expect(backupninja?.fixedIn).toEqual([{ feature: 'backupninja', version: '0.8-2' }]);

    // chromium: no description; open + end-of-life in buster and stretch, resolved elsewhere.
    expect(find(vulns, 'debian:10', 'CVE-2022-0456')).toEqual({
      namespace: 'debian:10',
      name: 'CVE-2022-0456',
      description: '',
      link: `${LINK}CVE-2022-0456`,
      severity: 'Negligible',
      metadata: null,
      fixedIn: [{ feature: 'chromium', version: null }],
    });
    expect(find(vulns, 'debian:9', 'CVE-2022-0456')?.fixedIn).toEqual([{ feature: 'chromium', version: null }]);
    expect(find(vulns, 'debian:9', 'CVE-2022-0456')?.severity).toBe('Negligible');
    expect(find(vulns, 'debian:11', 'CVE-2022-0456')).toEqual({
      namespace: 'debian:11',
      name: 'CVE-2022-0456',
      description: '',
      link: `${LINK}CVE-2022-0456`,
      severity: 'Unknown',
      metadata: null,
      fixedIn: [{ feature: 'chromium', version: '98.0.4758.80-1~deb11u1' }],
    });
    expect(find(vulns, 'debian:12', 'CVE-2022-0456')?.fixedIn).toEqual([{ feature: 'chromium', version: '98.0.4758.80-1' }]);
    expect(find(vulns, 'debian:unstable', 'CVE-2022-0456')?.fixedIn).toEqual([{ feature: 'chromium', version: '98.0.4758.80-1' }]);
    expect(find(vulns, 'debian:13', 'CVE-2022-0456')).toBeUndefined(); // no trixie entry

    // sope: a different fixed version per release.
    const sope = (ns: string) => find(vulns, ns, 'CVE-2025-53603');
    expect(sope('debian:11')?.fixedIn).toEqual([{ feature: 'sope', version: '5.0.1-2+deb11u1' }]);
    expect(sope('debian:12')?.fixedIn).toEqual([{ feature: 'sope', version: '5.8.0-1+deb12u1' }]);
    expect(sope('debian:13')).toEqual({
      namespace: 'debian:13',
      name: 'CVE-2025-53603',
      description:
        'In Alinto SOPE SOGo 2.0.2 through 5.12.2, sope-core/NGExtensions/NGHashMap.m allows a NULL pointer dereference and SOGo crash via a request in which a parameter in the query string is a duplicate of a parameter in the POST body.',
      link: `${LINK}CVE-2025-53603`,
      severity: 'Unknown',
      metadata: null,
      fixedIn: [{ feature: 'sope', version: '5.12.1-2' }],
    });
    expect(sope('debian:unstable')?.fixedIn).toEqual([{ feature: 'sope', version: '5.12.1-2' }]);
    expect(sope('debian:10')).toBeUndefined(); // no buster entry
  });

  it('leaves out not-affected ("0") entries and CVEs with no releases', async () => {
    const { vulnerabilities } = await parseDebianTracker(createReadStream(EXCERPT));
    // CVE-2007-2383 is fixed_version "0" in every release; CVE-2022-0358 has `"releases": []`.
    expect(vulnerabilities.filter((v) => v.name === 'CVE-2007-2383')).toEqual([]);
    expect(vulnerabilities.filter((v) => v.name === 'CVE-2022-0358')).toEqual([]);
    expect(vulnerabilities.flatMap((v) => v.fixedIn.map((f) => f.feature)).includes('chromium-browser')).toBe(false);
  });

  it('gives the same result whatever the chunk boundaries', async () => {
    const text = readFileSync(EXCERPT, 'utf8');
    const whole = await parseDebianTracker(Readable.from([text]));
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += 7) chunks.push(text.slice(i, i + 7));
    const split = await parseDebianTracker(Readable.from(chunks));
    expect(split).toEqual(whole);
    expect(split.vulnerabilities).toHaveLength(21);
  });
});

describe('Debian tracker rules', () => {
  it('open → no fix (null); resolved → the fixed version; <no-dsa> postponed → fix deferred, ignored → will not fix', async () => {
    const data = await parseDoc({
      libfoo: {
        'CVE-2099-0001': cve({
          bookworm: { status: 'resolved', repositories: {}, fixed_version: '1.2-3+deb12u1', urgency: 'medium' },
          bullseye: { status: 'open', repositories: {}, urgency: 'low', nodsa: 'Minor issue', nodsa_reason: 'postponed' },
          buster: { status: 'open', repositories: {}, urgency: 'low', nodsa: 'Minor issue', nodsa_reason: 'ignored' },
          trixie: { status: 'open', repositories: {}, urgency: 'low', nodsa: 'Minor issue' },
          forky: { status: 'open', repositories: {}, urgency: 'low' },
        }),
      },
    });
    expect(data.vulnerabilities.map((v) => [v.namespace, v.fixedIn])).toEqual([
      ['debian:10', [{ feature: 'libfoo', version: null, state: 'will_not_fix' }]],
      ['debian:11', [{ feature: 'libfoo', version: null, state: 'fix_deferred' }]],
      ['debian:12', [{ feature: 'libfoo', version: '1.2-3+deb12u1' }]],
      ['debian:13', [{ feature: 'libfoo', version: null }]],
      ['debian:14', [{ feature: 'libfoo', version: null }]],
    ]);
  });

  it('fixed_version "0" leaves the package out, and the vulnerability when none remains', async () => {
    const data = await parseDoc({
      libfoo: {
        'CVE-2099-0002': cve({ bookworm: { status: 'resolved', fixed_version: '0', urgency: 'unimportant' } }),
        'CVE-2099-0003': cve({ bookworm: { status: 'resolved', fixed_version: '0', urgency: 'high' } }),
      },
      libbar: {
        'CVE-2099-0003': cve({ bookworm: { status: 'open', urgency: 'low' } }),
      },
    });
    expect(data.namespaces).toEqual(['debian:12']);
    expect(data.vulnerabilities).toEqual([
      {
        namespace: 'debian:12',
        name: 'CVE-2099-0003',
        description: '',
        link: `${LINK}CVE-2099-0003`,
        // libfoo's "high" was on its not-affected entry, which is not stored.
        severity: 'Low',
        metadata: null,
        fixedIn: [{ feature: 'libbar', version: null }],
      },
    ]);
  });

  it('skips undetermined entries (and their urgency)', async () => {
    const data = await parseDoc({
      libfoo: { 'CVE-2099-0004': cve({ sid: { status: 'undetermined', urgency: 'high' } }) },
      libbar: { 'CVE-2099-0004': cve({ sid: { status: 'resolved', fixed_version: '2.0-1', urgency: 'low*' } }) },
      libbaz: { 'CVE-2099-0005': cve({ sid: { status: 'undetermined', urgency: 'not yet assigned' } }) },
    });
    expect(data.namespaces).toEqual(['debian:unstable']);
    expect(data.vulnerabilities.map((v) => [v.name, v.severity, v.fixedIn])).toEqual([
      ['CVE-2099-0004', 'Low', [{ feature: 'libbar', version: '2.0-1' }]],
    ]);
  });

  it('skips resolved entries with a missing or invalid dpkg version, and unknown statuses', async () => {
    const data = await parseDoc({
      a: { 'CVE-2099-0006': cve({ trixie: { status: 'resolved', fixed_version: '1.0 beta', urgency: 'high' } }) },
      b: { 'CVE-2099-0006': cve({ trixie: { status: 'resolved', urgency: 'high' } }) },
      c: { 'CVE-2099-0006': cve({ trixie: { status: 'resolved', fixed_version: 'a:1.0', urgency: 'high' } }) },
      d: { 'CVE-2099-0006': cve({ trixie: { status: 'whatever', fixed_version: '1.0-1', urgency: 'high' } }) },
      e: { 'CVE-2099-0006': cve({ trixie: { status: 'resolved', fixed_version: '1:1.0-1', urgency: 'medium' } }) },
    });
    expect(data.vulnerabilities.map((v) => [v.namespace, v.name, v.severity, v.fixedIn])).toEqual([
      ['debian:13', 'CVE-2099-0006', 'Medium', [{ feature: 'e', version: '1:1.0-1' }]],
    ]);
  });

  it('takes the highest urgency per namespace, not across namespaces', async () => {
    const data = await parseDoc({
      zlib: {
        'CVE-2099-0007': cve({
          bookworm: { status: 'open', urgency: 'low**' },
          bullseye: { status: 'open', urgency: 'medium*' },
          buster: { status: 'open', urgency: 'end-of-life' },
          sid: { status: 'open', urgency: 'not yet assigned' },
        }),
      },
      apache2: {
        'CVE-2099-0007': cve({
          bookworm: { status: 'resolved', fixed_version: '2.4.62-1~deb12u1', urgency: 'high**' },
          bullseye: { status: 'open', urgency: 'unimportant' },
        }),
      },
    });
    expect(data.vulnerabilities.map((v) => [v.namespace, v.severity])).toEqual([
      ['debian:10', 'Negligible'],
      ['debian:11', 'Medium'],
      ['debian:12', 'High'],
      ['debian:unstable', 'Unknown'],
    ]);
    // Every source package of the CVE in that release, sorted by name.
    expect(find(data.vulnerabilities, 'debian:12', 'CVE-2099-0007')?.fixedIn).toEqual([
      { feature: 'apache2', version: '2.4.62-1~deb12u1' },
      { feature: 'zlib', version: null },
    ]);
    expect(find(data.vulnerabilities, 'debian:10', 'CVE-2099-0007')?.fixedIn).toEqual([{ feature: 'zlib', version: null }]);
  });

  it('keeps CVE ids only (no TEMP- or DSA ids), but counts their releases as covered', async () => {
    const data = await parseDoc({
      libfoo: {
        'TEMP-0000000-ABCDEF': cve({ bookworm: { status: 'open', urgency: 'high' } }, 'temporary'),
        'DSA-9999-1': cve({ bookworm: { status: 'resolved', fixed_version: '1.0-1', urgency: 'high' } }),
        'cve-2099-0008': cve({ bookworm: { status: 'open', urgency: 'high' } }),
        'CVE-2099-0009': cve({ forky: { status: 'open', urgency: 'low' } }, 'real one'),
      },
    });
    expect(data.namespaces).toEqual(['debian:12', 'debian:14']);
    expect(data.vulnerabilities).toEqual([
      {
        namespace: 'debian:14',
        name: 'CVE-2099-0009',
        description: 'real one',
        link: `${LINK}CVE-2099-0009`,
        severity: 'Low',
        metadata: null,
        fixedIn: [{ feature: 'libfoo', version: null }],
      },
    ]);
  });

  it('reports and skips unknown releases', async () => {
    const data = await parseDoc({
      libfoo: {
        'CVE-2099-0010': cve({
          potato: { status: 'open', urgency: 'high' },
          experimental: { status: 'resolved', fixed_version: '3.0-1', urgency: 'high' },
          duke: { status: 'open', urgency: 'low' },
        }),
      },
      libbar: { 'TEMP-0000001-000000': cve({ 'forky-backports': { status: 'open', urgency: 'low' } }) },
    });
    expect(data.unknownReleases).toEqual(['experimental', 'forky-backports', 'potato']);
    expect(data.namespaces).toEqual(['debian:15']);
    expect(data.vulnerabilities.map((v) => [v.namespace, v.name, v.severity])).toEqual([['debian:15', 'CVE-2099-0010', 'Low']]);
  });

  it('takes the description from the first package that gives one', async () => {
    const data = await parseDoc({
      a: { 'CVE-2099-0011': cve({ bookworm: { status: 'open', urgency: 'low' } }) },
      b: { 'CVE-2099-0011': cve({ bookworm: { status: 'open', urgency: 'low' } }, 'from b') },
      c: { 'CVE-2099-0011': cve({ bullseye: { status: 'open', urgency: 'low' } }, 'from c') },
    });
    expect(data.vulnerabilities.map((v) => [v.namespace, v.description])).toEqual([
      ['debian:11', 'from b'],
      ['debian:12', 'from b'],
    ]);
  });

  it('sorts its output whatever the document order', async () => {
    const data = await parseDoc({
      zzz: { 'CVE-2099-0002': cve({ sid: { status: 'open', urgency: 'low' }, bookworm: { status: 'open', urgency: 'low' } }) },
      aaa: { 'CVE-2099-0001': cve({ bookworm: { status: 'open', urgency: 'low' } }) },
      mmm: { 'CVE-2099-0002': cve({ bookworm: { status: 'open', urgency: 'low' } }) },
    });
    expect(data.namespaces).toEqual(['debian:12', 'debian:unstable']);
    expect(data.vulnerabilities.map((v) => `${v.namespace} ${v.name} ${v.fixedIn.map((f) => f.feature).join(',')}`)).toEqual([
      'debian:12 CVE-2099-0001 aaa',
      'debian:12 CVE-2099-0002 mmm,zzz',
      'debian:unstable CVE-2099-0002 zzz',
    ]);
  });

  it('tolerates odd shapes: non-object packages, entries and releases', async () => {
    const data = await parseDoc({
      weird: 42,
      libfoo: { 'CVE-2099-0012': 'not an object', 'CVE-2099-0013': { releases: { bookworm: null } } },
      libbar: { 'CVE-2099-0014': { releases: { bookworm: { status: 'open' } } } },
    });
    expect(data.namespaces).toEqual(['debian:12']);
    expect(data.vulnerabilities.map((v) => [v.name, v.severity, v.fixedIn])).toEqual([
      ['CVE-2099-0014', 'Unknown', [{ feature: 'libbar', version: null }]],
    ]);
  });

  it('rejects a malformed document and a failing stream', async () => {
    await expect(parseDebianTracker(Readable.from(['{"libfoo": {"CVE-2099-1": {']))).rejects.toThrow();
    await expect(parseDebianTracker(Readable.from(['{"libfoo": nope}']))).rejects.toThrow();
    const failing = new Readable({
      read() {
        this.destroy(new Error('connection reset'));
      },
    });
    await expect(parseDebianTracker(failing)).rejects.toThrow('connection reset');
  });
});

describe('Debian tracker streaming', () => {
  /** global.gc, exposed at run time when node was not started with --expose-gc. */
  function gc(): () => void {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  }

  it('parses a ~30 MB document package by package with bounded memory', async () => {
    const collect = gc();
    const PACKAGES = 4200;
    const KEPT_EVERY = 60; // 70 packages produce records; the rest are not affected/undetermined/TEMP
    let bytes = 0;
    let peak = 0;
    collect();
    const base = process.memoryUsage().heapUsed;

    function* document(): Generator<string> {
      yield '{';
      for (let p = 0; p < PACKAGES; p++) {
        if (p % 500 === 0) {
          collect();
          peak = Math.max(peak, process.memoryUsage().heapUsed - base);
        }
        const kept = p % KEPT_EVERY === 0;
        const entries: string[] = [];
        for (let c = 0; c < 10; c++) {
          const id = `${kept || c % 2 === 0 ? 'CVE' : 'TEMP'}-2099-${String(p * 10 + c).padStart(6, '0')}`;
          const releases = kept
            ? `"bookworm":{"status":"resolved","repositories":{"bookworm":"1.${c}-1"},"fixed_version":"1.${c}-1","urgency":"low**"},` +
              `"bullseye":{"status":"open","repositories":{"bullseye":"1.0-1"},"urgency":"medium"}`
            : `"bookworm":{"status":"resolved","repositories":{"bookworm":"1.0-1"},"fixed_version":"0","urgency":"unimportant"},` +
              `"sid":{"status":"undetermined","repositories":{"sid":"1.0-1"},"urgency":"not yet assigned"}`;
          entries.push(
            `"${id}":{"scope":"remote","debianbug":${p},"description":"Synthetic vulnerability ${p}-${c} in package pkg${p}: ` +
              `${'padding to make the entry as long as a real one. '.repeat(6)}","releases":{${releases},` +
              `"trixie":{"status":"resolved","repositories":{"trixie":"1.0-1"},"fixed_version":"0","urgency":"unimportant"}}}`,
          );
        }
        const chunk = `${p === 0 ? '' : ','}"pkg${String(p).padStart(5, '0')}":{${entries.join(',')}}`;
        bytes += chunk.length;
        yield chunk;
      }
      yield '}';
    }

    const started = Date.now();
    const data = await parseDebianTracker(Readable.from(document()));
    const elapsed = Date.now() - started;

    expect(bytes).toBeGreaterThan(28_000_000);
    expect(bytes).toBeLessThan(34_000_000);
    expect(data.namespaces).toEqual(['debian:11', 'debian:12', 'debian:13', 'debian:unstable']);
    expect(data.vulnerabilities).toHaveLength((PACKAGES / KEPT_EVERY) * 10 * 2);
    expect(find(data.vulnerabilities, 'debian:12', 'CVE-2099-000003')).toMatchObject({
      severity: 'Low',
      fixedIn: [{ feature: 'pkg00000', version: '1.3-1' }],
    });
    expect(find(data.vulnerabilities, 'debian:11', 'CVE-2099-041999')).toBeUndefined(); // pkg04199: not kept
    expect(find(data.vulnerabilities, 'debian:11', 'CVE-2099-041409')).toMatchObject({
      severity: 'Medium',
      fixedIn: [{ feature: 'pkg04140', version: null }],
    });
    // The live heap while parsing never came near the document's size: a parser that held the
    // document (or even an eighth of it) would exceed this.
    expect(peak).toBeLessThan(bytes / 8);
    expect(elapsed).toBeLessThan(20_000);
  }, 60_000);
});
