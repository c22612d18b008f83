import type pg from 'pg';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { decompressed } from '../decompress.js';
import { isVersionFormatName, knownNamespaceFormat } from '../ecosystems/index.js';
import { MATCHING } from '../ecosystems/matching.js';
import { TarsierError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import { canonicalJson, cveIdsOf, type Vulnerability } from '../model/vulnerability.js';
import { loadEnrichment, staleAdvisoryCandidates, staleEnrichment, storeEnrichment } from '../store/enrichment.js';
import { insertRiskNotifications } from '../store/notifications.js';
import { replaceEpss, replaceKev, riskRecords } from '../store/risk.js';
import { API_WRITER } from '../store/coverage.js';
import { describeOwner, leaseHolder, leaseOwner, withLease } from '../store/locks.js';
import { withTransaction, type Pool } from '../store/pool.js';
import { recordFailure, recordSuccess, updaterState, type UpdaterState } from '../store/updater-state.js';
import { lockNamespace } from '../store/features.js';
import {
  applyNamespaceUpdate,
  liveNames,
  liveVulnerabilities,
  type DesiredVulnerability,
  type LiveVulnerability,
  type UpdateCounts,
} from '../store/updates.js';
import { ensureNamespace, findNamespace, type NamespaceRow } from '../store/vulnerabilities.js';
import { Downloader, type Validators } from './download.js';
import type { RiskData } from '../model/risk.js';
import { enrichmentFor, type Enrichment, type SourceData } from '../model/source-data.js';
import type { Source, SourceOptions, SourcePart, StreamedPart } from '../model/updater.js';
import type { VersionFormatName } from '../model/version-format.js';

export interface RunSummary {
  readonly source: string;
  /**
   * updated: data written; unchanged: nothing new upstream; busy: another replica is running it;
   * not-due: another replica ran it since the caller looked; failed: see error.
   */
  readonly status: 'updated' | 'unchanged' | 'busy' | 'not-due' | 'failed';
  /** Vulnerabilities (or NVD entries) the source holds after the run. */
  readonly records: number;
  /** Vulnerabilities inserted, replaced or deleted. */
  readonly changed: number;
  readonly durationMs: number;
  readonly error?: string;
}

export interface RunnerSettings {
  readonly intervalMs: number;
  readonly sources: Readonly<Record<string, { readonly url: string } & SourceOptions>>;
  /** Per request, headers to last byte. */
  readonly downloadTimeoutMs: number;
  /** A KEV change notifies the vulnerabilities it concerns (notifier.onenrichment). */
  readonly notifyRiskChanges: boolean;
}

/** Validators of every file of every part: { partKey: { url: validators } }. */
type Fingerprint = Record<string, Record<string, Validators>>;

const LEASE_TTL_MS = 60_000;
/** First retry after a failure; doubles per consecutive failure, up to the interval. */
const RETRY_BASE_MS = 60_000;
/** Refuse to delete more than this share of a namespace's vulnerabilities in one run: the feed is more likely broken than the data gone. */
const MAX_WITHDRAWN_SHARE = 0.5;
const MIN_WITHDRAWALS_CHECKED = 100;
/**
 * Namespaces written at once. One at a time, this process and PostgreSQL took turns (the process
 * sat idle 57 % of a Debian import waiting for statements): with two, each prepares or writes one
 * namespace while the other side works on the other, and PostgreSQL writes on two cores.
 */
const PARALLEL_NAMESPACES = 2;

/** Records per namespace written in one transaction by a streamed part. */
const STREAMED_BATCH = 1_000;

const feedError = (detail: string): TarsierError => new TarsierError('unprocessable', `the feed is corrupt: ${detail}`);

/**
 * NVD's data on a vulnerability (its CVE's, or the CVEs an advisory lists: enrichmentFor): its
 * CVSS metadata, and its severity where the source gave none.
 */
export function enrich(v: Vulnerability, nvd: ReadonlyMap<string, Enrichment>): DesiredVulnerability {
  const e = enrichmentFor(v, nvd);
  if (!e) return { ...v, sourceSeverity: v.severity };
  return {
    ...v,
    sourceSeverity: v.severity,
    severity: v.severity === 'Unknown' ? e.severity : v.severity,
    metadata: { ...(v.metadata ?? {}), NVD: e.nvd },
  };
}

/** A source's records read one at a time (a bundle's section), complete for its namespaces. */
export interface StreamedRecords {
  readonly namespaces: readonly string[];
  readonly records: AsyncIterable<Vulnerability>;
}

/** A namespace's records written through the API, as a bundle carries them. */
export interface ApiNamespaceData {
  /** The namespace's version format (a known distribution's own wins, as for API writes). */
  format: VersionFormatName;
  desired: DesiredVulnerability[];
}

/**
 * Runs sources: each under a lease (one replica at a time), fetching only the parts whose files
 * changed, writing each namespace in one transaction, and recording the outcome for the
 * scheduler, the status route and the metrics. A failure keeps the last good data.
 */
export class UpdaterRunner {
  readonly #pool: Pool;
  readonly #settings: RunnerSettings;
  readonly #log: Logger;
  readonly #metrics: Metrics | undefined;
  readonly #owner = leaseOwner('updater');

  constructor(deps: { pool: Pool; settings: RunnerSettings; log: Logger; metrics?: Metrics }) {
    this.#pool = deps.pool;
    this.#settings = deps.settings;
    this.#log = deps.log.child({ component: 'updater' });
    this.#metrics = deps.metrics;
  }

  /**
   * Runs one source now if no other replica is running it. onlyIfDue: only if its next run time
   * has come. base: read the source from this location instead of the configured one (a file://
   * directory laid out as upstream: how `tarsier import` loads a source's native files).
   */
  async run(source: Source, options: { onlyIfDue?: boolean; base?: string } = {}): Promise<RunSummary> {
    const lease = `updater/${source.name}`;
    const terms = {
      owner: this.#owner,
      ttlMs: LEASE_TTL_MS,
      onRenewalFailure: (err: unknown) => this.#log.warn({ err, source: source.name }, 'updater lease renewal failed'),
    };
    const leased = await withLease(this.#pool, lease, terms, async (): Promise<RunSummary> => {
      const state = await updaterState(this.#pool, source.name);
      // Another replica may have run it while this one waited for the lease.
      if (options.onlyIfDue && state?.nextRunAt && state.nextRunAt.getTime() > Date.now()) {
        return { source: source.name, status: 'not-due', records: state.recordCount, changed: 0, durationMs: 0 };
      }
      return this.#runLeased(source, {
        stored: options.base ? null : (state?.fingerprint ?? null),
        firstRun: isQuietRun(state),
        failures: state?.consecutiveFailures ?? 0,
        base: options.base ?? this.#settings.sources[source.name]?.url,
      });
    });
    if (leased.held) return leased.value;
    const holder = await leaseHolder(this.#pool, lease);
    const error = holder
      ? `another process is running it (${describeOwner(holder.owner)}); its lease ends at ${holder.until.toISOString()} unless renewed`
      : 'another process was running it';
    return { source: source.name, status: 'busy', records: 0, changed: 0, durationMs: 0, error };
  }

  async #runLeased(
    source: Source,
    run: { stored: string | null; firstRun: boolean; failures: number; base: string | undefined },
  ): Promise<RunSummary> {
    const { stored, firstRun, failures, base } = run;
    const started = performance.now();
    const fingerprint: Fingerprint = stored ? (JSON.parse(stored) as Fingerprint) : {};
    const workDir = await mkdtemp(join(tmpdir(), `tarsier-${source.name}-`));
    const downloader = new Downloader(workDir, this.#settings.downloadTimeoutMs);
    let changed = 0;
    let updatedParts = 0;
    try {
      if (!base) throw new Error(`no location configured for source ${source.name} (updater.sources.${source.name}.url)`);
      const parts = await source.parts(base, (url) => downloader.text(url), this.#settings.sources[source.name] ?? {});
      for (const part of parts) {
        const files = await this.#download(downloader, part, fingerprint[part.key]);
        if (!files) continue;
        try {
          if ('records' in part) changed += await this.#writeStreamed(source.name, part.namespaces, part.records(files.paths), !firstRun);
          else {
            const streams = await Promise.all(files.paths.map((p) => decompressed(createReadStream(p), feedError)));
            changed += await this.#apply(source, part, streams, firstRun);
          }
        } finally {
          await Promise.all(files.temporary.map((p) => rm(p, { force: true })));
        }
        fingerprint[part.key] = files.validators;
        updatedParts++;
      }
      const records = await this.#records(source);
      const durationMs = performance.now() - started;
      await recordSuccess(this.#pool, source.name, {
        fingerprint: JSON.stringify(fingerprint),
        records,
        changed,
        durationMs,
        nextRunInMs: this.#nextRunIn(),
      });
      this.#observe(source.name, 'success', durationMs, records);
      const status = updatedParts > 0 ? 'updated' : 'unchanged';
      this.#log.info({ source: source.name, status, records, changed, ms: Math.round(durationMs) }, 'updater run done');
      return { source: source.name, status, records, changed, durationMs };
    } catch (err) {
      const durationMs = performance.now() - started;
      const message = (err as Error).message;
      // Parts written before the failure stay written (and keep their new fingerprint).
      await recordFailure(this.#pool, source.name, {
        fingerprint: Object.keys(fingerprint).length > 0 ? JSON.stringify(fingerprint) : null,
        error: message,
        durationMs,
        nextRunInMs: Math.min(this.#settings.intervalMs || Number.MAX_SAFE_INTEGER, RETRY_BASE_MS * 2 ** failures),
      }).catch((e: unknown) => this.#log.error({ err: e }, 'recording an updater failure failed'));
      this.#observe(source.name, 'failure', durationMs);
      this.#log.warn({ source: source.name, err }, 'updater run failed');
      return { source: source.name, status: 'failed', records: 0, changed, durationMs, error: message };
    } finally {
      await downloader.close();
      await rm(workDir, { recursive: true, force: true });
    }
  }

  /**
   * Writes data a bundle carries for a source, as a run of that source would (same versioning,
   * notifications unless it is the source's first data, withdrawals), and records the run.
   */
  async writeBundle(
    source: Source,
    data: StreamedRecords | Map<string, Enrichment> | RiskData,
    /** When the data was last current where the bundle was exported. */
    dataUpdatedAt: Date,
  ): Promise<RunSummary> {
    const started = performance.now();
    const firstRun = isQuietRun(await updaterState(this.#pool, source.name));
    const changed =
      data instanceof Map
        ? await this.#applyEnrichment(source.name, data, firstRun)
        : 'kind' in data
          ? await this.#applyRisk(data, firstRun)
          : await this.#writeStreamed(source.name, data.namespaces, data.records, !firstRun);
    const records = await this.#records(source);
    const durationMs = performance.now() - started;
    // An imported source keeps no upstream fingerprint: the next online run downloads it whole.
    await recordSuccess(this.#pool, source.name, {
      fingerprint: '{}',
      records,
      changed,
      durationMs,
      nextRunInMs: this.#nextRunIn(),
      dataUpdatedAt,
    });
    return { source: source.name, status: changed > 0 ? 'updated' : 'unchanged', records, changed, durationMs };
  }

  /**
   * Writes the records a bundle carries that were written through the API where it was exported:
   * as API writes here (no updater), as they were (their enrichment included, none added), with the
   * time each was written, each namespace whole (this installation's API records missing from it are
   * deleted). A namespace that had no API records here is loaded without notifications, as a
   * source's first data is.
   */
  async writeApiBundle(groups: ReadonlyMap<string, ApiNamespaceData>): Promise<RunSummary> {
    const started = performance.now();
    let changed = 0;
    let records = 0;
    for (const [namespaceName, { format: bundleFormat, desired }] of groups) {
      const format = knownNamespaceFormat(namespaceName) ?? bundleFormat;
      // The database takes any name: the format catalog decides which exist, as for the API's writes.
      if (!isVersionFormatName(format))
        throw new Error(`the bundle's namespace ${namespaceName} has version format ${format}, which Tarsier does not know`);
      const counts = await this.#replaceNamespace(namespaceName, format, null, desired, {
        notify: (live) => [...live.values()].some((v) => v.updater === null),
        withdrawMissing: true,
      });
      changed += counts.inserted + counts.replaced + counts.deleted;
      records += desired.length;
    }
    const durationMs = performance.now() - started;
    return { source: API_WRITER, status: changed > 0 ? 'updated' : 'unchanged', records, changed, durationMs };
  }

  /** The part's files when any changed since `previous` (all of them: a part is parsed whole), else undefined. */
  async #download(
    downloader: Downloader,
    part: SourcePart<unknown> | StreamedPart,
    previous: Record<string, Validators> | undefined,
  ): Promise<{ paths: string[]; temporary: string[]; validators: Record<string, Validators> } | undefined> {
    const results = await Promise.all(part.urls.map((url) => downloader.download(url, previous?.[url])));
    const missing = part.urls.filter((_, i) => results[i]!.status === 'missing');
    if (missing.length > 0 && !part.optional) throw new Error(`${missing.join(', ')} does not exist upstream`);
    const present = part.urls.filter((_, i) => results[i]!.status !== 'missing');
    const changedFiles = results.some((r) => r.status === 'downloaded');
    const goneFiles = Object.keys(previous ?? {}).some((url) => !present.includes(url));
    if (present.length === 0 || (!changedFiles && !goneFiles)) return undefined;
    const paths: string[] = [];
    const temporary: string[] = [];
    const validators: Record<string, Validators> = {};
    for (const [i, url] of part.urls.entries()) {
      let result = results[i]!;
      if (result.status === 'missing') continue;
      // An unchanged file of a changed part: fetch it again, unconditionally, to parse the part whole.
      if (result.status === 'unchanged') result = await downloader.download(url);
      if (result.status !== 'downloaded') throw new Error(`${url} vanished while it was being downloaded`);
      paths.push(result.path);
      if (result.temporary) temporary.push(result.path);
      validators[url] = result.validators;
    }
    return { paths, temporary, validators };
  }

  /** Parses a part and writes it; the number of vulnerabilities changed. */
  async #apply(source: Source, part: SourcePart<unknown>, streams: Readable[], firstRun: boolean): Promise<number> {
    if (source.kind === 'risk') return this.#applyRisk(await (part as SourcePart<RiskData>).parse(streams), firstRun);
    if (source.kind === 'enrichment') {
      const data = await (part as SourcePart<Map<string, Enrichment>>).parse(streams);
      return this.#applyEnrichment(source.name, data, firstRun);
    }
    // The parsed array is never held here: once grouped, each namespace's records are freed as they are written.
    return this.#writeGroups(source.name, groupByNamespace(await (part as SourcePart<SourceData>).parse(streams)), !firstRun);
  }

  /**
   * Writes a source's data namespace by namespace, PARALLEL_NAMESPACES at a time, each in its own
   * transaction; each namespace's records are let go once written, so memory peaks at the parsed
   * data plus the statements of the namespaces in flight. After a failure no further namespace is
   * started, and the ones in flight finish before the failure is reported.
   */
  async #writeGroups(updater: string, groups: Map<string, Vulnerability[]>, notify: boolean): Promise<number> {
    let changed = 0;
    let failure: { err: unknown } | undefined;
    const pending = [...groups.keys()];
    const writer = async () => {
      for (let namespace = pending.shift(); namespace !== undefined && !failure; namespace = pending.shift()) {
        const desired = groups.get(namespace)!;
        groups.delete(namespace);
        try {
          const counts = await this.#writeNamespace(updater, namespace, desired, { notify, withdrawMissing: true });
          changed += counts.inserted + counts.replaced + counts.deleted;
        } catch (err) {
          failure ??= { err };
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL_NAMESPACES }, writer));
    if (failure) throw failure.err;
    return changed;
  }

  /**
   * Writes records that arrive one at a time (a streamed part, a bundle's section), complete for
   * `namespaces`: in batches of STREAMED_BATCH per namespace, each batch in its own transaction
   * while the next is read (so memory holds two batches whatever their number), then, for each
   * namespace, withdraws what the records no longer list.
   */
  async #writeStreamed(
    updater: string,
    namespaces: readonly string[],
    records: AsyncIterable<Vulnerability>,
    notify: boolean,
  ): Promise<number> {
    const seen = new Map<string, Set<string>>(namespaces.map((ns) => [ns, new Set<string>()]));
    const batches = new Map<string, Vulnerability[]>();
    let changed = 0;
    let writing: Promise<void> = Promise.resolve();
    const write = (namespace: string, batch: Vulnerability[]) => {
      writing = writing.then(async () => {
        const counts = await this.#writeNamespace(updater, namespace, batch, { notify, withdrawMissing: false });
        changed += counts.inserted + counts.replaced + counts.deleted;
      });
      // A write may fail while the next batch is read, before anything awaits it: handled here (an
      // unhandled rejection would end the process), and thrown where it is awaited below.
      writing.catch(() => undefined);
    };
    try {
      for await (const v of records) {
        const names = seen.get(v.namespace);
        if (!names) throw feedError(`${v.name} is in namespace ${v.namespace}, which the data does not cover`);
        if (names.has(v.name)) throw feedError(`${v.name} appears twice in ${v.namespace}`);
        names.add(v.name);
        const batch = batches.get(v.namespace) ?? [];
        batch.push(v);
        batches.set(v.namespace, batch);
        if (batch.length < STREAMED_BATCH) continue;
        batches.delete(v.namespace);
        // The previous batch is written while this one was read; one waits for the other.
        await writing;
        write(v.namespace, batch);
      }
      for (const [namespace, batch] of batches) write(namespace, batch);
    } finally {
      // A failed read still lets the write in flight finish before the failure is reported.
      await writing.catch(() => undefined);
    }
    await writing;
    for (const [namespace, names] of seen) changed += await this.#withdrawUnlisted(updater, namespace, names, notify);
    return changed;
  }

  /** Deletes this updater's live vulnerabilities of a namespace that are not in `listed` (guarded as a whole write is). */
  async #withdrawUnlisted(updater: string, namespaceName: string, listed: ReadonlySet<string>, notify: boolean): Promise<number> {
    const counts = await this.#replaceNamespace(namespaceName, formatOf(namespaceName), updater, [], {
      notify: () => notify,
      withdrawMissing: true,
      // Only the records to withdraw are read: a large namespace is never held whole.
      live: async (client, namespace) => {
        const owned = await liveNames(client, namespace, updater);
        const unlisted = owned.filter((name) => !listed.has(name));
        guardShare(namespace, owned.length, unlisted.length);
        return liveVulnerabilities(client, namespace, unlisted);
      },
    });
    return counts.deleted;
  }

  async #writeNamespace(
    updater: string,
    namespaceName: string,
    vulnerabilities: readonly Vulnerability[],
    options: { notify: boolean; withdrawMissing: boolean },
  ): Promise<UpdateCounts> {
    const enrichment = await loadEnrichment(this.#pool, [...new Set(vulnerabilities.flatMap(cveIdsOf))]);
    const desired = vulnerabilities.map((v) => enrich(v, enrichment));
    return this.#replaceNamespace(namespaceName, formatOf(namespaceName), updater, desired, {
      notify: () => options.notify,
      withdrawMissing: options.withdrawMissing,
      check: options.withdrawMissing ? (namespace, live) => guardWithdrawals(updater, namespace, live, desired) : undefined,
    });
  }

  /**
   * One writer's records of a namespace (updater null: the API's) written over what is live, in one
   * transaction that holds the namespace exclusively; notify decides, seeing what is live, whether
   * the changes are notified, and check may refuse the write. live reads what the write is
   * compared with (by default the whole namespace, or without withdrawals the names written).
   */
  async #replaceNamespace(
    namespaceName: string,
    format: VersionFormatName,
    updater: string | null,
    desired: readonly DesiredVulnerability[],
    options: {
      notify: (live: ReadonlyMap<string, LiveVulnerability>) => boolean;
      withdrawMissing: boolean;
      check?: ((namespace: NamespaceRow, live: ReadonlyMap<string, LiveVulnerability>) => void) | undefined;
      live?: (client: pg.PoolClient, namespace: NamespaceRow) => Promise<Map<string, LiveVulnerability>>;
    },
  ): Promise<UpdateCounts> {
    return withTransaction(this.#pool, async (client) => {
      const namespace = await ensureNamespace(client, namespaceName, format);
      await lockNamespace(client, namespace.id);
      // Without withdrawals only the names written matter: a batch of a large namespace reads only its own.
      const live = options.live
        ? await options.live(client, namespace)
        : await liveVulnerabilities(client, namespace, options.withdrawMissing ? undefined : desired.map((v) => v.name));
      options.check?.(namespace, live);
      const { withdrawMissing } = options;
      return applyNamespaceUpdate(
        client,
        { namespace, desired, updater, notify: options.notify(live), withdrawMissing, matching: MATCHING },
        live,
      );
    });
  }

  /** Stores NVD's data and re-writes the updater-owned vulnerabilities whose NVD data differs from it. */
  async #applyEnrichment(source: string, data: ReadonlyMap<string, Enrichment>, firstRun: boolean): Promise<number> {
    const changedCves = await withTransaction(this.#pool, (client) => storeEnrichment(client, data));
    // Compared with what the vulnerabilities hold, not only with changedCves: a run interrupted
    // after storing NVD's data is then completed by the next run of the same part.
    const stale = [...(await staleEnrichment(this.#pool, [...data.keys()])), ...(await this.#staleAdvisories([...data.keys()]))];
    const byNamespace = new Map<string, { namespace: string; updater: string; cves: Set<string> }>();
    for (const row of stale) {
      const key = `${row.namespace}\0${row.updater}`;
      const group = byNamespace.get(key) ?? { namespace: row.namespace, updater: row.updater, cves: new Set<string>() };
      group.cves.add(row.name);
      byNamespace.set(key, group);
    }
    let changed = 0;
    for (const { namespace: name, updater, cves } of byNamespace.values()) {
      const namespace = (await findNamespace(this.#pool, name))!;
      changed += await this.#reEnrich(namespace, updater, cves, !firstRun);
    }
    this.#log.info({ source, cves: changedCves.length, vulnerabilities: changed }, 'enrichment applied');
    return changed;
  }

  /**
   * Advisories listing any of these CVEs whose NVD part differs from what NVD's stored data gives
   * them now (compared here: the rule, enrichmentFor, is not SQL).
   */
  async #staleAdvisories(cves: readonly string[]): Promise<Array<{ namespace: string; updater: string; name: string }>> {
    const candidates = await staleAdvisoryCandidates(this.#pool, cves);
    const enrichment = await loadEnrichment(this.#pool, [...new Set(candidates.flatMap((c) => c.cves))]);
    return candidates.filter((c) => {
      const due = enrich({ ...c, description: '', link: '', severity: c.sourceSeverity, metadata: null, fixedIn: [] }, enrichment);
      return canonicalJson(c.nvd) !== canonicalJson(due.metadata?.NVD ?? null) || due.severity !== c.severity;
    });
  }

  /** Replaces a risk-context table (EPSS, KEV) with a source's data; the number of CVEs changed. */
  async #applyRisk(data: RiskData, firstRun: boolean): Promise<number> {
    return withTransaction(this.#pool, async (client) => {
      if (data.kind === 'epss') return replaceEpss(client, data);
      const { changed, notices } = await replaceKev(client, data, { notices: this.#settings.notifyRiskChanges && !firstRun });
      await insertRiskNotifications(client, notices);
      return changed.length;
    });
  }

  async #reEnrich(namespace: NamespaceRow, updater: string, cves: ReadonlySet<string>, notify: boolean): Promise<number> {
    return withTransaction(this.#pool, async (client) => {
      await lockNamespace(client, namespace.id);
      const live = await liveVulnerabilities(client, namespace);
      const targets = [...live.values()].filter((v) => v.updater === updater && cves.has(v.name));
      const enrichment = await loadEnrichment(client, [...new Set(targets.flatMap(cveIdsOf))]);
      const desired = targets.map((v) => {
        const { NVD: _previous, ...sourceMetadata } = v.metadata ?? {};
        const original: Vulnerability = {
          ...v,
          severity: v.sourceSeverity ?? v.severity,
          metadata: Object.keys(sourceMetadata).length > 0 ? sourceMetadata : null,
        };
        return enrich(original, enrichment);
      });
      const counts = await applyNamespaceUpdate(
        client,
        { namespace, desired, updater, notify, withdrawMissing: false, matching: MATCHING },
        live,
      );
      return counts.replaced;
    });
  }

  /** How many vulnerabilities (or NVD entries) the source holds now. */
  async #records(source: Source): Promise<number> {
    if (source.kind === 'risk') return riskRecords(this.#pool, source.name === 'epss' ? 'epss' : 'kev');
    const { rows } =
      source.kind === 'enrichment'
        ? await this.#pool.query<{ n: number }>('SELECT count(*)::int AS n FROM nvd_enrichment')
        : await this.#pool.query<{ n: number }>('SELECT count(*)::int AS n FROM vulnerability WHERE updater = $1 AND deleted_at IS NULL', [
            source.name,
          ]);
    return rows[0]!.n;
  }

  /** The interval with ±10 % jitter, so replicas and sources spread out. */
  #nextRunIn(): number {
    const interval = this.#settings.intervalMs || 24 * 3600_000;
    return Math.round(interval * (0.9 + Math.random() * 0.2));
  }

  #observe(source: string, outcome: 'success' | 'failure', durationMs: number, records?: number): void {
    if (!this.#metrics) return;
    this.#metrics.updaterRuns.inc({ source, outcome });
    this.#metrics.updaterDuration.set({ source }, durationMs / 1000);
    if (outcome === 'success') {
      this.#metrics.updaterLastSuccess.set({ source }, Date.now() / 1000);
      this.#metrics.updaterRecords.set({ source }, records ?? 0);
      this.#metrics.updaterFailing.set({ source }, 0);
    } else {
      this.#metrics.updaterFailing.set({ source }, 1);
    }
  }
}

/** A source's namespace's version format: a namespace of no known distribution or ecosystem is a mistake in the source. */
function formatOf(namespace: string): VersionFormatName {
  const format = knownNamespaceFormat(namespace);
  if (!format) throw new Error(`namespace ${namespace} is of no known distribution`);
  return format;
}

/**
 * Whether a run writes without notifying: a source's first data (its records are not news), or the
 * run after a parser change (a migration set quiet_next_run). The same for online runs and imports.
 */
function isQuietRun(state: UpdaterState | undefined): boolean {
  return state?.lastSuccessAt == null || state.quietNextRun;
}

/** A source's records by namespace; every namespace the data is complete for has a (maybe empty) list. */
function groupByNamespace(data: SourceData): Map<string, Vulnerability[]> {
  const groups = new Map<string, Vulnerability[]>(data.namespaces.map((ns) => [ns, []]));
  for (const v of data.vulnerabilities) groups.get(v.namespace)?.push(v);
  return groups;
}

/** The table `tarsier update` prints: one line per source. */
export function formatSummary(summaries: readonly RunSummary[]): string {
  const rows = [
    ['source', 'status', 'records', 'changed', 'duration', 'error'],
    ...summaries.map((s) => [
      s.source,
      s.status,
      String(s.records),
      String(s.changed),
      `${(s.durationMs / 1000).toFixed(1)}s`,
      s.error ?? '',
    ]),
  ];
  const widths = rows[0]!.map((_, column) => rows.reduce((widest, r) => Math.max(widest, r[column]!.length), 0));
  return (
    rows
      .map((r) =>
        r
          .map((cell, column) => cell.padEnd(widths[column]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** A feed that suddenly lacks most of a namespace is broken, not a mass withdrawal: keep the data. */
function guardWithdrawals(
  updater: string,
  namespace: NamespaceRow,
  live: ReadonlyMap<string, { updater: string | null }>,
  desired: readonly Vulnerability[],
): void {
  const wanted = new Set(desired.map((v) => v.name));
  let owned = 0;
  let missing = 0;
  for (const [name, v] of live) {
    if (v.updater !== updater) continue;
    owned++;
    if (!wanted.has(name)) missing++;
  }
  guardShare(namespace, owned, missing);
}

/** Throws when `missing` of the `owned` vulnerabilities are too many to withdraw at once. */
function guardShare(namespace: NamespaceRow, owned: number, missing: number): void {
  if (missing >= MIN_WITHDRAWALS_CHECKED && missing > owned * MAX_WITHDRAWN_SHARE) {
    throw new Error(
      `the feed lacks ${missing} of the ${owned} vulnerabilities it had in ${namespace.name}; refusing to delete them (the feed is more likely incomplete)`,
    );
  }
}
