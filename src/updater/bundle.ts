import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import type { Severity, Vulnerability } from '../model/vulnerability.js';
import type { Pool } from '../store/pool.js';
import { updaterStates } from '../store/updater-state.js';
import type { RunSummary, UpdaterRunner } from './runner.js';
import type { EpssScore, KevEntry, RiskData } from '../model/risk.js';
import type { Enrichment, SourceData } from '../model/source-data.js';
import type { Source } from '../model/updater.js';
import { allEpss, allKev } from '../store/risk.js';

/**
 * Offline bundles move the vulnerability data between an online installation (`tarsier export`)
 * and an air-gapped one (`tarsier import`): gzip-compressed JSON lines. The first line is a header;
 * then, per source, a line naming the source and the namespaces it is complete for, followed by
 * its records as the source gave them (NVD's contribution travels separately, as the nvd source;
 * EPSS scores and KEV entries as theirs).
 */
const FORMAT = 'tarsier-bundle';
const VERSION = 1;

type Line =
  | { kind: 'header'; format: string; version: number; created: string; dataUpdatedAt?: string | null }
  | { kind: 'source'; source: string; namespaces: string[] }
  | { kind: 'vulnerability'; source: string; vulnerability: Vulnerability }
  | { kind: 'enrichment'; source: string; cve: string; nvd: Enrichment['nvd']; severity: Enrichment['severity'] }
  | ({ kind: 'epss'; source: string; date: string } & EpssScore)
  | { kind: 'kev'; source: string; entry: KevEntry };

const SELECT_SOURCE_NAMESPACES = `
  SELECT DISTINCT n.name FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.updater = $1 AND v.deleted_at IS NULL ORDER BY n.name`;
/** A source's live records with the severity and metadata the source gave (NVD's part removed). */
const SELECT_SOURCE_RECORDS = `
  SELECT v.name, v.description, v.link, coalesce(v.source_severity, v.severity) AS severity, v.metadata - 'NVD' AS metadata, v.cves,
         coalesce((SELECT json_agg(json_build_object('feature', f.name, 'version', fi.fixed_version, 'state', fi.fix_state) ORDER BY f.name)
                     FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id WHERE fi.vulnerability_id = v.id), '[]') AS fixed_in
  FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.updater = $1 AND n.name = $2 AND v.deleted_at IS NULL ORDER BY v.name`;
const SELECT_ENRICHMENT = 'SELECT cve, nvd, severity FROM nvd_enrichment ORDER BY cve';

async function* lines(pool: Pool, sources: readonly Source[]): AsyncGenerator<string> {
  const line = (l: Line) => `${JSON.stringify(l)}\n`;
  // A source that never ran here is left out: imported, it would count as run, and its first real
  // run would then notify every record as a change instead of loading them quietly.
  const states = (await updaterStates(pool)).filter((s) => s.lastSuccessAt !== null && sources.some((source) => source.name === s.name));
  const ran = new Set(states.map((s) => s.name));
  // How fresh the data is (the last successful update of any source), for whoever reads the bundle later (tarsier scan --db).
  const updated = states.reduce<Date | null>(
    (latest, s) => (latest === null || s.lastSuccessAt! > latest ? s.lastSuccessAt : latest),
    null,
  );
  yield line({
    kind: 'header',
    format: FORMAT,
    version: VERSION,
    created: new Date().toISOString(),
    dataUpdatedAt: updated?.toISOString() ?? null,
  });
  for (const source of sources) {
    if (!ran.has(source.name)) continue;
    if (source.kind === 'risk') {
      yield line({ kind: 'source', source: source.name, namespaces: [] });
      if (source.name === 'epss') for await (const s of allEpss(pool)) yield line({ kind: 'epss', source: source.name, ...s });
      else for (const entry of await allKev(pool)) yield line({ kind: 'kev', source: source.name, entry });
      continue;
    }
    if (source.kind === 'enrichment') {
      yield line({ kind: 'source', source: source.name, namespaces: [] });
      const { rows } = await pool.query<{ cve: string; nvd: Enrichment['nvd']; severity: Enrichment['severity'] }>(SELECT_ENRICHMENT);
      for (const r of rows) yield line({ kind: 'enrichment', source: source.name, cve: r.cve, nvd: r.nvd, severity: r.severity });
      continue;
    }
    const namespaces = (await pool.query<{ name: string }>(SELECT_SOURCE_NAMESPACES, [source.name])).rows.map((r) => r.name);
    yield line({ kind: 'source', source: source.name, namespaces });
    for (const namespace of namespaces) {
      const { rows } = await pool.query<{
        name: string;
        description: string;
        link: string;
        severity: Severity;
        metadata: Record<string, unknown> | null;
        fixed_in: Vulnerability['fixedIn'];
        cves: string[];
      }>(SELECT_SOURCE_RECORDS, [source.name, namespace]);
      for (const r of rows) {
        const metadata = r.metadata && Object.keys(r.metadata).length > 0 ? r.metadata : null;
        yield line({
          kind: 'vulnerability',
          source: source.name,
          vulnerability: {
            namespace,
            name: r.name,
            description: r.description,
            link: r.link,
            severity: r.severity,
            metadata,
            fixedIn: r.fixed_in,
            ...(r.cves.length > 0 ? { cves: r.cves } : {}),
          },
        });
      }
    }
  }
}

/** Writes every source's live data (and NVD's) to file. */
export async function exportBundle(pool: Pool, sources: readonly Source[], file: string): Promise<void> {
  await pipeline(Readable.from(lines(pool, sources)), createGzip(), createWriteStream(file));
}

/** Reads a bundle and writes each source's data, namespaces whole, as a run of that source would. */
/** When the bundle's data was last brought up to date where it was exported (else when it was exported). */
export async function bundleDataTime(file: string): Promise<Date> {
  const reader = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Infinity });
  try {
    for await (const text of reader) {
      const line = JSON.parse(text) as Line;
      if (line.kind !== 'header' || line.format !== FORMAT) break;
      return new Date(line.dataUpdatedAt ?? line.created);
    }
  } catch {
    // not gzip JSON lines: said below
  } finally {
    reader.close();
  }
  throw new Error(`${file} is not a Tarsier bundle (version ${VERSION})`);
}

export async function importBundle(runner: UpdaterRunner, sources: readonly Source[], file: string): Promise<RunSummary[]> {
  const bySource = new Map<
    string,
    {
      namespaces: string[];
      vulnerabilities: Vulnerability[];
      enrichment: Map<string, Enrichment>;
      epss: Array<EpssScore & { date: string }>;
      kev: KevEntry[];
    }
  >();
  const reader = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Infinity });
  let first = true;
  for await (const text of reader) {
    if (text.trim() === '') continue;
    const line = JSON.parse(text) as Line;
    if (first) {
      if (line.kind !== 'header' || line.format !== FORMAT || line.version !== VERSION) {
        throw new Error(`${file} is not a Tarsier bundle (version ${VERSION})`);
      }
      first = false;
      continue;
    }
    if (line.kind === 'source') {
      bySource.set(line.source, { namespaces: line.namespaces, vulnerabilities: [], enrichment: new Map(), epss: [], kev: [] });
    } else if (line.kind === 'epss')
      bySource.get(line.source)?.epss.push({ cve: line.cve, score: line.score, percentile: line.percentile, date: line.date });
    else if (line.kind === 'kev') bySource.get(line.source)?.kev.push(line.entry);
    else if (line.kind === 'vulnerability') bySource.get(line.source)?.vulnerabilities.push(line.vulnerability);
    else if (line.kind === 'enrichment') bySource.get(line.source)?.enrichment.set(line.cve, { nvd: line.nvd, severity: line.severity });
  }
  if (first) throw new Error(`${file} is empty`);
  const summaries: RunSummary[] = [];
  // In the sources' own order: NVD's data lands after the vulnerabilities it enriches.
  for (const source of sources) {
    const data = bySource.get(source.name);
    if (!data) continue;
    const payload: SourceData | Map<string, Enrichment> | RiskData =
      source.kind === 'enrichment'
        ? data.enrichment
        : source.kind === 'risk'
          ? riskData(source.name, data)
          : { namespaces: data.namespaces, vulnerabilities: data.vulnerabilities };
    summaries.push(await runner.writeBundle(source, payload));
  }
  return summaries;
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
