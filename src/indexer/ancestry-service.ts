import { vulnerabilityDataTime } from '../coverage.js';
import { NAMESPACE_DETECTORS, PACKAGE_LISTERS } from '../ecosystems/index.js';
import { notFound } from '../errors.js';
import { ancestriesAffectedBy, readAncestry, type AffectedAncestry } from '../store/ancestries.js';
import type { AffectingVulnerability, LayerFeature } from '../store/layers.js';
import { findNotification, markNotificationRead, notifiedVulnerability, type NotificationRow } from '../store/notifications.js';
import type { Pool, Queryable } from '../store/pool.js';
import type { StoredVulnerability } from '../store/vulnerabilities.js';
import { checkLayerSources, scanAncestryLayers, storeAncestry, type AncestryRequest } from './ancestry-assembly.js';
import type { LayerScans } from './layer-scans.js';

/**
 * The ancestry API's operations (Clair v3's AncestryService, NotificationService and
 * StatusService) over the layer scans and the store: ancestries scanned and stored, read back with
 * the vulnerabilities of their features, and the ancestries a notification's vulnerabilities
 * affect, page by page. Its transports (JSON routes and gRPC) write what it returns as messages.
 */

/** The package listers and namespace detectors every layer is scanned with, by name, in run order. */
const LISTER_NAMES: readonly string[] = PACKAGE_LISTERS.map((l) => l.name);
const DETECTOR_NAMES: readonly string[] = NAMESPACE_DETECTORS.map((d) => d.name);

export interface ScannerStatus {
  listers: readonly string[];
  detectors: readonly string[];
  /** null before the first successful updater run. */
  lastUpdate: Date | null;
}

/**
 * The status now: the configured listers and detectors and when vulnerability data was last
 * brought up to date by any source (enrichment and risk context, such as EPSS, do not count).
 */
export async function scannerStatus(db: Queryable): Promise<ScannerStatus> {
  return { listers: LISTER_NAMES, detectors: DETECTOR_NAMES, lastUpdate: await vulnerabilityDataTime(db) };
}

/** A feature of an ancestry with the live vulnerabilities affecting it. */
export type AncestryFeature = LayerFeature & { vulnerabilities: AffectingVulnerability[] };

export interface AncestryContents {
  name: string;
  /** Parent first, each with the features it introduced. */
  layers: Array<{ hash: string; features: AncestryFeature[] }>;
}

/** One side's page of the ancestries a notified vulnerability affects. */
export interface AffectedAncestriesPage {
  /** The vulnerability as this side of the notification saw it. */
  vulnerability: StoredVulnerability;
  ancestries: AffectedAncestry[];
  /** Where the next page starts; undefined on the last. */
  next: number | undefined;
}

export interface NotificationPage {
  notification: NotificationRow;
  /** undefined when the side has no vulnerability (or it was purged meanwhile). */
  old: AffectedAncestriesPage | undefined;
  new: AffectedAncestriesPage | undefined;
}

export interface NotificationPageRequest {
  name: string;
  /** Ancestries per side. */
  limit: number;
  /** Where each side's page starts (an ancestry id): 0 for the first. */
  oldStart: number;
  newStart: number;
}

export class AncestryService {
  readonly #pool: Pool;
  readonly #scans: LayerScans;

  constructor(deps: { pool: Pool; scans: LayerScans }) {
    this.#pool = deps.pool;
    this.#scans = deps.scans;
  }

  /** Scans the layers (stopping when signal aborts) and stores the ancestry. */
  async postAncestry(request: AncestryRequest, signal: AbortSignal): Promise<void> {
    await checkLayerSources(this.#scans, request);
    const scanned = await scanAncestryLayers(this.#scans, request, signal);
    signal.throwIfAborted(); // a caller gone by now gets no ancestry either
    await storeAncestry(this.#pool, request, scanned);
  }

  /** The ancestry's layers, each with the features it introduced and their vulnerabilities. */
  async ancestry(name: string): Promise<AncestryContents> {
    const ancestry = await readAncestry(this.#pool, name);
    if (!ancestry) throw notFound(`requested ancestry '${name}' is not found`);
    const vulnerabilities = new Map<number, AffectingVulnerability[]>();
    for (const v of ancestry.vulnerabilities) {
      const list = vulnerabilities.get(v.featureVersionId) ?? [];
      list.push(v);
      vulnerabilities.set(v.featureVersionId, list);
    }
    const introduced = new Map<number, AncestryFeature[]>();
    for (const { position, ...feature } of ancestry.features) {
      const list = introduced.get(position) ?? [];
      list.push({ ...feature, vulnerabilities: vulnerabilities.get(feature.featureVersionId) ?? [] });
      introduced.set(position, list);
    }
    const layers = ancestry.layers.map((hash, position) => ({ hash, features: introduced.get(position) ?? [] }));
    return { name: ancestry.name, layers };
  }

  /** The notification with each side's page of the ancestries its vulnerabilities affect. */
  async notificationPage(request: NotificationPageRequest): Promise<NotificationPage> {
    const { name, limit } = request;
    const notification = await findNotification(this.#pool, name);
    if (!notification) throw notFound(`requested notification '${name}' is not found`);
    const [oldSide, newSide] = await Promise.all([
      this.#affected('old', notification, request.oldStart, limit),
      this.#affected('new', notification, request.newStart, limit),
    ]);
    return { notification, old: oldSide, new: newSide };
  }

  async markNotificationRead(name: string): Promise<void> {
    if (!(await markNotificationRead(this.#pool, name))) throw notFound(`requested notification '${name}' is not found`);
  }

  status(): Promise<ScannerStatus> {
    return scannerStatus(this.#pool);
  }

  async #affected(
    side: 'old' | 'new',
    notification: NotificationRow,
    start: number,
    limit: number,
  ): Promise<AffectedAncestriesPage | undefined> {
    const vulnerabilityId = side === 'old' ? notification.oldVulnerabilityId : notification.newVulnerabilityId;
    if (vulnerabilityId === null) return undefined;
    const [vulnerability, rows] = await Promise.all([
      notifiedVulnerability(this.#pool, notification, side),
      ancestriesAffectedBy(this.#pool, vulnerabilityId, start, limit + 1),
    ]);
    if (!vulnerability) return undefined; // purged meanwhile
    return { vulnerability, ancestries: rows.slice(0, limit), next: rows.length > limit ? rows[limit]!.id : undefined };
  }
}
