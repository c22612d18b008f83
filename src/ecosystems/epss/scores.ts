import { CVE_ID } from '../../model/vulnerability.js';
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import type { EpssFile, EpssScore } from '../../model/risk.js';

/**
 * FIRST's EPSS daily scores CSV, `epss_scores-current.csv` once decompressed:
 *
 * ```
 * #model_version:v2023.03.01,score_date:2025-02-20T00:00:00+0000
 * cve,epss,percentile
 * CVE-1999-0001,0.00383,0.73075
 * ```
 *
 * The returned promise resolves once the two first lines are read and checked; `scores` then
 * streams the rows from the same stream, a chunk at a time (the file has about 300,000 rows and is
 * never held whole). `scores` can be iterated once; leaving the loop early destroys the stream.
 *
 * Rules (any breach throws, naming the line: the feed is taken as corrupt and the last good scores
 * are kept):
 * - line 1 is the `#key:value,key:value` comment, keys in any order; `score_date` is required (the
 *   scores are dated by it; older files start at the header, without the comment, and are refused),
 *   `model_version` may be missing (then '');
 * - line 2 is exactly `cve,epss,percentile` (as claircore checks);
 * - every other non-blank line has exactly 3 fields: a CVE id, then epss and percentile, decimal
 *   numbers in [0, 1].
 * Lines may end in `\r\n`. Compressed input is refused: the runner decompresses.
 */
export async function parseEpssScores(stream: Readable): Promise<EpssFile> {
  const lines = new LineReader(stream);
  let head: { date: string; modelVersion: string };
  try {
    const comment = await lines.next();
    if (comment === undefined) throw new Error('EPSS scores: the file is empty');
    head = parseComment(comment);
    const header = await lines.next();
    if (header !== HEADER) {
      throw new Error(
        `EPSS scores: line 2: expected the header "${HEADER}", found ${header === undefined ? 'the end of the file' : quote(header)}`,
      );
    }
  } catch (err) {
    lines.close();
    throw err;
  }
  let started = false;
  return {
    kind: 'epss',
    date: head.date,
    modelVersion: head.modelVersion,
    scores: {
      [Symbol.asyncIterator]() {
        if (started) throw new Error('EPSS scores: the rows can be read only once');
        started = true;
        return new Rows(lines);
      },
    },
  };
}

const HEADER = 'cve,epss,percentile';
/** A plain decimal (`0.00043`, `1`, `1.0`, `.5`) with an optional exponent; `Number` alone would take '' and ' 1' too. */
const DECIMAL = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;
/** YYYY-MM-DD at the start of score_date, before its time of day if any. */
const SCORE_DATE = /^(\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))(?:[T ]|$)/;
/** EPSS lines are under 100 characters: a longer one means the input is not the scores CSV. */
const MAX_LINE = 64 * 1024;

function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

function parseComment(line: string): { date: string; modelVersion: string } {
  if (!line.startsWith('#')) {
    throw new Error(
      `EPSS scores: line 1: expected the "#model_version:…,score_date:…" comment, found ${quote(line)} (files without a score date are not accepted)`,
    );
  }
  const fields = new Map<string, string>();
  for (const pair of line.slice(1).split(',')) {
    // score_date's value holds colons itself: split at the first one only.
    const colon = pair.indexOf(':');
    if (colon > 0) fields.set(pair.slice(0, colon).trim(), pair.slice(colon + 1).trim());
  }
  const scoreDate = fields.get('score_date');
  if (scoreDate === undefined) throw new Error(`EPSS scores: line 1: the comment has no score_date: ${quote(line)}`);
  const date = SCORE_DATE.exec(scoreDate)?.[1];
  if (date === undefined) throw new Error(`EPSS scores: line 1: score_date ${quote(scoreDate)} does not start with a YYYY-MM-DD date`);
  return { date, modelVersion: fields.get('model_version') ?? '' };
}

/**
 * The rows, as a hand-written iterator: most calls of `next` answer from the current batch without
 * awaiting, which costs about half what an async generator's `yield` does (300,000 rows).
 */
class Rows implements AsyncIterableIterator<EpssScore> {
  private lines: readonly string[] = [];
  private index = 0;
  private firstLine = 0;

  constructor(private readonly reader: LineReader) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<EpssScore>> {
    try {
      for (;;) {
        while (this.index < this.lines.length) {
          const i = this.index++;
          const line = this.lines[i] as string;
          if (line.trim() !== '') return { value: parseRow(line, this.firstLine + i), done: false };
        }
        const batch = await this.reader.batch();
        if (batch === undefined) return this.finish();
        this.lines = batch.lines;
        this.index = 0;
        this.firstLine = batch.firstLine;
      }
    } catch (err) {
      this.finish();
      throw err;
    }
  }

  /** Called by `for await` when the loop is left early: stops reading. */
  async return(): Promise<IteratorResult<EpssScore>> {
    return this.finish();
  }

  private finish(): IteratorReturnResult<undefined> {
    this.lines = [];
    this.index = 0;
    this.reader.close();
    return { value: undefined, done: true };
  }
}

function parseRow(line: string, number: number): EpssScore {
  // indexOf rather than split: no array per row (the rows of a full file take about 0.1 s).
  const first = line.indexOf(',');
  const second = first < 0 ? -1 : line.indexOf(',', first + 1);
  if (second < 0 || line.includes(',', second + 1)) {
    throw new Error(`EPSS scores: line ${number}: expected 3 fields (${HEADER}), found ${line.split(',').length}: ${quote(line)}`);
  }
  const cve = line.slice(0, first);
  if (!CVE_ID.test(cve)) throw new Error(`EPSS scores: line ${number}: ${quote(cve)} is not a CVE id`);
  return {
    cve,
    score: probability(line.slice(first + 1, second), 'epss', number),
    percentile: probability(line.slice(second + 1), 'percentile', number),
  };
}

function probability(text: string, field: string, number: number): number {
  const value = DECIMAL.test(text) ? Number(text) : NaN;
  if (!(value >= 0 && value <= 1)) throw new Error(`EPSS scores: line ${number}: ${field} ${quote(text)} is not a number between 0 and 1`);
  return value;
}

/**
 * Lines of a UTF-8 stream, without their `\n` or `\r\n`, handed out one by one ({@link next}) or
 * a chunk's worth at a time ({@link batch}), numbered from 1. Holds one chunk and the unfinished
 * line at its end.
 */
class LineReader {
  private readonly chunks: AsyncIterator<Buffer | string>;
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private pending: string[] = [];
  /** The number of the first line of `pending`. */
  private pendingFirst = 1;
  private partial = '';
  private done = false;
  private first = true;

  constructor(private readonly stream: Readable) {
    this.chunks = (stream as AsyncIterable<Buffer | string>)[Symbol.asyncIterator]();
  }

  async next(): Promise<string | undefined> {
    while (this.pending.length === 0) {
      if (!(await this.fill())) return undefined;
    }
    this.pendingFirst++;
    return this.pending.shift();
  }

  async batch(): Promise<{ lines: string[]; firstLine: number } | undefined> {
    while (this.pending.length === 0) {
      if (!(await this.fill())) return undefined;
    }
    const result = { lines: this.pending, firstLine: this.pendingFirst };
    this.pendingFirst += this.pending.length;
    this.pending = [];
    return result;
  }

  /** Stops reading, destroying the stream (once the reading is over or abandoned). */
  close(): void {
    this.done = true;
    if (!this.stream.destroyed && !this.stream.readableEnded) this.stream.destroy();
  }

  /** Reads one more chunk into `pending`; false at the end of the input. */
  private async fill(): Promise<boolean> {
    if (this.done) return false;
    const { value, done } = await this.chunks.next();
    let text: string;
    if (done) {
      this.done = true;
      text = this.decode();
      if (this.partial === '' && text === '') return false;
    } else {
      if (this.first && typeof value !== 'string' && value.length >= 2 && value[0] === 0x1f && value[1] === 0x8b) {
        throw new Error('EPSS scores: the input is gzip-compressed (it should reach the parser decompressed)');
      }
      text = typeof value === 'string' ? value : this.decode(value);
    }
    if (this.first && text.length > 0) {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const parts = (this.partial + text).split('\n');
    this.partial = done ? '' : (parts.pop() as string);
    if (this.partial.length > MAX_LINE) {
      throw new Error(
        `EPSS scores: line ${this.pendingFirst + parts.length} is longer than ${MAX_LINE} characters: this is not an EPSS scores file`,
      );
    }
    for (let i = 0; i < parts.length; i++) {
      const line = parts[i] as string;
      if (line.endsWith('\r')) parts[i] = line.slice(0, -1);
    }
    this.pending = parts;
    return true;
  }

  private decode(chunk?: Buffer): string {
    try {
      return chunk === undefined ? this.decoder.decode() : this.decoder.decode(chunk, { stream: true });
    } catch (err) {
      throw new Error('EPSS scores: the input is not valid UTF-8 text', { cause: err });
    }
  }
}
