import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { vulnerabilityDataTime } from '../coverage.js';
import type { VersionFormatName } from '../model/version-format.js';
import type { Vulnerability } from '../model/vulnerability.js';
import { API_WRITER } from '../store/coverage.js';
import { allEnrichment, namespacesWrittenBy, recordsWrittenBy } from '../store/exports.js';
import type { Pool } from '../store/pool.js';
import { updaterStates } from '../store/updater-state.js';
import type { ApiNamespaceData, RunSummary, UpdaterRunner } from './runner.js';
import type { EpssScore, KevEntry, RiskData } from '../model/risk.js';
import type { Enrichment } from '../model/source-data.js';
import type { Source } from '../model/updater.js';
import { allEpss, allKev } from '../store/risk.js';

/**
 * Offline bundles move the vulnerability data between an online installation (`tarsier export`)
 * and an air-gapped one (`tarsier import`): gzip-compressed JSON lines. The first line is a header;
 * then, per source, a line naming the source, the namespaces it is complete for and when its data
 * was last current, followed by its records as the source gave them (NVD's contribution travels
 * separately, as the nvd source; EPSS scores and KEV entries as theirs); last, the records written
 * through the API (source `api`), as they are, each with the time it was written.
 * Version 1 bundles (no data times, no API records) are read too.
 */
const FORMAT = 'tarsier-bundle';
const VERSION = 2;
const READABLE_VERSIONS: readonly number[] = [1, 2];

type Line =
  | { kind: 'header'; format: string; version: number; created: string; dataUpdatedAt?: string | null }
  | { kind: 'source'; source: string; namespaces: string[]; updatedAt?: string; formats?: Record<string, VersionFormatName> }
  | { kind: 'vulnerability'; source: string; vulnerability: Vulnerability; writtenAt?: string }
  | { kind: 'enrichment'; source: string; cve: string; nvd: Enrichment['nvd']; severity: Enrichment['severity'] }
  | ({ kind: 'epss'; source: string; date: string } & EpssScore)
  | { kind: 'kev'; source: string; entry: KevEntry };

async function* lines(pool: Pool, sources: readonly Source[]): AsyncGenerator<string> {
  const line = (l: Line) => `${JSON.stringify(l)}\n`;
  // A source that never ran here is left out: imported, it would count as run, and its first real
  // run would then notify every record as a change instead of loading them quietly.
  const dataTimes = new Map(
    (await updaterStates(pool)).flatMap((s) => (s.dataUpdatedAt !== null ? [[s.name, s.dataUpdatedAt] as const] : [])),
  );
  // How fresh the data is (the last successful update of any vulnerability source), for whoever reads the bundle later.
  const updated = await vulnerabilityDataTime(pool);
  yield line({
    kind: 'header',
    format: FORMAT,
    version: VERSION,
    created: new Date().toISOString(),
    dataUpdatedAt: updated?.toISOString() ?? null,
  });
  for (const source of sources) {
    const updatedAt = dataTimes.get(source.name)?.toISOString();
    if (updatedAt === undefined) continue;
    if (source.kind === 'risk') {
      yield line({ kind: 'source', source: source.name, namespaces: [], updatedAt });
      if (source.name === 'epss') for await (const s of allEpss(pool)) yield line({ kind: 'epss', source: source.name, ...s });
      else for (const entry of await allKev(pool)) yield line({ kind: 'kev', source: source.name, entry });
      continue;
    }
    if (source.kind === 'enrichment') {
      yield line({ kind: 'source', source: source.name, namespaces: [], updatedAt });
      for (const { cve, nvd, severity } of await allEnrichment(pool))
        yield line({ kind: 'enrichment', source: source.name, cve, nvd, severity });
      continue;
    }
    const namespaces = (await namespacesWrittenBy(pool, source.name)).map((n) => n.name);
    yield line({ kind: 'source', source: source.name, namespaces, updatedAt });
    for (const namespace of namespaces) {
      for await (const { vulnerability } of recordsWrittenBy(pool, source.name, namespace))
        yield line({ kind: 'vulnerability', source: source.name, vulnerability });
    }
  }
  // Records written (or edited) through the API belong to no source: they travel as they are.
  // They may be of namespaces no distribution names, created with a version format by the API.
  const apiNamespaces = await namespacesWrittenBy(pool, null);
  if (apiNamespaces.length === 0) return;
  yield line({
    kind: 'source',
    source: API_WRITER,
    namespaces: apiNamespaces.map((n) => n.name),
    formats: Object.fromEntries(apiNamespaces.map((n) => [n.name, n.format])),
  });
  for (const { name: namespace } of apiNamespaces) {
    for await (const { vulnerability, writtenAt } of recordsWrittenBy(pool, null, namespace))
      yield line({ kind: 'vulnerability', source: API_WRITER, vulnerability, writtenAt: writtenAt.toISOString() });
  }
}

/** Writes every source's live data (and NVD's) to file. */
export async function exportBundle(pool: Pool, sources: readonly Source[], file: string): Promise<void> {
  await pipeline(Readable.from(lines(pool, sources)), createGzip(), createWriteStream(file));
}

/** The header of a bundle file, checked. */
async function readHeader(file: string): Promise<Extract<Line, { kind: 'header' }>> {
  const reader = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Infinity });
  try {
    for await (const text of reader) {
      if (text.trim() === '') continue;
      const line = JSON.parse(text) as Line;
      if (line.kind === 'header' && line.format === FORMAT && READABLE_VERSIONS.includes(line.version)) return line;
      break;
    }
  } catch {
    // not gzip JSON lines: said below
  } finally {
    reader.close();
  }
  throw new Error(`${file} is not a Tarsier bundle (versions ${READABLE_VERSIONS.join(', ')})`);
}

/** Throws, saying why, unless file is a bundle this version reads. */
export async function checkBundle(file: string): Promise<void> {
  await readHeader(file);
}

interface SourceSection {
  namespaces: string[];
  formats: Record<string, VersionFormatName>;
  /** When the source's data was last current where it was exported. */
  updatedAt: Date;
  /** Records written through the API (a source's are written as they are read). */
  vulnerabilities: Vulnerability[];
  /** When each of vulnerabilities was written. */
  writtenAt: Date[];
  enrichment: Map<string, Enrichment>;
  epss: Array<EpssScore & { date: string }>;
  kev: KevEntry[];
}

/**
 * Reads a bundle and writes each source's data, namespaces whole, as a run of that source would,
 * recording for each the time its data was current where it was exported; then the records written
 * through the API there, as API records. A vulnerability source's records are written as they are
 * read, in batches (OSV's npm records alone are hundreds of thousands); NVD's and the risk
 * sources' data is written after all of them, in the sources' order, as a run writes it.
 */
export async function importBundle(runner: UpdaterRunner, sources: readonly Source[], file: string): Promise<RunSummary[]> {
  const header = await readHeader(file);
  // Version 1 bundles name no time per source: the header's is the best known.
  const bundleTime = new Date(header.dataUpdatedAt ?? header.created);
  const bySource = new Map<string, SourceSection>();
  const summaries: RunSummary[] = [];
  const bundleFile = createReadStream(file);
  const reader = createInterface({ input: bundleFile.pipe(createGunzip()), crlfDelay: Infinity });
  const lines = bundleLines(reader)[Symbol.asyncIterator]();
  // Closed on every way out, a failed write included: the file is not held open after an error.
  try {
    let next = await lines.next();
    while (!next.done) {
      const line = next.value;
      next = await lines.next();
      if (line.kind === 'source') {
        const updatedAt = line.updatedAt !== undefined ? new Date(line.updatedAt) : bundleTime;
        const source = sources.find((s) => s.name === line.source);
        if (source?.kind === 'vulnerabilities') {
          // The section's records, read as the runner writes them; `next` is left at the line after them.
          const records = async function* (): AsyncGenerator<Vulnerability> {
            for (; !next.done && next.value.kind === 'vulnerability' && next.value.source === line.source; next = await lines.next())
              yield next.value.vulnerability;
          };
          summaries.push(await runner.writeBundle(source, { namespaces: line.namespaces, records: records() }, updatedAt));
          continue;
        }
        bySource.set(line.source, {
          namespaces: line.namespaces,
          formats: line.formats ?? {},
          updatedAt,
          vulnerabilities: [],
          writtenAt: [],
          enrichment: new Map(),
          epss: [],
          kev: [],
        });
      } else if (line.kind === 'epss')
        bySource.get(line.source)?.epss.push({ cve: line.cve, score: line.score, percentile: line.percentile, date: line.date });
      else if (line.kind === 'kev') bySource.get(line.source)?.kev.push(line.entry);
      else if (line.kind === 'vulnerability') {
        const section = bySource.get(line.source);
        section?.vulnerabilities.push(line.vulnerability);
        section?.writtenAt.push(line.writtenAt !== undefined ? new Date(line.writtenAt) : section.updatedAt);
      } else if (line.kind === 'enrichment')
        bySource.get(line.source)?.enrichment.set(line.cve, { nvd: line.nvd, severity: line.severity });
    }
  } finally {
    await lines.return(undefined);
    bundleFile.destroy();
  }
  // In the sources' own order: NVD's data lands after the vulnerabilities it enriches.
  for (const source of sources) {
    const data = bySource.get(source.name);
    if (!data || source.kind === 'vulnerabilities') continue;
    const payload = source.kind === 'enrichment' ? data.enrichment : riskData(source.name, data);
    summaries.push(await runner.writeBundle(source, payload, data.updatedAt));
  }
  const api = bySource.get(API_WRITER);
  if (api) summaries.push(await runner.writeApiBundle(apiGroups(api)));
  return summaries;
}

/** A bundle's lines after its header, parsed, blank ones left out. */
async function* bundleLines(reader: AsyncIterable<string>): AsyncGenerator<Line> {
  for await (const text of reader) if (text.trim() !== '') yield JSON.parse(text) as Line;
}

/** The API's records by namespace, every namespace the bundle lists (one without records: none are left there). */
function apiGroups(section: SourceSection): Map<string, ApiNamespaceData> {
  const groups = new Map<string, ApiNamespaceData>();
  for (const namespace of section.namespaces) {
    const format = section.formats[namespace];
    if (format === undefined) throw new Error(`the bundle names no version format for the API's namespace ${namespace}`);
    groups.set(namespace, { format, desired: [] });
  }
  section.vulnerabilities.forEach((v, i) => {
    const group = groups.get(v.namespace);
    if (!group) throw new Error(`the bundle's API record ${v.name} is of namespace ${v.namespace}, which its api line does not list`);
    group.desired.push({ ...v, sourceSeverity: null, writtenAt: section.writtenAt[i]! });
  });
  return groups;
}

/** A risk source's data as a bundle carries it (EPSS rows share the day they were scored). */
function riskData(source: string, data: { epss: Array<EpssScore & { date: string }>; kev: KevEntry[] }): RiskData {
  if (source === 'kev') return { kind: 'kev', catalogVersion: '', entries: data.kev };
  const scores = data.epss;
  return {
    kind: 'epss',
    date: scores[0]?.date ?? new Date().toISOString().slice(0, 10),
    modelVersion: '',
    scores: (async function* () {
      for (const { date: _date, ...score } of scores) yield score;
    })(),
  };
}
