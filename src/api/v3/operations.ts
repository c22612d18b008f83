import type { Static } from '@sinclair/typebox';
import { badRequest, TarsierError } from '../../errors.js';
import { layerFormatNamed } from '../../indexer/archive.js';
import type { AncestryRequest } from '../../indexer/ancestry-assembly.js';
import {
  scannerStatus,
  type AffectedAncestriesPage,
  type AncestryFeature,
  type AncestryService,
  type ScannerStatus,
} from '../../indexer/ancestry-service.js';
import { isSha256Digest } from '../../indexer/digest.js';
import { riskMetadata, type RiskContext } from '../../model/risk.js';
import type { Queryable } from '../../store/pool.js';
import { MAX_NAME_LENGTH } from '../limits.js';
import type { PageTokens } from '../paging.js';
import {
  messageListField,
  messageOf,
  metadataText,
  stringField,
  stringMapField,
  timestamp,
  unixSeconds,
  withoutDefaults,
} from './proto-json.js';
import type { GetAncestryResponse, GetNotificationResponse } from './schemas.js';

/**
 * The ancestry API's operations (AncestryService, NotificationService, StatusService) as messages,
 * once, for both transports: the JSON routes (grpc-gateway's mapping) and native gRPC call these
 * with the request as its message holds it, and send what they return, a message in the proto3
 * JSON shape (proto field names, default values left out). The work is AncestryService's; here
 * requests are read, page tokens decoded and minted, and answers written.
 */

export interface ServiceStatus {
  listers: string[];
  detectors: string[];
  /** RFC 3339; absent before the first successful updater run. */
  last_update_time?: string;
}

function statusMessage(status: ScannerStatus): ServiceStatus {
  return withoutDefaults({
    listers: [...status.listers],
    detectors: [...status.detectors],
    last_update_time: timestamp(status.lastUpdate),
  }) as ServiceStatus;
}

/** The ServiceStatus message now (see scannerStatus). */
export async function serviceStatus(db: Queryable): Promise<ServiceStatus> {
  return statusMessage(await scannerStatus(db));
}

/** Format names accepted on input (case-insensitive); OCI layers are Docker layers (as in v1). */
const FORMAT_HINT = 'use Docker (or OCI) or ACI';
/** Scan keys of v1 layers start with this; an ancestry layer hash must not (it would name a v1 layer's scan). */
const V1_SCAN_PREFIX = 'v1/';

const blank = (value: string): boolean => value.trim() === '';

/** An AncestryRequest from a PostAncestryRequest message (proto3 JSON: snake_case or lowerCamelCase names, unknown fields ignored). */
export function parsePostAncestry(body: unknown): AncestryRequest {
  if (body === undefined) throw badRequest('request body is empty: send a JSON object with ancestry_name, format and layers');
  const message = messageOf(body, 'request body');
  const name = stringField(message, 'ancestry_name');
  if (blank(name)) throw badRequest('ancestry_name is required');
  if (name.length > MAX_NAME_LENGTH) throw badRequest(`ancestry_name is longer than the ${MAX_NAME_LENGTH}-character limit`);
  const formatName = stringField(message, 'format');
  if (blank(formatName)) throw badRequest(`format is required: ${FORMAT_HINT}`);
  const format = layerFormatNamed(formatName);
  if (!format) throw badRequest(`format ${JSON.stringify(formatName)} is not supported: ${FORMAT_HINT}`);
  const layerMessages = messageListField(message, 'layers');
  if (layerMessages.length === 0) throw badRequest("layers is required: list the ancestry's layers, parent first");
  const layers = layerMessages.map((layer, i) => {
    const at = `layers[${i}]`;
    const hash = stringField(layer, 'hash', at);
    if (blank(hash)) throw badRequest(`${at}.hash is required`);
    if (hash.length > MAX_NAME_LENGTH) throw badRequest(`${at}.hash is longer than the ${MAX_NAME_LENGTH}-character limit`);
    if (hash.startsWith(V1_SCAN_PREFIX)) throw badRequest(`${at}.hash must not start with "${V1_SCAN_PREFIX}"`);
    // A layer uploaded (PUT /tarsier/v1/layers/{digest}) or scanned before needs no path: it is not downloaded.
    const path = stringField(layer, 'path', at).trim();
    // A sha256 hash names the layer's bytes, as registries and images name blobs, or the tar they
    // hold, as an image config's rootfs.diff_ids do: it is verified, since image scans and uploads
    // reuse a scan stored under that digest (the same files whichever of the two it is).
    const digest = path !== '' && isSha256Digest(hash) ? { digest: hash, digestOf: 'blob-or-tar' as const } : {};
    return { hash, path, headers: stringMapField(layer, 'headers', at), ...digest };
  });
  return { name, format, layers };
}

/** A Vulnerability message; fixed_by only for one affecting a feature (absent when there is no fix). */
function vulnerabilityMessage(
  v: Pick<AncestryFeature['vulnerabilities'][number], 'name' | 'namespace' | 'description' | 'link' | 'severity' | 'metadata'> & {
    fixedBy?: string | null;
    risk?: RiskContext | undefined;
  },
): Record<string, unknown> {
  return {
    name: v.name,
    namespace_name: v.namespace,
    description: v.description,
    link: v.link,
    severity: v.severity,
    // EPSS and KEV beside the source's keys, as in v1's Metadata.
    metadata: metadataText({ ...v.metadata, ...riskMetadata(v.name, v.risk) }),
    fixed_by: v.fixedBy ?? undefined,
  };
}

type SideName = 'old' | 'new';

/**
 * A side's page token: where its next page starts (an ancestry id), as Clair v3's {"StartID": n},
 * plus the side and the notification it belongs to, so a token passed for the other side or for
 * another notification is refused instead of silently skipping ancestries. Tokens holding only
 * StartID (Clair's shape) are accepted.
 */
interface SidePage {
  StartID: number;
  Side?: SideName;
  Notification?: string;
}

/** The request fields that carry each side's page token, as errors name them. */
const PAGE_PARAMETERS = { old: 'old_vulnerability_page', new: 'new_vulnerability_page' } as const;

/** A side's token as given (undefined: first page) and where it starts. */
function sideStart(
  token: string | undefined,
  side: SideName,
  notification: string,
  tokens: PageTokens,
): { token: string | undefined; start: number } {
  const parameter = PAGE_PARAMETERS[side];
  if (token === undefined) return { token, start: 0 };
  let payload: Partial<SidePage> | null;
  try {
    payload = tokens.decode(token, parameter) as Partial<SidePage> | null;
  } catch (err) {
    // The shared decoder speaks of the v1 field; here the page tokens come from next_page.
    if (err instanceof TarsierError) throw new TarsierError(err.code, err.message.replace('NextPage', 'next_page'), { cause: err });
    throw err;
  }
  const start = payload && typeof payload === 'object' ? payload.StartID : undefined;
  if (typeof start !== 'number' || !Number.isSafeInteger(start) || start < 0) {
    throw badRequest(`${parameter} is not a page token of a notification; start again from the first page`);
  }
  if (payload!.Side !== undefined && payload!.Side !== side) {
    throw badRequest(
      `${parameter} is a page token of the ${payload!.Side} side: pass it as ${PAGE_PARAMETERS[payload!.Side as SideName] ?? 'the other parameter'}`,
    );
  }
  if (payload!.Notification !== undefined && payload!.Notification !== notification) {
    throw badRequest(`${parameter} is a page token of another notification; start again from the first page`);
  }
  return { token, start };
}

export interface GetNotificationRequest {
  name: string;
  /** Ancestries per side. */
  limit: number;
  /** next_page of an earlier page of each side; absent or '': the first page. */
  oldPage?: string | undefined;
  newPage?: string | undefined;
}

export class AncestryOperations {
  readonly #service: AncestryService;
  readonly #pageTokens: PageTokens;

  constructor(service: AncestryService, pageTokens: PageTokens) {
    this.#service = service;
    this.#pageTokens = pageTokens;
  }

  /** AncestryService.PostAncestry: scans the layers (stopping when signal aborts) and stores the ancestry. */
  async postAncestry(request: AncestryRequest, signal: AbortSignal): Promise<{ status: ServiceStatus }> {
    await this.#service.postAncestry(request, signal);
    return this.getStatus();
  }

  /** AncestryService.GetAncestry. */
  async getAncestry(name: string): Promise<Static<typeof GetAncestryResponse>> {
    if (name === '') throw badRequest('ancestry name should not be empty');
    const ancestry = await this.#service.ancestry(name);
    const status = await this.#service.status();
    const layers = ancestry.layers.map(({ hash, features }) => ({
      layer: { hash },
      detected_features: features.map((f) => ({
        name: f.name,
        namespace_name: f.namespace,
        version: f.version,
        version_format: f.versionFormat,
        vulnerabilities: f.vulnerabilities.map(vulnerabilityMessage),
      })),
    }));
    return withoutDefaults({
      ancestry: {
        name: ancestry.name,
        scanned_listers: [...status.listers],
        scanned_detectors: [...status.detectors],
        layers,
      },
      status: statusMessage(status),
    });
  }

  /** NotificationService.GetNotification: the notification with each side's page of ancestries. */
  async getNotification(request: GetNotificationRequest): Promise<Static<typeof GetNotificationResponse>> {
    const { name, limit } = request;
    if (name === '') throw badRequest('notification name should not be empty');
    const oldPage = sideStart(request.oldPage || undefined, 'old', name, this.#pageTokens);
    const newPage = sideStart(request.newPage || undefined, 'new', name, this.#pageTokens);
    const { notification, ...sides } = await this.#service.notificationPage({
      name,
      limit,
      oldStart: oldPage.start,
      newStart: newPage.start,
    });
    return withoutDefaults({
      notification: {
        name: notification.name,
        created: unixSeconds(notification.createdAt),
        notified: unixSeconds(notification.notifiedAt),
        deleted: unixSeconds(notification.deletedAt),
        old: this.#pagedSide('old', notification.name, sides.old, oldPage, limit),
        new: this.#pagedSide('new', notification.name, sides.new, newPage, limit),
      },
    });
  }

  /** NotificationService.MarkNotificationAsRead. */
  async markNotificationAsRead(name: string): Promise<Record<string, never>> {
    if (name === '') throw badRequest('notification name should not be empty');
    await this.#service.markNotificationRead(name);
    return {};
  }

  /** StatusService.GetStatus. */
  async getStatus(): Promise<{ status: ServiceStatus }> {
    return { status: statusMessage(await this.#service.status()) };
  }

  #mint(side: SideName, notification: string, start: number): string {
    return this.#pageTokens.encode({ StartID: start, Side: side, Notification: notification } satisfies SidePage);
  }

  /** PagedVulnerableAncestries of one side, or undefined when the side has no vulnerability. */
  #pagedSide(
    side: SideName,
    notification: string,
    affected: AffectedAncestriesPage | undefined,
    page: { token: string | undefined; start: number },
    limit: number,
  ): Record<string, unknown> | undefined {
    if (!affected) return undefined;
    return {
      current_page: page.token ?? this.#mint(side, notification, page.start),
      next_page: affected.next === undefined ? undefined : this.#mint(side, notification, affected.next),
      limit,
      vulnerability: vulnerabilityMessage(affected.vulnerability),
      ancestries: affected.ancestries.map((a) => ({ index: a.id, name: a.name })),
    };
  }
}
