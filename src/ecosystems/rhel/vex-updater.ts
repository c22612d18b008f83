/**
 * Red Hat CSAF VEX, the current Red Hat feed, under its base
 * (https://security.access.redhat.com/data/csaf/v2/vex/):
 * - `archive_latest.txt` names the full archive, `csaf_vex_<YYYY-MM-DD>.tar.zst`: every live
 *   document as `<year>/cve-<year>-<n>.json`;
 * - `changes.csv`: `"<year>/cve-….json","<RFC 3339 time>"`, one line per document with the time
 *   of its last change (a document re-published since the archive was built is listed with a
 *   later time);
 * - `deletions.csv`: the same shape, for documents withdrawn (a withdrawn document stays listed
 *   in changes.csv and answers 404; one re-published after its deletion has a later change).
 *
 * The updater model re-parses a part whole whenever one of its files changed, and a part is the
 * complete data of its namespaces (what it lacks is withdrawn). So the whole feed is one part,
 * `rhel-vex`, which claims every `rhel:N` namespace its documents give:
 * - urls: the archive `archive_latest.txt` names, `deletions.csv`, then every document changed
 *   since the archive was built (changes.csv, read in parts()), unless deleted after that change;
 * - parse: the archive's documents, each replaced by its changed copy when there is one, then
 *   every document whose deletion is newer than its last change removed (and every document
 *   that marks itself `tracking.status: "deleted"`).
 * A new archive, a newly changed document, a document changed again or a new deletion changes
 * the part's files, and the part is parsed again, archive and all. Between two archives the
 * changed documents accumulate in the part (the runner asks for each conditionally on each run).
 * "Changed since the archive was built" is read from the date in the archive's name, less a day:
 * fetchText gives no Last-Modified (claircore takes the archive's), and fetching a document the
 * archive already holds costs a request, while missing one would keep it stale until the next
 * archive.
 *
 * The cost of this simplicity is that every change upstream (several a day) re-downloads and
 * re-parses the whole archive. Parsing documents one by one into a store of documents (what
 * claircore's delta updater does) needs a part that can say "these documents changed", which the
 * model does not have.
 *
 * Unlike claircore, no year is skipped (it reads from 2015 on): the OVAL v2 files this replaces
 * carry older advisories too.
 */
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { Parser, type ReadEntry } from 'tar';
import type { SourceData } from '../../model/source-data.js';
import { directory, readAll, type Updater } from '../../model/updater.js';
import type { Vulnerability } from '../../model/vulnerability.js';
import { compareNames } from '../oval/collect.js';
import { parseRedHatVex } from './vex.js';

const ARCHIVE_NAME = /^csaf_vex_(\d{4}-\d{2}-\d{2})\.tar\.zst$/;
/** What changes.csv, deletions.csv and the archive name: only these paths are fetched or read. */
const DOCUMENT_PATH = /^\d{4}\/cve-\d{4}-\d+\.json$/;
const DAY_MS = 24 * 60 * 60 * 1000;
/** A document larger than this is not a VEX document (the largest, kernel CVEs, are a few MB). */
const MAX_DOCUMENT_BYTES = 256 * 1024 * 1024;

/** Red Hat CSAF VEX: one part, the archive overlaid with the documents changed and deleted since. */
export const rhelVexUpdater = {
  name: 'rhel-vex',
  kind: 'vulnerabilities',
  async parts(base, fetchText) {
    const root = directory(base);
    const latest = (await fetchText(`${root}archive_latest.txt`)).trim();
    const match = ARCHIVE_NAME.exec(latest);
    if (!match)
      throw new Error(`Red Hat VEX: archive_latest.txt names ${JSON.stringify(latest.slice(0, 100))}, not csaf_vex_<date>.tar.zst`);
    const archiveDate = Date.parse(`${match[1]}T00:00:00Z`);
    if (Number.isNaN(archiveDate)) throw new Error(`Red Hat VEX: archive_latest.txt names ${latest}, whose date is not one`);
    const changes = readDocumentTimes(await fetchText(`${root}changes.csv`), 'changes.csv');
    const deletions = readDocumentTimes(await fetchText(`${root}deletions.csv`), 'deletions.csv');
    const plan = planOverlay(changes, deletions, archiveDate - DAY_MS);
    return [
      {
        key: 'rhel-vex',
        urls: [`${root}${latest}`, `${root}deletions.csv`, ...plan.changed.map((path) => `${root}${path}`)],
        parse: (files) => parseVexFeed(files, plan),
      },
    ];
  },
} satisfies Updater;

/** What parse needs from the indexes read when the part was made. */
interface OverlayPlan {
  /** Documents changed since the archive was built and not deleted since, sorted: the part's urls after the first two. */
  readonly changed: readonly string[];
  /** changes.csv: path → time of the last change (ms). */
  readonly changes: ReadonlyMap<string, number>;
}

/** The documents to fetch beside the archive: changed at or after `since`, and not deleted after that change. */
export function planOverlay(changes: ReadonlyMap<string, number>, deletions: ReadonlyMap<string, number>, since: number): OverlayPlan {
  const changed = [...changes]
    .filter(([path, time]) => time >= since && !((deletions.get(path) ?? -Infinity) >= time))
    .map(([path]) => path)
    .sort();
  return { changed, changes };
}

/**
 * changes.csv / deletions.csv → path → latest time (ms). Lines naming anything but a document
 * path are skipped (the path becomes part of a URL); a time that is not one fails the run.
 */
export function readDocumentTimes(csv: string, label: string): Map<string, number> {
  const times = new Map<string, number>();
  for (const [index, raw] of csv.split('\n').entries()) {
    const line = raw.trim();
    if (line === '') continue;
    const comma = line.indexOf(',');
    const path = unquote(comma < 0 ? line : line.slice(0, comma));
    if (!DOCUMENT_PATH.test(path)) continue;
    const time = Date.parse(unquote(line.slice(comma + 1)));
    if (comma < 0 || Number.isNaN(time))
      throw new Error(`Red Hat VEX: ${label} line ${index + 1} has no valid time: ${line.slice(0, 200)}`);
    if (time > (times.get(path) ?? -Infinity)) times.set(path, time);
  }
  return times;
}

const unquote = (field: string): string => field.trim().replace(/^"(.*)"$/, '$1');

/** The part's files: the archive (decompressed), deletions.csv, then the changed documents in plan order. */
export async function parseVexFeed(files: readonly Readable[], plan: OverlayPlan): Promise<SourceData> {
  const [archive, deletionsFile, ...changed] = files;
  if (!archive || !deletionsFile || changed.length !== plan.changed.length) {
    throw new Error(`Red Hat VEX: expected ${plan.changed.length + 2} files, got ${files.length}`);
  }
  const replaced = new Set(plan.changed);
  const documents = new Map<string, readonly Vulnerability[]>();
  const keep = (path: string, body: Buffer) => {
    let doc;
    try {
      doc = parseRedHatVex(body);
    } catch (err) {
      throw new Error(`Red Hat VEX: ${path} is not a JSON document: ${(err as Error).message}`, { cause: err });
    }
    if (doc.deleted) documents.delete(path);
    else documents.set(path, doc.vulnerabilities);
  };
  const archived = await readArchive(archive, (path, body) => {
    if (!replaced.has(path)) keep(path, body);
  });
  if (archived === 0) throw new Error('Red Hat VEX: the archive holds no document');
  for (const [i, stream] of changed.entries()) keep(plan.changed[i]!, await readAll(stream));
  const deletions = readDocumentTimes((await readAll(deletionsFile)).toString('utf8'), 'deletions.csv');
  for (const [path, deletedAt] of deletions) {
    if (!((plan.changes.get(path) ?? -Infinity) > deletedAt)) documents.delete(path);
  }
  return assemble(documents.values());
}

/** The RHEL majors Red Hat's VEX feed covers. */
const RHEL_MAJORS = [5, 6, 7, 8, 9, 10];

/** Every document's records, one per (namespace, name) (the first document naming a pair keeps it), sorted. */
function assemble(documents: Iterable<readonly Vulnerability[]>): SourceData {
  const records = new Map<string, Vulnerability>();
  for (const vulnerabilities of documents) {
    for (const v of vulnerabilities) {
      const key = `${v.namespace}\u0000${v.name}`;
      if (!records.has(key)) records.set(key, v);
    }
  }
  const vulnerabilities = [...records.values()].sort((a, b) => compareNames(a.namespace, b.namespace) || compareNames(a.name, b.name));
  // The feed is complete for every RHEL major it covers, also one whose last record was withdrawn:
  // claiming those namespaces lets the runner withdraw what is gone (the namespaces of the records
  // alone would keep a major's last withdrawn record for ever).
  const namespaces = [...new Set([...RHEL_MAJORS.map((major) => `rhel:${major}`), ...vulnerabilities.map((v) => v.namespace)])].sort(
    compareNames,
  );
  return { namespaces, vulnerabilities };
}

/**
 * Reads a tar stream, handing each document entry (`<year>/cve-….json`, a leading `./` allowed)
 * to onDocument, in archive order. Resolves to the number of documents; rejects when the stream
 * is not a whole tar archive or onDocument throws.
 */
export async function readArchive(input: Readable, onDocument: (path: string, body: Buffer) => void): Promise<number> {
  let failure: Error | undefined;
  let documents = 0;
  let ended = false;
  const onEntry = (entry: ReadEntry) => {
    const path = entry.path.replace(/^(\.\/)+/, '');
    if (failure || entry.type !== 'File' || !DOCUMENT_PATH.test(path)) return void entry.resume();
    if (entry.size > MAX_DOCUMENT_BYTES) {
      failure = new Error(`Red Hat VEX: ${path} in the archive is ${entry.size} bytes, over ${MAX_DOCUMENT_BYTES}`);
      return void entry.resume();
    }
    const chunks: Buffer[] = [];
    entry.on('data', (chunk: Buffer) => chunks.push(chunk));
    entry.on('end', () => {
      if (failure) return;
      try {
        onDocument(path, Buffer.concat(chunks));
        documents++;
      } catch (err) {
        failure = err as Error;
      }
    });
  };
  const parser = new Parser({ strict: true, onReadEntry: onEntry });
  parser.on('error', (err: Error) => {
    failure ??= new Error(`Red Hat VEX: the archive is not a tar archive: ${err.message}`, { cause: err });
  });
  parser.on('eof', () => {
    ended = true;
  });
  const closed = new Promise<void>((resolve) => parser.once('close', () => resolve()));
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      if (!parser.write(chunk)) await once(parser, 'drain');
      if (failure) throw failure;
    }
  } catch (err) {
    input.destroy();
    parser.abort(err as Error);
    throw failure ?? err;
  }
  parser.end();
  await closed;
  if (failure) throw failure;
  if (!ended) throw new Error('Red Hat VEX: the archive is cut short');
  return documents;
}
