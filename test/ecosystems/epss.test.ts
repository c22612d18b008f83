import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseEpssScores } from '../../src/ecosystems/epss/scores.js';
import { epssSource } from '../../src/ecosystems/epss/updater.js';
import type { EpssFile, EpssScore } from '../../src/model/risk.js';
import type { RiskSource } from '../../src/model/updater.js';

const fixture = (name: string) => new URL(`../fixtures/feeds/epss/${name}`, import.meta.url);

async function collect(file: EpssFile): Promise<EpssScore[]> {
  const rows: EpssScore[] = [];
  for await (const row of file.scores) rows.push(row);
  return rows;
}

/** Parses text given as one chunk (or as the listed chunks) and reads every row. */
async function parseText(...chunks: string[]): Promise<{ file: EpssFile; rows: EpssScore[] }> {
  const file = await parseEpssScores(Readable.from(chunks.map((c) => Buffer.from(c))));
  return { file, rows: await collect(file) };
}

const HEAD = '#model_version:v2023.03.01,score_date:2025-02-20T00:00:00+0000\ncve,epss,percentile\n';

const row = (cve: string, score: number, percentile: number): EpssScore => ({ cve, score, percentile });

describe('parseEpssScores on the excerpts', () => {
  it('reads the 2024-10-25 excerpt (claircore), which has no final newline', async () => {
    const file = await parseEpssScores(createReadStream(fixture('epss-scores-excerpt.csv')));
    expect(file.kind).toBe('epss');
    expect(file.date).toBe('2024-10-25');
    expect(file.modelVersion).toBe('v2023.03.01');
    expect(await collect(file)).toEqual([
      row('CVE-1999-0005', 0.91963, 0.9903),
      row('CVE-1999-0006', 0.03341, 0.91563),
      row('CVE-1999-0007', 0.00073, 0.32734),
      row('CVE-1999-0008', 0.13967, 0.95792),
      row('CVE-1999-0009', 0.09014, 0.94772),
      row('CVE-1999-0010', 0.00292, 0.69634),
      row('CVE-2022-34665', 0.00042, 0.05099),
      row('CVE-2022-34666', 0.00042, 0.05099),
      row('CVE-2022-34667', 0.00073, 0.32799),
      row('CVE-2022-34668', 0.00311, 0.70519),
      row('CVE-2022-34669', 0.00044, 0.13516),
      row('CVE-2022-34670', 0.00044, 0.13516),
      row('CVE-2022-34671', 0.00142, 0.50809),
      row('CVE-2022-34672', 0.00044, 0.13516),
      row('CVE-2022-34673', 0.00044, 0.13516),
      row('CVE-2022-34674', 0.00047, 0.18133),
      row('CVE-2022-34675', 0.00044, 0.13516),
      row('CVE-2024-9972', 0.00091, 0.39923),
      row('CVE-2024-9973', 0.00063, 0.28042),
      row('CVE-2024-9974', 0.00063, 0.28042),
      row('CVE-2024-9975', 0.00063, 0.28515),
      row('CVE-2024-9980', 0.0005, 0.20281),
      row('CVE-2024-9981', 0.0005, 0.20281),
      row('CVE-2024-9982', 0.00091, 0.39923),
      row('CVE-2024-9983', 0.0009, 0.39372),
      row('CVE-2024-9984', 0.00091, 0.39923),
      row('CVE-2024-9985', 0.00091, 0.39923),
      row('CVE-2024-9986', 0.00165, 0.53867),
      row('CVE-2024-9987', 0.00043, 0.09778),
    ]);
  });

  it('reads the 2025-02-20 excerpt (vunnel)', async () => {
    // A small highWaterMark cuts lines across chunks.
    const file = await parseEpssScores(createReadStream(fixture('epss-scores-excerpt-2.csv'), { highWaterMark: 7 }));
    expect(file.date).toBe('2025-02-20');
    expect(file.modelVersion).toBe('v2023.03.01');
    expect(await collect(file)).toEqual([
      row('CVE-1999-0001', 0.00383, 0.73075),
      row('CVE-1999-0002', 0.01328, 0.85996),
      row('CVE-1999-0003', 0.04409, 0.9244),
      row('CVE-1999-0004', 0.00917, 0.82963),
      row('CVE-1999-0005', 0.91963, 0.99214),
    ]);
  });
});

describe('parseEpssScores: the first lines', () => {
  it('takes the comment keys in any order, CRLF line ends, a BOM, a Z time zone and blank lines', async () => {
    const { file, rows } = await parseText(
      '\uFEFF#score_date:2099-01-05T12:55:00Z,model_version:v2025.03.14\r\ncve,epss,percentile\r\n',
      'CVE-2099-0001,0.94321,0.99912\r\n\r\nCVE-2099-0002,0,1\r\n',
    );
    expect(file.date).toBe('2099-01-05');
    expect(file.modelVersion).toBe('v2025.03.14');
    expect(rows).toEqual([row('CVE-2099-0001', 0.94321, 0.99912), row('CVE-2099-0002', 0, 1)]);
  });

  it('tolerates a missing model_version', async () => {
    const { file, rows } = await parseText('#score_date:2099-01-05\ncve,epss,percentile\nCVE-2099-0001,0.5,0.5\n');
    expect(file.date).toBe('2099-01-05');
    expect(file.modelVersion).toBe('');
    expect(rows).toEqual([row('CVE-2099-0001', 0.5, 0.5)]);
  });

  it('resolves before the rows are read, and reads them once', async () => {
    const file = await parseEpssScores(Readable.from([Buffer.from(`${HEAD}CVE-2099-0001,0.1,0.2\n`)]));
    expect(await collect(file)).toEqual([row('CVE-2099-0001', 0.1, 0.2)]);
    await expect(collect(file)).rejects.toThrow(/only once/);
  });

  it('has no rows when the file stops after the header', async () => {
    const { rows } = await parseText(HEAD);
    expect(rows).toEqual([]);
  });

  it('refuses a file without the comment line (the older format has no date)', async () => {
    await expect(parseText('cve,epss,percentile\nCVE-2099-0001,0.5,0.5\n')).rejects.toThrow(
      /line 1: expected the "#model_version:…,score_date:…" comment, found "cve,epss,percentile"/,
    );
  });

  it('refuses a comment without score_date', async () => {
    await expect(parseText('#model_version:v2023.03.01\ncve,epss,percentile\n')).rejects.toThrow(/line 1: the comment has no score_date/);
  });

  it('refuses a score_date that is not a date', async () => {
    await expect(parseText('#score_date:yesterday\ncve,epss,percentile\n')).rejects.toThrow(/line 1: score_date "yesterday"/);
    await expect(parseText('#score_date:2025-13-01T00:00:00Z\ncve,epss,percentile\n')).rejects.toThrow(/line 1: score_date/);
  });

  it('refuses a wrong header', async () => {
    await expect(parseText('#score_date:2025-02-20\ncve,percentile,epss\n')).rejects.toThrow(
      /line 2: expected the header "cve,epss,percentile", found "cve,percentile,epss"/,
    );
    await expect(parseText('#score_date:2025-02-20\ncve,epss,percentile,extra\n')).rejects.toThrow(/line 2: expected the header/);
  });

  it('refuses a file that ends before the header, and an empty file', async () => {
    await expect(parseText('#score_date:2025-02-20\n')).rejects.toThrow(/line 2: .* found the end of the file/);
    await expect(parseText('')).rejects.toThrow(/empty/);
  });

  it('refuses gzip-compressed input (decompressing is the runner’s job) and non-UTF-8 text', async () => {
    const gz = gzipSync(`${HEAD}CVE-2099-0001,0.1,0.2\n`);
    await expect(parseEpssScores(Readable.from([gz]))).rejects.toThrow(/gzip-compressed/);
    await expect(parseEpssScores(Readable.from([Buffer.from([0x23, 0xff, 0xfe, 0x0a])]))).rejects.toThrow(/not valid UTF-8/);
  });

  it('destroys the stream when it refuses the first lines', async () => {
    const stream = Readable.from([Buffer.from('cve,epss,percentile\n'), Buffer.from('CVE-2099-0001,0.5,0.5\n')]);
    await expect(parseEpssScores(stream)).rejects.toThrow(/line 1/);
    expect(stream.destroyed).toBe(true);
  });
});

describe('parseEpssScores: the stream', () => {
  it('is destroyed when the rows are left early', async () => {
    const stream = Readable.from([Buffer.from(`${HEAD}CVE-2099-0001,0.1,0.2\n`), Buffer.from('CVE-2099-0002,0.1,0.2\n')]);
    const file = await parseEpssScores(stream);
    for await (const score of file.scores) {
      expect(score.cve).toBe('CVE-2099-0001');
      break;
    }
    expect(stream.destroyed).toBe(true);
  });

  it('refuses a line longer than 64 KiB (not an EPSS file)', async () => {
    await expect(parseText(HEAD, 'CVE-2099-0001,0.1,0.2\n', 'x'.repeat(70_000))).rejects.toThrow(/line 4 is longer than 65536 characters/);
  });
});

describe('parseEpssScores: bad rows name their line', () => {
  const bad = (rows: string) => parseText(`${HEAD}CVE-2099-0001,0.1,0.2\n${rows}`);

  it('a row with 4 fields', async () => {
    await expect(bad('CVE-2099-0002,0.1,0.2,0.3\n')).rejects.toThrow(/line 4: expected 3 fields \(cve,epss,percentile\), found 4/);
  });

  it('a row with 2 fields', async () => {
    await expect(bad('CVE-2099-0002,0.1\n')).rejects.toThrow(/line 4: expected 3 fields .* found 2/);
  });

  it('a score of 1.5', async () => {
    await expect(bad('CVE-2099-0002,1.5,0.2\n')).rejects.toThrow(/line 4: epss "1.5" is not a number between 0 and 1/);
  });

  it('a percentile that is negative, empty or not a number', async () => {
    await expect(bad('CVE-2099-0002,0.1,-0.2\n')).rejects.toThrow(/line 4: percentile "-0.2"/);
    await expect(bad('CVE-2099-0002,0.1,\n')).rejects.toThrow(/line 4: percentile ""/);
    await expect(bad('CVE-2099-0002,0.1,NaN\n')).rejects.toThrow(/line 4: percentile "NaN"/);
    await expect(bad('CVE-2099-0002, 0.1,0.2\n')).rejects.toThrow(/line 4: epss " 0.1"/);
  });

  it('a bad CVE id', async () => {
    await expect(bad('\nCVE-99-1,0.1,0.2\n')).rejects.toThrow(/line 5: "CVE-99-1" is not a CVE id/);
    await expect(bad('cve-2099-0002,0.1,0.2\n')).rejects.toThrow(/line 4: "cve-2099-0002" is not a CVE id/);
  });

  it('a bad last line without a newline, after rows in other chunks', async () => {
    await expect(parseText(HEAD, 'CVE-2099-0001,0.1,0.2\nCVE-2099-00', '02,0.1,0.2\nCVE-2099-0003,0.1')).rejects.toThrow(
      /line 5: expected 3 fields .* found 2/,
    );
  });
});

describe('parseEpssScores streams a full-size file', () => {
  it('reads 300,000 rows from a stream generated in chunks', async () => {
    const ROWS = 300_000;
    const id = (n: number) => `CVE-2099-${String(n).padStart(6, '0')}`;
    function* chunks(): Generator<Buffer> {
      yield Buffer.from(HEAD);
      const size = 5_000;
      for (let start = 1; start <= ROWS; start += size) {
        const lines: string[] = [];
        for (let n = start; n < start + size && n <= ROWS; n++) lines.push(`${id(n)},${(n / ROWS).toFixed(5)},${(n / ROWS).toFixed(5)}\n`);
        yield Buffer.from(lines.join(''));
      }
    }
    const file = await parseEpssScores(Readable.from(chunks(), { objectMode: false }));
    let count = 0;
    let last: EpssScore | undefined;
    for await (const score of file.scores) {
      count++;
      last = score;
    }
    expect(count).toBe(ROWS);
    expect(last).toEqual(row('CVE-2099-300000', 1, 1));
  });
});

describe('epssSource', () => {
  it('has one part, the configured file', async () => {
    expect(epssSource.name).toBe('epss');
    expect(epssSource.kind).toBe('risk');
    const url = 'https://epss.empiricalsecurity.com/epss_scores-current.csv.gz';
    // As the runner sees it.
    const source: RiskSource = epssSource;
    const parts = await source.parts(url, () => Promise.reject(new Error('no index')));
    expect(parts.map((p) => ({ key: p.key, urls: p.urls, optional: p.optional }))).toEqual([
      { key: 'scores', urls: [url], optional: undefined },
    ]);
    const data = await parts[0]!.parse([createReadStream(fixture('epss-scores-excerpt-2.csv'))]);
    expect(data.kind).toBe('epss');
    if (data.kind !== 'epss') return;
    expect(data.date).toBe('2025-02-20');
    expect((await collect(data)).map((s) => s.cve)).toEqual([
      'CVE-1999-0001',
      'CVE-1999-0002',
      'CVE-1999-0003',
      'CVE-1999-0004',
      'CVE-1999-0005',
    ]);
  });
});
