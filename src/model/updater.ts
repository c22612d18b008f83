import type { Readable } from 'node:stream';
import type { RiskData } from './risk.js';
import type { Enrichment, SourceData } from './source-data.js';
import type { Vulnerability } from './vulnerability.js';

/**
 * An upstream source is made of independent parts, each complete for the namespaces it covers:
 * the one Debian tracker document, one Alpine branch (main + community), one Ubuntu release's
 * OVAL file, one RHEL major... A part is downloaded and parsed only when one of its files
 * changed since the last successful run (ETag / Last-Modified / content hash).
 */
export interface SourcePart<T> {
  /** Stable name of the part within its source (fingerprints are kept per part). */
  readonly key: string;
  /** The files of the part, all needed to parse it. */
  readonly urls: readonly string[];
  /**
   * Files that may be absent upstream (a retired release, a branch without a community repo): a
   * 404 drops the file instead of failing the run.
   */
  readonly optional?: boolean;
  /** Parses the part's files (decompressed streams, in the order of urls; absent optional files are left out). */
  parse(files: readonly Readable[]): Promise<T>;
}

/**
 * A part too large to hold parsed (OSV's npm archive: hundreds of thousands of records): its
 * records are read one at a time from its files and written in batches, each in its own
 * transaction, and what it no longer lists is withdrawn once all are read. Readers may see a
 * namespace half-way through a run (each record is whole), never a record missing that upstream
 * still lists.
 */
export interface StreamedPart {
  readonly key: string;
  readonly urls: readonly string[];
  readonly optional?: boolean;
  /** The namespaces the part is complete for: every record of theirs is in it, and only those. */
  readonly namespaces: readonly string[];
  /** The records, read from the part's files (paths in the order of urls: a file, or a directory for a local one). */
  records(paths: readonly string[]): AsyncIterable<Vulnerability>;
}

/** What a source's configuration may choose besides its location. */
export interface SourceOptions {
  /** OSV names of the application ecosystems to read (`npm`, `PyPI`); undefined: all the catalog has. */
  readonly ecosystems?: readonly string[];
}

/** A source of vulnerabilities (Debian, Alpine, ...). */
export interface Updater {
  readonly name: string;
  readonly kind: 'vulnerabilities';
  /** The parts to fetch, given the configured location; may read an index (a mirror list, a directory listing). */
  parts(
    base: string,
    fetchText: (url: string) => Promise<string>,
    options: SourceOptions,
  ): Promise<ReadonlyArray<SourcePart<SourceData> | StreamedPart>>;
}

/** A source of enrichment (NVD): CVSS data applied to other sources' vulnerabilities. */
export interface Enricher {
  readonly name: string;
  readonly kind: 'enrichment';
  parts(base: string, fetchText: (url: string) => Promise<string>): Promise<ReadonlyArray<SourcePart<Map<string, Enrichment>>>>;
}

/** A source of risk context (EPSS, KEV): per-CVE rows that replace its table whole at each change. */
export interface RiskSource {
  readonly name: string;
  readonly kind: 'risk';
  parts(base: string, fetchText: (url: string) => Promise<string>): Promise<ReadonlyArray<SourcePart<RiskData>>>;
}

export type Source = Updater | Enricher | RiskSource;

/** A whole (small) feed file in memory, for formats parsed in one piece. */
export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** base with exactly one trailing slash, so relative file names can be appended. */
export function directory(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}
