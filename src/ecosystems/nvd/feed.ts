import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import type { Enrichment } from '../../model/source-data.js';

/**
 * NVD CVE JSON 2.0: the yearly / modified / recent feed
 * files `nvdcve-2.0-<YYYY>.json` and CVE API 2.0 pages share the shape
 * `{ ..., vulnerabilities: [ { cve: { id, vulnStatus, metrics: {...} } }, ... ] }`.
 *
 * The document is streamed: {@link JsonArraySplitter} cuts the top-level `vulnerabilities` array
 * into the text of one element at a time, and only that element is `JSON.parse`d, so memory holds
 * one element plus the result map, never the document (a yearly file is tens of MB).
 *
 * Per CVE id (entries with `vulnStatus: "Rejected"`, and entries with neither a v3.x nor a v2
 * score, are skipped):
 * - `nvd.CVSSv3 = { Score: baseScore, Vectors: vectorString }`, chosen from `cvssMetricV31` and
 *   `cvssMetricV30` in this order: NVD's own (`type: "Primary"`) v3.1, Primary v3.0, then the
 *   first v3.1, the first v3.0. Primary first across both versions because NVD's own analysis is
 *   what Clair always carried (the 1.x feeds held nothing else); a CNA's "Secondary" v3.1 score
 *   does not displace NVD's v3.0 one. `cvssMetricV40` is ignored (Clair has no slot for it).
 * - `nvd.CVSSv2 = { Score, Vectors }` from `cvssMetricV2` (Primary preferred, else the first);
 *   Vectors like `AV:N/AC:L/Au:N/C:P/I:P/A:P`, as Clair stored them.
 * - `severity` from the v3 score ({@link severityFromCvss3}), else from the v2 score with Clair's
 *   thresholds ({@link severityFromCvss2}).
 * A CVE id seen twice keeps the later entry.
 */
export async function parseNvdFeed(input: Readable): Promise<Map<string, Enrichment>> {
  const result = new Map<string, Enrichment>();
  let index = 0;
  const splitter = new JsonArraySplitter('vulnerabilities', (text) => {
    const at = index++;
    let element: unknown;
    try {
      element = JSON.parse(text);
    } catch (err) {
      throw new Error(`NVD feed: vulnerabilities[${at}] is not valid JSON: ${(err as Error).message}`, { cause: err });
    }
    const entry = enrichmentOf(element);
    if (entry !== undefined) result.set(entry[0], entry[1]);
  });
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const decode = (chunk?: Buffer): string => {
    try {
      return chunk === undefined ? decoder.decode() : decoder.decode(chunk, { stream: true });
    } catch (err) {
      throw new Error('NVD feed: input is not valid UTF-8', { cause: err });
    }
  };
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    splitter.write(typeof chunk === 'string' ? chunk : decode(chunk));
  }
  splitter.write(decode());
  splitter.end();
  return result;
}

type EnrichmentSeverity = Enrichment['severity'];
interface Cvss {
  readonly Score: number;
  readonly Vectors: string;
}

/**
 * CVSS v3 qualitative ratings: None 0.0 (reported as Negligible, the scale's lowest real level),
 * Low 0.1–3.9, Medium 4.0–6.9, High 7.0–8.9, Critical 9.0–10.0.
 */
export function severityFromCvss3(score: number): EnrichmentSeverity {
  if (score <= 0) return 'Negligible';
  if (score < 4.0) return 'Low';
  if (score < 7.0) return 'Medium';
  if (score < 9.0) return 'High';
  return 'Critical';
}

/** Clair's CVSSv2 mapping, strict `<`: 3.9 → Medium, 6.9 → High, 8.9 → Critical. */
export function severityFromCvss2(score: number): EnrichmentSeverity {
  if (score < 1.0) return 'Negligible';
  if (score < 3.9) return 'Low';
  if (score < 6.9) return 'Medium';
  if (score < 8.9) return 'High';
  return 'Critical';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function cvssOf(metric: unknown): Cvss | undefined {
  if (!isObject(metric) || !isObject(metric['cvssData'])) return undefined;
  const score = metric['cvssData']['baseScore'];
  const vector = metric['cvssData']['vectorString'];
  if (typeof score !== 'number' || !Number.isFinite(score) || score < 0 || score > 10) return undefined;
  if (typeof vector !== 'string' || vector.trim() === '') return undefined;
  return { Score: score, Vectors: vector.trim() };
}

function isPrimary(metric: unknown): boolean {
  return isObject(metric) && metric['type'] === 'Primary';
}

/** The first usable score among the metric lists, Primary entries (in list order) before the rest. */
function pickCvss(lists: readonly unknown[]): Cvss | undefined {
  const arrays = lists.filter((l): l is unknown[] => Array.isArray(l));
  for (const primary of [true, false]) {
    for (const list of arrays) {
      for (const metric of list) {
        if (primary && !isPrimary(metric)) continue;
        const cvss = cvssOf(metric);
        if (cvss !== undefined) return cvss;
      }
    }
  }
  return undefined;
}

function enrichmentOf(element: unknown): [string, Enrichment] | undefined {
  if (!isObject(element) || !isObject(element['cve'])) return undefined;
  const cve = element['cve'];
  const id = cve['id'];
  if (typeof id !== 'string' || id.trim() === '') return undefined;
  if (cve['vulnStatus'] === 'Rejected') return undefined;
  const metrics = isObject(cve['metrics']) ? cve['metrics'] : {};
  const v3 = pickCvss([metrics['cvssMetricV31'], metrics['cvssMetricV30']]);
  const v2 = pickCvss([metrics['cvssMetricV2']]);
  if (v3 === undefined && v2 === undefined) return undefined;
  const nvd: Record<string, Cvss> = {};
  if (v3 !== undefined) nvd['CVSSv3'] = v3;
  if (v2 !== undefined) nvd['CVSSv2'] = v2;
  const severity = v3 !== undefined ? severityFromCvss3(v3.Score) : severityFromCvss2((v2 as Cvss).Score);
  return [id.trim(), { nvd, severity }];
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;
/** Keys longer than this cannot be the one looked for; their text is not kept. */
const MAX_KEY = 64;
/** One array element larger than this is not a CVE record: give up rather than grow without bound. */
const MAX_ELEMENT_CHARS = 64 * 1024 * 1024;

function isJsonWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * An incremental scanner for one JSON document given as text chunks. It tracks string and escape
 * state and the bracket nesting (checking that brackets match), finds the array that is the value
 * of key `key` of the root object, and calls `onElement` with the exact text of each element of
 * that array (each must be an object), as soon as the element's closing brace arrives. Text outside
 * that array is scanned but never kept (except the short keys of the root object).
 *
 * It is not a validating parser: outside the elements it checks only bracket balance, that the
 * root is an object, that nothing follows it, and that the document is complete. Each element is
 * validated by the caller's `JSON.parse`.
 */
export class JsonArraySplitter {
  /** Open brackets, innermost last (OPEN_BRACE / OPEN_BRACKET). */
  private readonly stack: number[] = [];
  private inString = false;
  private escaped = false;
  private rootSeen = false;
  private rootClosed = false;
  private arrayFound = false;
  /** Inside the target array (stack depth 2). */
  private inArray = false;

  // Root-level key tracking.
  private keyParts: string[] | undefined;
  private keyStart = -1;
  private keyLength = 0;
  /** The last complete string at depth 1 (a key, if a ':' follows). */
  private lastString: string | undefined;
  /** The key whose value comes next at depth 1. */
  private currentKey: string | undefined;

  // Element capture.
  private elementParts: string[] = [];
  private elementStart = -1;
  private elementLength = 0;

  constructor(
    private readonly key: string,
    private readonly onElement: (text: string) => void,
  ) {}

  write(chunk: string): void {
    const n = chunk.length;
    const stack = this.stack;
    let i = 0;
    while (i < n) {
      const c = chunk.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
        } else if (c === BACKSLASH) {
          this.escaped = true;
        } else if (c === QUOTE) {
          this.inString = false;
          if (this.keyStart >= 0 || this.keyParts !== undefined) this.endRootString(chunk, i);
        } else {
          // Fast path: skip to the next quote or backslash.
          let j = i + 1;
          while (j < n) {
            const d = chunk.charCodeAt(j);
            if (d === QUOTE || d === BACKSLASH) break;
            j++;
          }
          i = j;
          continue;
        }
        i++;
        continue;
      }
      if (isJsonWhitespace(c)) {
        i++;
        continue;
      }
      if (this.rootClosed) throw new Error(`NVD feed: unexpected data after the end of the JSON document`);
      if (!this.rootSeen) {
        if (c === 0xfeff) {
          i++;
          continue;
        }
        if (c !== OPEN_BRACE) throw new Error('NVD feed: not a JSON object (the document does not start with "{")');
        this.rootSeen = true;
      }
      const depth = stack.length;
      if (this.inArray && depth === 2 && c !== COMMA && c !== CLOSE_BRACKET) {
        if (c !== OPEN_BRACE) throw new Error(`NVD feed: an element of "${this.key}" is not an object`);
        this.elementStart = i;
        this.elementParts = [];
        this.elementLength = 0;
      }
      switch (c) {
        case QUOTE:
          this.inString = true;
          if (depth === 1) {
            this.keyStart = i + 1;
            this.keyParts = [];
            this.keyLength = 0;
          }
          break;
        case OPEN_BRACE:
        case OPEN_BRACKET:
          if (depth === 1) {
            if (c === OPEN_BRACKET && this.currentKey === this.key && !this.arrayFound) {
              this.inArray = true;
              this.arrayFound = true;
            }
            this.currentKey = undefined;
          }
          stack.push(c);
          break;
        case CLOSE_BRACE:
        case CLOSE_BRACKET: {
          const open = stack.pop();
          if (open === undefined || (c === CLOSE_BRACE) !== (open === OPEN_BRACE)) {
            throw new Error(`NVD feed: malformed JSON (unbalanced "${String.fromCharCode(c)}")`);
          }
          if (stack.length === 0) this.rootClosed = true;
          else if (this.inArray && stack.length === 2 && this.elementStart >= 0) this.endElement(chunk, i);
          else if (this.inArray && stack.length === 1) this.inArray = false;
          break;
        }
        case COLON:
          if (depth === 1) this.currentKey = this.lastString;
          break;
        case COMMA:
          if (depth === 1) this.currentKey = undefined;
          break;
        default:
          break;
      }
      if (depth === 1 && c !== QUOTE) this.lastString = undefined;
      i++;
    }
    // Carry partial texts over to the next chunk.
    if (this.elementStart >= 0) {
      this.appendElement(chunk.slice(this.elementStart));
      this.elementStart = 0;
    }
    if (this.keyStart >= 0 && this.keyParts !== undefined) {
      this.appendKey(chunk.slice(this.keyStart));
      if (this.keyParts !== undefined) this.keyStart = 0;
    }
  }

  /** Call after the last chunk: throws if the document was incomplete or lacked the array. */
  end(): void {
    if (!this.rootSeen) throw new Error('NVD feed: empty document');
    if (!this.rootClosed || this.inString) throw new Error('NVD feed: truncated JSON document');
    if (!this.arrayFound) throw new Error(`NVD feed: no "${this.key}" array in the document`);
  }

  private appendKey(text: string): void {
    if (this.keyParts === undefined) return;
    this.keyLength += text.length;
    if (this.keyLength > MAX_KEY) {
      this.keyParts = undefined;
      this.keyStart = -1;
      return;
    }
    this.keyParts.push(text);
  }

  private endRootString(chunk: string, quoteAt: number): void {
    if (this.keyParts !== undefined && this.keyStart >= 0) {
      this.appendKey(chunk.slice(this.keyStart, quoteAt));
    }
    this.lastString = this.keyParts?.join('');
    this.keyParts = undefined;
    this.keyStart = -1;
  }

  private appendElement(text: string): void {
    this.elementLength += text.length;
    if (this.elementLength > MAX_ELEMENT_CHARS) {
      throw new Error(`NVD feed: an element of "${this.key}" is larger than ${MAX_ELEMENT_CHARS} characters`);
    }
    this.elementParts.push(text);
  }

  private endElement(chunk: string, closeAt: number): void {
    this.appendElement(chunk.slice(this.elementStart, closeAt + 1));
    const text = this.elementParts.length === 1 ? (this.elementParts[0] as string) : this.elementParts.join('');
    this.elementParts = [];
    this.elementStart = -1;
    this.elementLength = 0;
    this.onElement(text);
  }
}
