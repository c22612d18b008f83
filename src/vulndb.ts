/**
 * The vulnerability database's write and read operations of the v1 API (its writes, like the
 * updaters' whole namespaces, go through store/updates.ts). Each write runs in one transaction that also writes the
 * notification for the change.
 */
import type pg from 'pg';
import { VERSION_FORMAT_NAMES_TEXT, isVersionFormatName, knownNamespaceFormat, versionFormat } from './ecosystems/index.js';
import { MATCHING } from './ecosystems/matching.js';
import { badRequest, notFound } from './errors.js';
import type { VersionFormatName } from './model/version-format.js';
import { mergeFixedIn, sameVulnerability, type FixedIn, type Vulnerability } from './model/vulnerability.js';
import { withTransaction, type Pool, type Queryable } from './store/pool.js';
import {
  ensureNamespace,
  findLiveVulnerability,
  findNamespace,
  listLiveVulnerabilities,
  liveForWrite,
  lockVulnerability,
  type NamespaceRow,
  type StoredVulnerability,
  type WriteState,
} from './store/vulnerabilities.js';
import { replaceVulnerability, type WriteOptions } from './store/updates.js';

export type { NamespaceRow, StoredVulnerability };
export { findNamespace, listNamespaces } from './store/vulnerabilities.js';

/** API writes belong to no updater and always notify. */
const API_WRITE: WriteOptions = { updater: null, notify: true, matching: MATCHING };

export interface WriteResult {
  vulnerability: StoredVulnerability;
  /** False when the submitted state equalled the stored one: nothing was written. */
  changed: boolean;
  notification: string | null;
}

async function requireNamespace(db: Queryable, name: string): Promise<NamespaceRow> {
  const namespace = await findNamespace(db, name);
  if (!namespace) throw notFound(`namespace ${name} does not exist`);
  return namespace;
}

/**
 * Checks the client's VersionFormat against the namespace a write goes to (existing: undefined
 * when it does not exist yet) and returns the format to create it with. A known distribution's
 * format always wins; for other namespaces the client's VersionFormat decides.
 */
function formatForWrite(name: string, existing: NamespaceRow | undefined, clientFormat: string | undefined): VersionFormatName {
  const known = knownNamespaceFormat(name);
  if (clientFormat !== undefined && !isVersionFormatName(clientFormat)) {
    throw badRequest(`VersionFormat ${JSON.stringify(clientFormat)} is not supported; use ${VERSION_FORMAT_NAMES_TEXT}`);
  }
  if (existing) {
    if (!known && clientFormat !== undefined && clientFormat !== existing.versionFormat) {
      throw badRequest(`namespace ${name} compares versions as ${existing.versionFormat}; VersionFormat ${clientFormat} does not match`);
    }
    return existing.versionFormat;
  }
  const format: VersionFormatName | undefined = known ?? clientFormat;
  if (!format) {
    throw badRequest(
      `namespace ${name} is not a distribution Tarsier knows, so its version format is unknown: create it with a POST whose FixedIn entries give VersionFormat (${VERSION_FORMAT_NAMES_TEXT})`,
    );
  }
  return format;
}

function validateFixedIn(namespace: NamespaceRow, fixedIn: readonly FixedIn[]): void {
  const format = versionFormat(namespace.versionFormat);
  for (const fix of fixedIn) {
    if (fix.version !== null && !format.valid(fix.version)) {
      throw badRequest(
        `FixedIn version ${JSON.stringify(fix.version)} of ${fix.feature} is not a valid ${format.name} version (use "None" when no fix exists)`,
      );
    }
  }
}

interface Target {
  namespace: string;
  name: string;
  /** The client's VersionFormat, if it gave one. */
  clientFormat?: string | undefined;
  /** Create the namespace on first use (else a missing one is not found). */
  create: boolean;
  /** The features the write may add (those of the live version are locked anyway). */
  features: readonly string[];
}

/** Locks the target's name and its features, creating its namespace when asked to. */
async function lockTarget(client: pg.PoolClient, target: Target): Promise<{ namespace: NamespaceRow; state: WriteState }> {
  let namespace = await lockVulnerability(client, target.namespace, target.name);
  if (namespace || target.create) {
    const format = formatForWrite(target.namespace, namespace, target.clientFormat);
    if (!namespace) {
      await ensureNamespace(client, target.namespace, format);
      namespace = (await lockVulnerability(client, target.namespace, target.name))!;
    }
  }
  if (!namespace) throw notFound(`namespace ${target.namespace} does not exist`);
  return { namespace, state: await liveForWrite(client, namespace, target.name, target.features) };
}

/** Lock, read, decide the next state, write it (when it differs) and notify. */
async function change(
  pool: Pool,
  target: Target,
  decide: (current: StoredVulnerability | undefined, namespace: NamespaceRow) => Vulnerability,
): Promise<WriteResult> {
  return withTransaction(pool, async (client): Promise<WriteResult> => {
    const { namespace, state } = await lockTarget(client, target);
    const { current } = state;
    const next = decide(current, namespace);
    validateFixedIn(namespace, next.fixedIn);
    if (current && sameVulnerability(current, next)) {
      return { vulnerability: current, changed: false, notification: null };
    }
    const { id, notification } = await replaceVulnerability(client, namespace, state, next, API_WRITE);
    return {
      vulnerability: { ...next, id: id!, updater: API_WRITE.updater, versionFormat: namespace.versionFormat },
      changed: true,
      notification,
    };
  });
}

/** A submitted fixed-in list names each feature once (a merge would silently keep the last). */
function requireDistinctFeatures(fixedIn: readonly FixedIn[]): void {
  const seen = new Set<string>();
  for (const fix of fixedIn) {
    if (seen.has(fix.feature)) throw badRequest(`FixedIn lists ${fix.feature} more than once`);
    seen.add(fix.feature);
  }
}

/**
 * Creates a vulnerability, or merges into the live one as Clair did: description, link, severity
 * and metadata are replaced; fixed-in entries are added or replaced per feature, others kept.
 */
export function createVulnerability(pool: Pool, input: Vulnerability, clientFormat?: string): Promise<WriteResult> {
  requireDistinctFeatures(input.fixedIn);
  const features = input.fixedIn.map((f) => f.feature);
  return change(pool, { namespace: input.namespace, name: input.name, clientFormat, create: true, features }, (current) => ({
    ...input,
    fixedIn: mergeFixedIn(current?.fixedIn ?? [], input.fixedIn),
  }));
}

/** Replaces everything but the fixed-in list (managed through the fixes routes); creates when absent. */
export function updateVulnerability(pool: Pool, input: Omit<Vulnerability, 'fixedIn'>, clientFormat?: string): Promise<WriteResult> {
  return change(pool, { namespace: input.namespace, name: input.name, clientFormat, create: true, features: [] }, (current) => ({
    ...input,
    fixedIn: current?.fixedIn ?? [],
  }));
}

export async function deleteVulnerability(pool: Pool, namespaceName: string, name: string): Promise<void> {
  await withTransaction(pool, async (client) => {
    const { namespace, state } = await lockTarget(client, { namespace: namespaceName, name, create: false, features: [] });
    if (!state.current) throw notFound(`vulnerability ${name} does not exist in namespace ${namespaceName}`);
    await replaceVulnerability(client, namespace, state, null, API_WRITE);
  });
}

export async function getVulnerability(pool: Pool, namespaceName: string, name: string): Promise<StoredVulnerability> {
  const namespace = await requireNamespace(pool, namespaceName);
  const found = await findLiveVulnerability(pool, namespace, name);
  if (!found) throw notFound(`vulnerability ${name} does not exist in namespace ${namespaceName}`);
  return found;
}

export interface VulnerabilityPage {
  vulnerabilities: StoredVulnerability[];
  /** Id to start the next page at; null on the last page. */
  nextId: number | null;
}

export async function listVulnerabilities(pool: Pool, namespaceName: string, startId: number, limit: number): Promise<VulnerabilityPage> {
  const namespace = await requireNamespace(pool, namespaceName);
  const rows = await listLiveVulnerabilities(pool, namespace, startId, limit + 1);
  const next = rows.length > limit ? rows[limit] : undefined;
  return { vulnerabilities: rows.slice(0, limit), nextId: next ? next.id : null };
}

/** Adds or replaces the fix for one feature. */
export async function putFix(pool: Pool, namespaceName: string, name: string, fix: FixedIn): Promise<WriteResult> {
  return change(pool, { namespace: namespaceName, name, create: false, features: [fix.feature] }, (current) => {
    if (!current) throw notFound(`vulnerability ${name} does not exist in namespace ${namespaceName}`);
    return { ...current, fixedIn: mergeFixedIn(current.fixedIn, [fix]) };
  });
}

export async function deleteFix(pool: Pool, namespaceName: string, name: string, feature: string): Promise<WriteResult> {
  return change(pool, { namespace: namespaceName, name, create: false, features: [] }, (current) => {
    if (!current) throw notFound(`vulnerability ${name} does not exist in namespace ${namespaceName}`);
    if (!current.fixedIn.some((f) => f.feature === feature)) {
      throw notFound(`vulnerability ${name} has no fix for ${feature}`);
    }
    return { ...current, fixedIn: current.fixedIn.filter((f) => f.feature !== feature) };
  });
}
