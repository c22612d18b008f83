import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { JsonArraySplitter, parseNvdFeed, severityFromCvss2, severityFromCvss3 } from '../../src/ecosystems/nvd/feed.js';
import type { Enrichment } from '../../src/model/source-data.js';

const feeds = fileURLToPath(new URL('../fixtures/feeds/nvd/', import.meta.url));

function fixture(name: string, highWaterMark?: number): Readable {
  return createReadStream(join(feeds, name), highWaterMark === undefined ? {} : { highWaterMark });
}

function get(map: Map<string, Enrichment>, id: string): Enrichment {
  const e = map.get(id);
  if (e === undefined) throw new Error(`no ${id}`);
  return e;
}

interface Metric {
  type?: string;
  score: number;
  vector: string;
  source?: string;
}

function metric(m: Metric, version: string): unknown {
  return {
    source: m.source ?? 'nvd@nist.gov',
    type: m.type ?? 'Primary',
    cvssData: { version, vectorString: m.vector, baseScore: m.score },
  };
}

function cve(
  id: string,
  { status = 'Analyzed', v31 = [] as Metric[], v30 = [] as Metric[], v2 = [] as Metric[], v40 = [] as Metric[], description = 'd' } = {},
): unknown {
  const metrics: Record<string, unknown> = {};
  if (v40.length) metrics['cvssMetricV40'] = v40.map((m) => metric(m, '4.0'));
  if (v31.length) metrics['cvssMetricV31'] = v31.map((m) => metric(m, '3.1'));
  if (v30.length) metrics['cvssMetricV30'] = v30.map((m) => metric(m, '3.0'));
  if (v2.length) metrics['cvssMetricV2'] = v2.map((m) => metric(m, '2.0'));
  return {
    cve: { id, vulnStatus: status, descriptions: [{ lang: 'en', value: description }], metrics },
  };
}

function feed(entries: unknown[]): string {
  return JSON.stringify({
    resultsPerPage: entries.length,
    startIndex: 0,
    totalResults: entries.length,
    format: 'NVD_CVE',
    version: '2.0',
    timestamp: '2099-01-01T00:00:00.000',
    vulnerabilities: entries,
  });
}

function parseText(text: string): Promise<Map<string, Enrichment>> {
  return parseNvdFeed(Readable.from([Buffer.from(text, 'utf8')]));
}

/** One Buffer per byte: multi-byte UTF-8 characters are split across chunks too. */
function bytewise(text: string): Readable {
  const bytes = Buffer.from(text, 'utf8');
  return Readable.from(
    (function* () {
      for (let i = 0; i < bytes.length; i++) yield bytes.subarray(i, i + 1);
    })(),
  );
}

const V3_CRIT = 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H';
const V2_VEC = 'AV:N/AC:L/Au:N/C:P/I:P/A:P';

describe('parseNvdFeed: NVD JSON 2.0 feed excerpt (quay/claircore testdata)', () => {
  it('reads every non-rejected CVE with exact scores and vectors', async () => {
    const result = await parseNvdFeed(fixture('nvd-cve-2.0-feed-excerpt.json'));
    expect([...result.keys()]).toEqual(['CVE-2016-2781', 'CVE-2016-3674']);
    // CVE-2016-2781 has a Secondary v3.1 (4.6, from a CNA) and NVD's Primary v3.0 (6.5): NVD's own wins.
    expect(get(result, 'CVE-2016-2781')).toEqual({
      nvd: {
        CVSSv3: { Score: 6.5, Vectors: 'CVSS:3.0/AV:L/AC:L/PR:L/UI:N/S:C/C:N/I:H/A:N' },
        CVSSv2: { Score: 2.1, Vectors: 'AV:L/AC:L/Au:N/C:N/I:P/A:N' },
      },
      severity: 'Medium',
    });
    expect(get(result, 'CVE-2016-3674')).toEqual({
      nvd: {
        CVSSv3: { Score: 7.5, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N' },
        CVSSv2: { Score: 5.0, Vectors: 'AV:N/AC:L/Au:N/C:P/I:N/A:N' },
      },
      severity: 'High',
    });
    // vulnStatus "Rejected".
    expect(result.has('CVE-2016-3197')).toBe(false);
  });

  it('parses identically from 1-byte and 13-byte reads', async () => {
    const whole = await parseNvdFeed(fixture('nvd-cve-2.0-feed-excerpt.json'));
    expect(await parseNvdFeed(fixture('nvd-cve-2.0-feed-excerpt.json', 1))).toEqual(whole);
    expect(await parseNvdFeed(fixture('nvd-cve-2.0-feed-excerpt.json', 13))).toEqual(whole);
  });
});

describe('parseNvdFeed: NVD CVE API 2.0 pages (anchore/vunnel testdata)', () => {
  it('reads the single-entry page', async () => {
    const result = await parseNvdFeed(fixture('nvd-api-2.0-single-entry.json'));
    expect([...result]).toEqual([
      [
        'CVE-2022-1576',
        {
          nvd: {
            CVSSv3: { Score: 6.5, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:N/I:H/A:N' },
            CVSSv2: { Score: 4.3, Vectors: 'AV:N/AC:M/Au:N/C:N/I:P/A:N' },
          },
          severity: 'Medium',
        },
      ],
    ]);
  });

  it('reads the full page: 38 CVEs, 35 with scores', async () => {
    const result = await parseNvdFeed(fixture('nvd-api-2.0-page.json'));
    expect(result.size).toBe(35);
    // Awaiting Analysis without any metrics.
    for (const id of ['CVE-2023-43250', 'CVE-2023-45383', 'CVE-2023-46009']) expect(result.has(id)).toBe(false);

    // Primary (nvd@nist.gov, 4.3) over the Secondary IBM score (5.3).
    expect(get(result, 'CVE-2021-20581')).toEqual({
      nvd: { CVSSv3: { Score: 4.3, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:U/C:L/I:N/A:N' } },
      severity: 'Medium',
    });
    expect(get(result, 'CVE-2022-22375')).toEqual({
      nvd: { CVSSv3: { Score: 8.8, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:U/C:H/I:H/A:H' } },
      severity: 'High',
    });
    expect(get(result, 'CVE-2022-43893')).toEqual({
      nvd: { CVSSv3: { Score: 4.4, Vectors: 'CVSS:3.1/AV:L/AC:L/PR:H/UI:N/S:U/C:N/I:N/A:H' } },
      severity: 'Medium',
    });
    // A Primary entry whose source is not NVD (Oracle as CNA).
    expect(get(result, 'CVE-2023-22068')).toEqual({
      nvd: { CVSSv3: { Score: 4.9, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:H/UI:N/S:U/C:N/I:N/A:H' } },
      severity: 'Medium',
    });
    // Only a Secondary score: it is used.
    expect(get(result, 'CVE-2023-5642')).toEqual({
      nvd: { CVSSv3: { Score: 9.8, Vectors: V3_CRIT } },
      severity: 'Critical',
    });
    expect(get(result, 'CVE-2023-30781')).toEqual({
      nvd: { CVSSv3: { Score: 7.1, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:L' } },
      severity: 'High',
    });
    // No CVSSv2 anywhere on this 2023 page.
    expect([...result.values()].filter((e) => 'CVSSv2' in e.nvd)).toEqual([]);
    const bySeverity: Record<string, number> = {};
    for (const e of result.values()) bySeverity[e.severity] = (bySeverity[e.severity] ?? 0) + 1;
    expect(bySeverity).toEqual({ High: 16, Medium: 18, Critical: 1 });
  });
});

describe('parseNvdFeed: metric choice', () => {
  it('prefers Primary over Secondary within a list, wherever it is listed', async () => {
    const result = await parseText(
      feed([
        cve('CVE-2099-0001', {
          v31: [
            { type: 'Secondary', score: 9.8, vector: V3_CRIT, source: 'cna@example.com' },
            { type: 'Primary', score: 5.3, vector: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:L/I:N/A:N' },
          ],
          v2: [
            { type: 'Secondary', score: 10.0, vector: 'AV:N/AC:L/Au:N/C:C/I:C/A:C', source: 'cna@example.com' },
            { type: 'Primary', score: 5.0, vector: 'AV:N/AC:L/Au:N/C:P/I:N/A:N' },
          ],
        }),
      ]),
    );
    expect(get(result, 'CVE-2099-0001')).toEqual({
      nvd: {
        CVSSv3: { Score: 5.3, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:L/I:N/A:N' },
        CVSSv2: { Score: 5.0, Vectors: 'AV:N/AC:L/Au:N/C:P/I:N/A:N' },
      },
      severity: 'Medium',
    });
  });

  it('takes v3.1 over v3.0 when both are Primary (or both Secondary), and the first Secondary otherwise', async () => {
    const result = await parseText(
      feed([
        cve('CVE-2099-0010', {
          v31: [{ score: 7.5, vector: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H' }],
          v30: [{ score: 5.0, vector: 'CVSS:3.0/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:L' }],
        }),
        cve('CVE-2099-0011', {
          v31: [
            { type: 'Secondary', score: 3.1, vector: 'CVSS:3.1/AV:N/AC:H/PR:N/UI:R/S:U/C:L/I:N/A:N' },
            { type: 'Secondary', score: 9.1, vector: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:N' },
          ],
          v30: [{ type: 'Secondary', score: 6.1, vector: 'CVSS:3.0/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N' }],
        }),
        cve('CVE-2099-0012', {
          v30: [{ type: 'Secondary', score: 6.1, vector: 'CVSS:3.0/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N' }],
        }),
      ]),
    );
    expect(get(result, 'CVE-2099-0010').nvd).toEqual({
      CVSSv3: { Score: 7.5, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H' },
    });
    expect(get(result, 'CVE-2099-0011')).toEqual({
      nvd: { CVSSv3: { Score: 3.1, Vectors: 'CVSS:3.1/AV:N/AC:H/PR:N/UI:R/S:U/C:L/I:N/A:N' } },
      severity: 'Low',
    });
    expect(get(result, 'CVE-2099-0012')).toEqual({
      nvd: { CVSSv3: { Score: 6.1, Vectors: 'CVSS:3.0/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N' } },
      severity: 'Medium',
    });
  });

  it("reads v2-only entries with Clair's v2 severity, and ignores CVSS v4.0", async () => {
    const result = await parseText(
      feed([
        cve('CVE-2099-0020', { v2: [{ score: 6.9, vector: 'AV:L/AC:M/Au:N/C:C/I:C/A:C' }] }),
        cve('CVE-2099-0021', { v2: [{ score: 3.9, vector: 'AV:N/AC:H/Au:N/C:N/I:P/A:P' }] }),
        cve('CVE-2099-0022', {
          v40: [{ score: 9.3, vector: 'CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N' }],
          v2: [{ score: 2.1, vector: 'AV:L/AC:L/Au:N/C:N/I:P/A:N' }],
        }),
        cve('CVE-2099-0023', {
          v40: [{ score: 9.3, vector: 'CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N' }],
        }),
      ]),
    );
    expect([...result]).toEqual([
      ['CVE-2099-0020', { nvd: { CVSSv2: { Score: 6.9, Vectors: 'AV:L/AC:M/Au:N/C:C/I:C/A:C' } }, severity: 'High' }],
      ['CVE-2099-0021', { nvd: { CVSSv2: { Score: 3.9, Vectors: 'AV:N/AC:H/Au:N/C:N/I:P/A:P' } }, severity: 'Medium' }],
      ['CVE-2099-0022', { nvd: { CVSSv2: { Score: 2.1, Vectors: 'AV:L/AC:L/Au:N/C:N/I:P/A:N' } }, severity: 'Low' }],
    ]);
  });

  it('skips rejected CVEs even with scores, and entries with unusable metrics', async () => {
    const result = await parseText(
      feed([
        cve('CVE-2099-0030', { status: 'Rejected', v31: [{ score: 9.8, vector: V3_CRIT }], v2: [{ score: 10, vector: V2_VEC }] }),
        cve('CVE-2099-0031', { status: 'Awaiting Analysis' }),
        // A score out of range and a missing vector are not scores.
        cve('CVE-2099-0032', { v31: [{ score: 11, vector: V3_CRIT }], v2: [{ score: 5, vector: '' }] }),
        { cve: { vulnStatus: 'Analyzed', metrics: { cvssMetricV2: [metric({ score: 5, vector: V2_VEC }, '2.0')] } } },
        { notACve: true },
        cve('CVE-2099-0033', { status: 'Modified', v2: [{ score: 10, vector: 'AV:N/AC:L/Au:N/C:C/I:C/A:C' }] }),
      ]),
    );
    expect([...result]).toEqual([
      ['CVE-2099-0033', { nvd: { CVSSv2: { Score: 10, Vectors: 'AV:N/AC:L/Au:N/C:C/I:C/A:C' } }, severity: 'Critical' }],
    ]);
  });

  it('keeps the later entry when a CVE id repeats', async () => {
    const result = await parseText(
      feed([
        cve('CVE-2099-0040', { v31: [{ score: 9.8, vector: V3_CRIT }] }),
        cve('CVE-2099-0040', { v31: [{ score: 2.0, vector: 'CVSS:3.1/AV:P/AC:H/PR:H/UI:R/S:U/C:L/I:N/A:N' }] }),
      ]),
    );
    expect(get(result, 'CVE-2099-0040')).toEqual({
      nvd: { CVSSv3: { Score: 2.0, Vectors: 'CVSS:3.1/AV:P/AC:H/PR:H/UI:R/S:U/C:L/I:N/A:N' } },
      severity: 'Low',
    });
  });
});

describe('severity thresholds', () => {
  // CVSS v3 qualitative ratings; 0.0 ("None") → Negligible.
  const v3: [number, string][] = [
    [0.0, 'Negligible'],
    [0.1, 'Low'],
    [3.9, 'Low'],
    [4.0, 'Medium'],
    [6.9, 'Medium'],
    [7.0, 'High'],
    [8.9, 'High'],
    [9.0, 'Critical'],
    [10.0, 'Critical'],
  ];
  // Clair's v2 mapping, strict <.
  const v2: [number, string][] = [
    [0.0, 'Negligible'],
    [0.9, 'Negligible'],
    [1.0, 'Low'],
    [3.8, 'Low'],
    [3.9, 'Medium'],
    [4.0, 'Medium'],
    [6.8, 'Medium'],
    [6.9, 'High'],
    [7.0, 'High'],
    [8.8, 'High'],
    [8.9, 'Critical'],
    [9.0, 'Critical'],
    [10.0, 'Critical'],
  ];

  it.each(v3)('CVSS v3 %s → %s', (score, expected) => {
    expect(severityFromCvss3(score)).toBe(expected);
  });

  it.each(v2)('CVSS v2 %s → %s', (score, expected) => {
    expect(severityFromCvss2(score)).toBe(expected);
  });

  it('applies the same tables through the parser (v3 wins over v2)', async () => {
    const entries = [
      ...v3.map(([score], i) =>
        cve(`CVE-2098-${1000 + i}`, {
          v31: [{ score, vector: V3_CRIT }],
          v2: [{ score: 10 - score, vector: V2_VEC }],
        }),
      ),
      ...v2.map(([score], i) => cve(`CVE-2098-${2000 + i}`, { v2: [{ score, vector: V2_VEC }] })),
    ];
    const result = await parseText(feed(entries));
    expect(v3.map((_, i) => get(result, `CVE-2098-${1000 + i}`).severity)).toEqual(v3.map(([, s]) => s));
    expect(v2.map((_, i) => get(result, `CVE-2098-${2000 + i}`).severity)).toEqual(v2.map(([, s]) => s));
  });
});

describe('parseNvdFeed: streaming', () => {
  it('parses a ~30 MB feed generated in chunks', async () => {
    const COUNT = 24_000;
    const filler = 'x'.repeat(1000);
    let bytes = 0;
    function* generate(): Generator<Buffer> {
      const head = Buffer.from(
        '{"resultsPerPage":0,"startIndex":0,"totalResults":0,"format":"NVD_CVE","version":"2.0","vulnerabilities":[',
      );
      bytes += head.length;
      yield head;
      for (let i = 0; i < COUNT; i++) {
        const status = i % 10 === 3 ? 'Rejected' : 'Analyzed';
        const metrics =
          i % 10 === 5
            ? {}
            : i % 2 === 0
              ? { cvssMetricV31: [metric({ score: (i % 101) / 10, vector: `CVSS:3.1/#${i}` }, '3.1')] }
              : { cvssMetricV2: [metric({ score: (i % 101) / 10, vector: `AV:N/#${i}` }, '2.0')] };
        const element = JSON.stringify({
          cve: { id: `CVE-2097-${i}`, vulnStatus: status, descriptions: [{ lang: 'en', value: `${i} "} [ ${filler}` }], metrics },
        });
        const chunk = Buffer.from((i === 0 ? '' : ',') + element);
        bytes += chunk.length;
        yield chunk;
      }
      yield Buffer.from(']}');
    }
    const started = Date.now();
    const result = await parseNvdFeed(Readable.from(generate()));
    const elapsed = Date.now() - started;
    expect(bytes).toBeGreaterThan(25_000_000);
    // Rejected: i % 10 === 3; no metrics: i % 10 === 5 → 8 of every 10 remain.
    expect(result.size).toBe((COUNT / 10) * 8);
    expect(get(result, 'CVE-2097-0')).toEqual({ nvd: { CVSSv3: { Score: 0, Vectors: 'CVSS:3.1/#0' } }, severity: 'Negligible' });
    expect(get(result, 'CVE-2097-23999')).toEqual({
      nvd: { CVSSv2: { Score: 6.2, Vectors: 'AV:N/#23999' } }, // 23999 % 101 = 62
      severity: 'Medium',
    });
    expect(result.has('CVE-2097-23993')).toBe(false);
    expect(result.has('CVE-2097-23995')).toBe(false);
    expect(elapsed).toBeLessThan(15_000);
  });

  it('does not hold the document: the splitter keeps only the element being read', () => {
    const seen: string[] = [];
    const splitter = new JsonArraySplitter('vulnerabilities', (text) => seen.push(text));
    splitter.write('{"vulnerabilities":[{"a":1},{"b":');
    expect(seen).toEqual(['{"a":1}']);
    splitter.write('"}"}');
    expect(seen).toEqual(['{"a":1}', '{"b":"}"}']);
    splitter.write(']}');
    splitter.end();
  });
});

describe('parseNvdFeed: scanner string and escape handling', () => {
  // Descriptions and keys full of characters that matter to the scanner.
  const tricky = [
    '{',
    '"format": "vulnerabilities", "note": "a \\"quoted\\" ] } [ {",',
    '"nested": {"vulnerabilities": [{"cve": {"id": "CVE-FAKE-1", "metrics": {"cvssMetricV2": [{"type": "Primary", "cvssData": {"baseScore": 1.0, "vectorString": "x"}}]}}}]},',
    '"vulnerabilities" : [',
    '  {"cve": {"id": "CVE-2096-0001", "vulnStatus": "Analyzed",',
    '    "descriptions": [{"lang": "en", "value": "ends with \\"}  then \\\\\\" and [ and ] and {\\n and \\u00e9 é \\ud83d\\ude00 😀"}],',
    '    "extra": {"vulnerabilities": [{"cve": {"id": "CVE-FAKE-2"}}], "k\\"}": "[["},',
    '    "metrics": {"cvssMetricV31": [{"type": "Primary", "cvssData": {"baseScore": 9.0, "vectorString": "CVSS:3.1/\\"}"}}]}}},',
    '  {"cve": {"id": "CVE-2096-0002", "vulnStatus": "Analyzed", "descriptions": [{"lang": "en", "value": "\\\\"}],',
    '    "metrics": {"cvssMetricV2": [{"type": "Primary", "cvssData": {"baseScore": 8.9, "vectorString": "AV:N/AC:L/Au:N/C:C/I:C/A:N"}}]}}}',
    '],',
    '"after": ["vulnerabilities", {"vulnerabilities": []}], "a very long root key that is longer than sixty-four characters, to overflow": 1',
    '}',
  ].join('\n');

  const expected = new Map<string, Enrichment>([
    ['CVE-2096-0001', { nvd: { CVSSv3: { Score: 9.0, Vectors: 'CVSS:3.1/"}' } }, severity: 'Critical' }],
    ['CVE-2096-0002', { nvd: { CVSSv2: { Score: 8.9, Vectors: 'AV:N/AC:L/Au:N/C:C/I:C/A:N' } }, severity: 'Critical' }],
  ]);

  it('is valid JSON to begin with', () => {
    expect(Object.keys(JSON.parse(tricky) as object)).toEqual([
      'format',
      'note',
      'nested',
      'vulnerabilities',
      'after',
      'a very long root key that is longer than sixty-four characters, to overflow',
    ]);
  });

  it('parses the whole document', async () => {
    expect(await parseText(tricky)).toEqual(expected);
  });

  it('parses identically when split into 1-byte chunks', async () => {
    expect(await parseNvdFeed(bytewise(tricky))).toEqual(expected);
  });

  it('parses identically when split into 1-character string chunks', async () => {
    expect(await parseNvdFeed(Readable.from([...tricky]))).toEqual(expected);
  });

  it('hands each element over with its exact text', () => {
    const seen: unknown[] = [];
    const splitter = new JsonArraySplitter('vulnerabilities', (text) => seen.push(JSON.parse(text)));
    for (const ch of tricky) splitter.write(ch);
    splitter.end();
    const doc = JSON.parse(tricky) as { vulnerabilities: unknown[] };
    expect(seen).toEqual(doc.vulnerabilities);
    const descr = (seen[0] as { cve: { descriptions: { value: string }[] } }).cve.descriptions[0]?.value;
    expect(descr).toBe('ends with "}  then \\" and [ and ] and {\n and é é 😀 😀');
  });
});

describe('parseNvdFeed: malformed input', () => {
  const good = feed([cve('CVE-2099-0001', { v31: [{ score: 9.8, vector: V3_CRIT }] })]);

  it.each([
    ['truncated', good.slice(0, -5), 'NVD feed: truncated JSON document'],
    ['truncated inside a string', good.slice(0, good.indexOf('CVE-2099')), 'NVD feed: truncated JSON document'],
    ['empty', '', 'NVD feed: empty document'],
    ['whitespace only', '  \n', 'NVD feed: empty document'],
    ['not an object', '[1,2]', 'NVD feed: not a JSON object (the document does not start with "{")'],
    ['an HTML error page', '<html>503</html>', 'NVD feed: not a JSON object (the document does not start with "{")'],
    ['no vulnerabilities array', '{"resultsPerPage":0,"vulnerabilities":{}}', 'NVD feed: no "vulnerabilities" array in the document'],
    ['trailing data', `${good} {}`, 'NVD feed: unexpected data after the end of the JSON document'],
    ['unbalanced brackets', '{"vulnerabilities":[{"cve":{]}]}', 'NVD feed: malformed JSON (unbalanced "]")'],
    [
      'an element that is not an object',
      '{"vulnerabilities":[{"cve":{}}, 5]}',
      'NVD feed: an element of "vulnerabilities" is not an object',
    ],
    [
      'an element that is not JSON',
      '{"vulnerabilities":[{"cve":{"id":"CVE-1" "x":1}}]}',
      /^NVD feed: vulnerabilities\[0\] is not valid JSON: /,
    ],
  ])('rejects %s', async (_name, text, message) => {
    await expect(parseText(text)).rejects.toThrow(message);
  });

  it('rejects bytes that are not UTF-8', async () => {
    await expect(parseNvdFeed(Readable.from([Buffer.from([0x7b, 0xff, 0x7d])]))).rejects.toThrow('NVD feed: input is not valid UTF-8');
  });

  it('rejects when the input stream fails', async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error('socket hang up'));
      },
    });
    await expect(parseNvdFeed(failing)).rejects.toThrow('socket hang up');
  });
});
