/**
 * The scale bench's data: by default 1,000,000 v1 layers in chains over a few hundred shared base
 * layers, 100,000 images built on the same layers, and 50,000 vulnerabilities, written with SQL
 * into the schema the project's migrations create, with every image summary computed as the
 * refreshers leave them. Seeding takes minutes, so a seed is kept: the database's comment records
 * what it holds, and a later run with the same seed version and sizes uses it as it is.
 */
import os from 'node:os';
import pg from 'pg';
import pino from 'pino';
import { INDEXER_FINGERPRINT, INDEXER_VERSION, VERSION_FORMATS } from '../src/ecosystems/index.js';
import { createPool } from '../src/store/pool.js';
import { setMatchRevision } from '../src/store/match-revisions.js';
import { createVulnerability } from '../src/vulndb.js';
import { machineInfo } from './lib.js';
import {
  BASE_NAMES,
  changesStep,
  computeEverySummary,
  installedVersionSql,
  loadWithoutIndexes,
  poolNameSql,
  riskAndNotificationSteps,
  runSeedSteps,
  updaterStateStep,
  vulnerabilitySteps,
  type SeedStep,
  type StepTime,
  type VulnerabilityPopulation,
} from './seed.js';

/** Raised whenever the seed's shape changes: a kept seed of another version is seeded again. */
export const SEED_VERSION = 1;

export interface ScaleSizes {
  layers: number;
  images: number;
  vulnerabilities: number;
}

export const FULL_SCALE: ScaleSizes = { layers: 1_000_000, images: 100_000, vulnerabilities: 50_000 };

/**
 * The distributions the base layers are releases of: how many base layers each has (rebuilds of
 * its base image, newer ones holding newer package versions), how many packages a base holds,
 * the share of the shared middle layers (runtime stacks) built on it, and how likely a CVE is to
 * have a record in it.
 */
export const NAMESPACES = [
  { name: 'debian:12', format: 'dpkg', bases: 120, packages: [150, 300], stacks: 0.45, records: 0.8 },
  { name: 'debian:11', format: 'dpkg', bases: 40, packages: [150, 300], stacks: 0.1, records: 0.6 },
  { name: 'ubuntu:22.04', format: 'dpkg', bases: 30, packages: [120, 250], stacks: 0.1, records: 0.5 },
  { name: 'alpine:v3.20', format: 'apk', bases: 50, packages: [100, 200], stacks: 0.15, records: 0.25 },
  { name: 'alpine:v3.19', format: 'apk', bases: 30, packages: [100, 200], stacks: 0.05, records: 0.2 },
  { name: 'rhel:9', format: 'rpm', bases: 30, packages: [200, 400], stacks: 0.15, records: 0.4 },
] as const;

export const BASE_LAYERS = NAMESPACES.reduce((sum, n) => sum + n.bases, 0);
/** Package names, the same in every namespace (each namespace has its own features of them). */
export const POOL = 3_000;
/** Names base layers hold: the first CORE in every base, the rest by the base's size. */
export const BASE_POOL = 500;
export const CORE = 100;
export const VERSIONS_PER_FEATURE = 6;
/** Layers above a base add packages from the rest of the pool, each name at one depth (1 … 9) only, so no chain adds a name twice. */
const DEPTHS = 9;
const PER_DEPTH = Math.floor((POOL - BASE_POOL) / DEPTHS);
/** Builds of each repository (images of one repository share its stack and its number of layers). */
const IMAGES_PER_REPOSITORY = 20;
/** Share of the CVEs on base-pool packages (the rest on packages layers above the base install). */
const BASE_PACKAGE_CVES = 0.22;
/** Refresher batch while seeding: the server's statement, in larger batches than a running server's. */
const SEED_SUMMARY_BATCH = 1_000;
const SEED_SUMMARY_CONNECTIONS = 2;

/** The package every Debian 12 base holds, and the vulnerability of it each write run changes. */
export const WIDE_PACKAGE = { namespace: 'debian:12', feature: 'openssl' };
export const WIDE_VULNERABILITY = 'CVE-2099-0001';

export const stacksOf = (sizes: ScaleSizes): number => Math.min(3_000, Math.max(20, Math.round(sizes.layers / 330)));
export const repositoriesOf = (sizes: ScaleSizes): number => Math.max(1, Math.round(sizes.images / IMAGES_PER_REPOSITORY));

export function populationOf(sizes: ScaleSizes): VulnerabilityPopulation {
  return {
    vulnerabilities: sizes.vulnerabilities,
    versionsPerFeature: VERSIONS_PER_FEATURE,
    changed: Math.min(1_600, Math.floor(sizes.vulnerabilities / 25)),
    newNotified: Math.min(400, Math.floor(sizes.vulnerabilities / 100)),
    kevRows: Math.min(1_000, Math.floor(sizes.vulnerabilities / 50)),
  };
}

/** SQL: the namespace id (1-based) a uniform draw u picks, by the namespaces' share of stacks. */
function namespaceByShare(u: string): string {
  let cumulative = 0;
  const arms = NAMESPACES.map((n, i) => {
    cumulative += n.stacks;
    return `WHEN ${u} < ${cumulative.toFixed(4)} THEN ${i + 1}`;
  });
  return `CASE ${arms.join(' ')} ELSE ${NAMESPACES.length} END`;
}

/** SQL: feature version id of package p (pool number) at version v in namespace n. */
const featureVersion = (n: string, p: string, v: string): string =>
  `((${n} - 1) * ${POOL} + ${p} - 1) * ${VERSIONS_PER_FEATURE} + ${v} + 1`;

/** SQL: a layer's name (Clair v1 clients name layers by digest), from its id. */
const layerDigest = (id: string): string => `encode(sha256(('layer-' || ${id})::bytea), 'hex')`;

function seedSteps(sizes: ScaleSizes): SeedStep[] {
  const stacks = stacksOf(sizes);
  const repositories = repositoriesOf(sizes);
  const year = `(interval '365 days' / ${sizes.layers})`;
  return [
    ['seed', 'SELECT setseed(0.27)'],
    [
      'namespace',
      `INSERT INTO namespace (id, name, version_format) SELECT i, n, f FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(n, f, i)`,
      [NAMESPACES.map((n) => n.name), NAMESPACES.map((n) => n.format)],
    ],
    [
      'feature',
      `INSERT INTO feature (id, namespace_id, name)
       SELECT (n - 1) * ${POOL} + p, n, ${poolNameSql('p')} FROM generate_series(1, ${NAMESPACES.length}) n, generate_series(1, ${POOL}) p`,
      [BASE_NAMES],
    ],
    [
      'feature_version',
      `INSERT INTO feature_version (id, feature_id, version)
       SELECT (f.id - 1) * ${VERSIONS_PER_FEATURE} + v + 1, f.id, ${installedVersionSql('ns.version_format', 'f.id', 'v')}
       FROM feature f JOIN namespace ns ON ns.id = f.namespace_id, generate_series(0, ${VERSIONS_PER_FEATURE - 1}) v`,
    ],
    // Base layers: releases' base images rebuilt over time (revision 0 the oldest), each holding the
    // core packages and as many of the namespace's other base-pool packages as its size says.
    [
      'base',
      `CREATE TEMPORARY TABLE base AS
       SELECT (row_number() OVER (ORDER BY t.ns, r))::int AS id, t.ns::int AS namespace_id, r AS revision, t.revisions,
              t.lo + floor(random() * (t.hi - t.lo + 1))::int AS packages
       FROM unnest($1::int[], $2::int[], $3::int[]) WITH ORDINALITY AS t(revisions, lo, hi, ns)
       CROSS JOIN LATERAL generate_series(0, t.revisions - 1) r`,
      [NAMESPACES.map((n) => n.bases), NAMESPACES.map((n) => n.packages[0]), NAMESPACES.map((n) => n.packages[1])],
    ],
    // Stacks: one or two shared layers (a language runtime, its configuration) on a base, most on recent bases.
    [
      'stack',
      `CREATE TEMPORARY TABLE stack AS
       SELECT x.s AS id, b.id AS base_id, b.namespace_id, 1 + (x.m < 0.5)::int AS middles
       FROM (SELECT s, random() AS u, random() AS r, random() AS m FROM generate_series(1, ${stacks}) s) x
       JOIN base b ON b.namespace_id = ${namespaceByShare('x.u')} AND b.revision = b.revisions - 1 - floor(b.revisions * power(x.r, 2))::int`,
    ],
    [
      'layer plan (bases and stacks)',
      `CREATE TEMPORARY TABLE layer_plan AS
       SELECT id::bigint AS id, NULL::bigint AS parent_id, 0 AS depth, namespace_id, id AS base_id, NULL::int AS stack_id,
              NULL::int AS chain_id, 0 AS step
       FROM base
       UNION ALL
       SELECT ${BASE_LAYERS} + row_number() OVER (ORDER BY st.id, d),
              CASE d WHEN 1 THEN st.base_id ELSE ${BASE_LAYERS} + row_number() OVER (ORDER BY st.id, d) - 1 END,
              d, st.namespace_id, st.base_id, st.id, NULL, d
       FROM stack st CROSS JOIN LATERAL generate_series(1, st.middles) d`,
    ],
    // Repositories: each built FROM one stack (popular stacks host many), with a fixed number of layers of its own.
    [
      'repository',
      `CREATE TEMPORARY TABLE repository AS
       SELECT r AS id, 1 + floor(${stacks} * power(random(), 2))::int AS stack_id, random() AS shape
       FROM generate_series(1, ${repositories}) r`,
    ],
    // Chains: an application's own 1 … 9 layers on a stack, 3 … 10 layers in all; the first ones are
    // the images' (their repository's stack and shape), the rest layers v1 clients posted. Layers are
    // numbered in chain order until the layer count is reached.
    [
      'chain',
      `CREATE TEMPORARY TABLE chain AS
       WITH planned AS (
         SELECT c AS id, st.id AS stack_id, 1 + floor((9 - st.middles) * power(x.shape, 1.3))::int AS app_layers
         FROM (
           SELECT c, coalesce(r.stack_id, 1 + floor(${stacks} * power(random(), 2))::int) AS stack_id, coalesce(r.shape, random()) AS shape
           FROM generate_series(1, ${Math.ceil(sizes.layers / 2)}) c
           LEFT JOIN repository r ON c <= ${sizes.images} AND r.id = 1 + (c - 1) % ${repositories}
         ) x JOIN stack st ON st.id = x.stack_id
       ), budget AS (SELECT ${sizes.layers} - count(*) AS app FROM layer_plan)
       SELECT p.id, p.stack_id, least(p.app_layers, b.app - p.start)::int AS app_layers, p.start
       FROM (SELECT *, sum(app_layers) OVER (ORDER BY id) - app_layers AS start FROM planned) p, budget b
       WHERE p.start < b.app`,
    ],
    [
      'layer plan (chains)',
      `INSERT INTO layer_plan
       SELECT f.first + c.start + j, CASE WHEN j = 0 THEN t.top ELSE f.first + c.start + j - 1 END, t.depth + 1 + j,
              st.namespace_id, st.base_id, c.stack_id, c.id, j
       FROM chain c JOIN stack st ON st.id = c.stack_id
       JOIN (SELECT stack_id, max(id) AS top, max(depth) AS depth FROM layer_plan WHERE stack_id IS NOT NULL GROUP BY stack_id) t
         ON t.stack_id = c.stack_id
       CROSS JOIN (SELECT max(id) + 1 AS first FROM layer_plan) f
       CROSS JOIN LATERAL generate_series(0, c.app_layers - 1) j`,
    ],
    // What each layer adds. A base: the core packages and its share of the base pool, in versions of
    // its revision (some a version behind). Above it: a stack's first layer installs 5 … 30 packages,
    // its second 0 … 5; an application's first layer 0 … 10, its later ones 0 … 2 (most none).
    [
      'added',
      `CREATE TEMPORARY TABLE added AS
       SELECT b.id::bigint AS layer_id, ${featureVersion('b.namespace_id', 'p', 'greatest(0, n.newest - ((p * 7 + b.revision) % 3 = 0)::int)')} AS feature_version_id
       FROM base b CROSS JOIN LATERAL generate_series(1, ${BASE_POOL}) p
       CROSS JOIN LATERAL (SELECT least(${VERSIONS_PER_FEATURE - 1}, b.revision * ${VERSIONS_PER_FEATURE} / b.revisions) AS newest) n
       WHERE p <= ${CORE} OR ((p - ${CORE + 1}) * 7919 + b.namespace_id * 131) % ${BASE_POOL - CORE} < b.packages - ${CORE}
       UNION ALL
       SELECT DISTINCT ON (l.id, x.p) l.id, ${featureVersion('l.namespace_id', 'x.p', 'x.v')}
       FROM layer_plan l
       CROSS JOIN LATERAL generate_series(1, CASE
         WHEN l.chain_id IS NULL AND l.step = 1 THEN 5 + floor(26 * random())::int
         WHEN l.chain_id IS NULL THEN floor(6 * random())::int
         WHEN l.step = 0 THEN floor(11 * power(random(), 1.5))::int
         ELSE (random() < 0.35)::int + (random() < 0.1)::int END) i
       CROSS JOIN LATERAL (SELECT ${BASE_POOL} + l.depth + ${DEPTHS} * floor(${PER_DEPTH} * power(random(), 2))::int AS p,
                                  least(${VERSIONS_PER_FEATURE - 1}, floor(${VERSIONS_PER_FEATURE} * power(random(), 0.6))::int) AS v,
                                  i) x
       WHERE l.depth > 0`,
    ],
    // v1 layers: each with its own scan (key v1/<name>), indexed by this version; a layer's scan names
    // a release (bases) and holds a package database when it adds packages.
    [
      'layer_scan (v1 layers)',
      `INSERT INTO layer_scan (id, key, indexed_by_version, indexer_fingerprint, namespace, package_dbs, created_at)
       SELECT l.id, 'v1/' || ${layerDigest('l.id')}, $1, $2, CASE WHEN l.depth = 0 THEN ns.name END,
              CASE WHEN EXISTS (SELECT 1 FROM added a WHERE a.layer_id = l.id) THEN jsonb_build_object(ns.version_format, 'present') ELSE '{}' END,
              now() - (${sizes.layers} - l.id) * ${year}
       FROM layer_plan l JOIN namespace ns ON ns.id = l.namespace_id ORDER BY l.id`,
      [INDEXER_VERSION, INDEXER_FINGERPRINT],
    ],
    [
      'layer',
      `INSERT INTO layer (id, name, parent_id, namespace_id, scan_id, indexed_by_version, indexer_fingerprint, created_at)
       SELECT l.id, ${layerDigest('l.id')}, l.parent_id, l.namespace_id, l.id, $1, $2, now() - (${sizes.layers} - l.id) * ${year}
       FROM layer_plan l ORDER BY l.id`,
      [INDEXER_VERSION, INDEXER_FINGERPRINT],
    ],
    // The images' layers, bottom first: the base, the stack's layers, the chain's own.
    [
      'image layers',
      `CREATE TEMPORARY TABLE image_layer AS
       SELECT ancestry_id, position, layer_id FROM (
         SELECT c.id AS ancestry_id, l.depth AS position, l.id AS layer_id FROM chain c JOIN layer_plan l ON l.chain_id = c.id
         WHERE c.id <= ${sizes.images}
         UNION ALL
         SELECT c.id, l.depth, l.id FROM chain c JOIN layer_plan l ON l.stack_id = c.stack_id AND l.chain_id IS NULL
         WHERE c.id <= ${sizes.images}
         UNION ALL
         SELECT c.id, 0, st.base_id FROM chain c JOIN stack st ON st.id = c.stack_id WHERE c.id <= ${sizes.images}
       ) x ORDER BY ancestry_id, position`,
    ],
    // The images API scans a layer once by its digest, whichever image holds it.
    [
      'layer_scan (image layers)',
      `CREATE TEMPORARY TABLE image_scan AS
       SELECT layer_id, ${sizes.layers} + row_number() OVER (ORDER BY layer_id) AS scan_id FROM (SELECT DISTINCT layer_id FROM image_layer) u;
       INSERT INTO layer_scan (id, key, indexed_by_version, indexer_fingerprint, namespace, package_dbs, created_at)
       SELECT m.scan_id, 'sha256:' || ${layerDigest('s.id')}, s.indexed_by_version, s.indexer_fingerprint, s.namespace, s.package_dbs, s.created_at
       FROM image_scan m JOIN layer_scan s ON s.id = m.layer_id ORDER BY m.scan_id`,
    ],
    // Images: builds of a repository over the last year (its k-th build is image repository + k × repositories).
    [
      'image',
      `INSERT INTO image (id, registry, repository, digest, platform, media_type, first_seen, last_seen)
       SELECT c, CASE WHEN r % 10 < 7 THEN 'registry.example.com' WHEN r % 10 < 9 THEN 'ghcr.io' ELSE 'docker.io' END,
              format('team-%s/service-%s', r % 200, r), 'sha256:' || encode(sha256(('image-' || c)::bytea), 'hex'),
              'linux/amd64', 'application/vnd.oci.image.manifest.v1+json', seen, greatest(seen, now() - random() * interval '20 days')
       FROM generate_series(1, ${sizes.images}) c
       CROSS JOIN LATERAL (SELECT 1 + (c - 1) % ${repositories} AS r,
                                  now() - (${sizes.images} - c) * (interval '365 days' / ${sizes.images}) AS seen) x`,
    ],
    // Tags move: the newer half of a repository's builds keep a version tag, its newest is latest too;
    // the repository's tags name them as the images API records what the registry said.
    [
      'image_tag',
      `INSERT INTO image_tag (image_id, tag)
       SELECT c, format('1.%s.0', (c - 1) / ${repositories}) FROM generate_series(1, ${sizes.images}) c
       WHERE (c - 1) / ${repositories} >= ${IMAGES_PER_REPOSITORY / 2}
       UNION ALL
       SELECT c, 'latest' FROM generate_series(greatest(1, ${sizes.images - repositories + 1}), ${sizes.images}) c`,
    ],
    [
      'repository_tag',
      `INSERT INTO repository_tag (registry, repository, tag, digest)
       SELECT i.registry, i.repository, t.tag, i.digest FROM image_tag t JOIN image i ON i.id = t.image_id`,
    ],
    [
      'ancestry',
      `INSERT INTO ancestry (id, name, created_at, namespaces)
       SELECT i.id, i.digest, i.first_seen, ARRAY[ns.name]
       FROM image i JOIN chain c ON c.id = i.id JOIN stack st ON st.id = c.stack_id JOIN namespace ns ON ns.id = st.namespace_id`,
    ],
    [
      'ancestry_layer',
      `INSERT INTO ancestry_layer (ancestry_id, position, layer_scan_id)
       SELECT il.ancestry_id, il.position, m.scan_id FROM image_layer il JOIN image_scan m ON m.layer_id = il.layer_id`,
    ],
  ];
}

/** The images' packages: what their layers add, each attributed to the position of the layer that added it. */
const ANCESTRY_FEATURE = `
  INSERT INTO ancestry_feature (ancestry_id, feature_version_id, position)
  SELECT il.ancestry_id, a.feature_version_id, il.position FROM image_layer il JOIN added a ON a.layer_id = il.layer_id
  ORDER BY il.ancestry_id, il.position`;

const LAYER_DIFF = `
  INSERT INTO layer_diff (layer_id, feature_version_id, modification) SELECT layer_id, feature_version_id, 'add' FROM added ORDER BY layer_id`;

/**
 * Vulnerabilities: CVEs on one package of the pool each (base-pool packages, the core most of all,
 * carry a share), recorded in each namespace with that namespace's likelihood, each record with a
 * fix of its own: none yet (12 %), before every installed version (43 %), or in one of them.
 */
function vulnerabilityPlanSteps(sizes: ScaleSizes): SeedStep[] {
  const population = populationOf(sizes);
  const recordsPerCve = NAMESPACES.reduce((sum, n) => sum + n.records, 0);
  const cves = Math.ceil((sizes.vulnerabilities / recordsPerCve) * 1.1);
  return [
    changesStep(population),
    [
      'cve',
      `CREATE TEMPORARY TABLE cve AS
       SELECT c AS id, CASE WHEN random() < ${BASE_PACKAGE_CVES} THEN 1 + floor(${BASE_POOL} * power(random(), 1.5))::int
                            ELSE ${BASE_POOL + 1} + floor(${POOL - BASE_POOL} * power(random(), 1.5))::int END AS package,
              random() AS s, now() - random() * interval '900 days' AS created_at
       FROM generate_series(1, ${cves}) c`,
    ],
    [
      'plan',
      `CREATE TEMPORARY TABLE plan AS
       SELECT id, namespace_id, (namespace_id - 1) * ${POOL} + package AS feature_id, cve,
              CASE WHEN r < 0.12 THEN NULL WHEN r < 0.55 THEN -1 ELSE floor((r - 0.55) / ${(0.45 / VERSIONS_PER_FEATURE).toFixed(6)})::int END AS k,
              CASE WHEN s < 0.03 THEN 'Critical' WHEN s < 0.20 THEN 'High' WHEN s < 0.58 THEN 'Medium'
                   WHEN s < 0.88 THEN 'Low' WHEN s < 0.96 THEN 'Negligible' ELSE 'Unknown' END::severity AS severity,
              created_at
       FROM (
         SELECT (row_number() OVER (ORDER BY cve, ns))::int AS id, ns::int AS namespace_id, package, cve, s, created_at, random() AS r
         -- The draw is a column of its own, so it is drawn for every CVE and namespace (a condition on
         -- the namespaces alone would be decided once per namespace).
         FROM (SELECT c.id AS cve, c.package, c.s, c.created_at, n.ns, n.likelihood, random() AS draw
               FROM cve c CROSS JOIN unnest($1::float8[]) WITH ORDINALITY AS n(likelihood, ns)) drawn
         WHERE draw < likelihood
       ) x
       WHERE id <= ${sizes.vulnerabilities}`,
      [NAMESPACES.map((n) => n.records)],
    ],
    ...vulnerabilitySteps(population),
    ...riskAndNotificationSteps(population),
    feedStatesStep(sizes),
  ];
}

/** The feed states of the seed: Debian's, Ubuntu's, Alpine's and Red Hat's sources ran, Oracle's is failing. */
export function feedStatesStep(sizes: ScaleSizes): SeedStep {
  const population = populationOf(sizes);
  return updaterStateStep(
    [
      { name: 'debian', records: Math.round(sizes.vulnerabilities * 0.51), changed: population.changed },
      { name: 'ubuntu', records: Math.round(sizes.vulnerabilities * 0.18), changed: 0 },
      { name: 'alpine', records: Math.round(sizes.vulnerabilities * 0.16), changed: 0 },
      { name: 'rhel', records: Math.round(sizes.vulnerabilities * 0.15), changed: 0 },
    ],
    { name: 'oracle', url: 'https://linux.oracle.com/security/oval/' },
    population.kevRows,
  );
}

/** What a kept seed holds (the database's comment). */
export interface SeedRecord {
  version: number;
  sizes: ScaleSizes;
  seconds: number;
  steps: StepTime[];
  seededAt: string;
  machine: string;
  load: string;
  /** The newest migration when it was seeded (later ones are applied on top by `tarsier migrate`). */
  migration: string;
}

export async function readSeedRecord(databaseUrl: string): Promise<SeedRecord | undefined> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const comment = (
      await db.query<{ c: string | null }>(
        "SELECT shobj_description(oid, 'pg_database') AS c FROM pg_database WHERE datname = current_database()",
      )
    ).rows[0]?.c;
    if (!comment) return undefined;
    try {
      return JSON.parse(comment) as SeedRecord;
    } catch {
      return undefined;
    }
  } finally {
    await db.end();
  }
}

const sameSizes = (a: ScaleSizes, b: ScaleSizes): boolean =>
  a.layers === b.layers && a.images === b.images && a.vulnerabilities === b.vulnerabilities;

/** Whether a kept seed can be used for these sizes. */
export const seedFits = (record: SeedRecord | undefined, sizes: ScaleSizes): record is SeedRecord =>
  record !== undefined && record.version === SEED_VERSION && sameSizes(record.sizes, sizes);

/**
 * Seeds an empty database (the schema migrated): the statements on one connection with room to
 * sort and hash in memory, the two largest tables loaded with their indexes set aside, the
 * vulnerability the write runs change written through the API's own code, every summary computed;
 * then records the seed in the database's comment, last, so an interrupted seed is not kept.
 */
export async function seedScale(databaseUrl: string, sizes: ScaleSizes, migration: string): Promise<SeedRecord> {
  const started = performance.now();
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const steps: StepTime[] = [];
  try {
    await db.query("SET work_mem = '512MB'; SET maintenance_work_mem = '1GB'; SET synchronous_commit = off");
    await runSeedSteps(db, seedSteps(sizes), steps);
    const chains = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM chain')).rows[0]!.n;
    if (chains < sizes.images) throw new Error(`${chains} chains for ${sizes.images} images: raise the layer count`);
    const timedLoad = async (label: string, table: string, sql: string) => {
      const loadStarted = performance.now();
      let loaded = 0;
      const rebuild = await loadWithoutIndexes(db, table, async () => {
        await db.query(sql);
        loaded = (performance.now() - loadStarted) / 1000;
      });
      steps.push({ label, seconds: loaded }, { label: `${label}: indexes and keys rebuilt`, seconds: rebuild });
    };
    await timedLoad('layer_diff', 'layer_diff', LAYER_DIFF);
    await timedLoad('ancestry_feature', 'ancestry_feature', ANCESTRY_FEATURE);
    await runSeedSteps(db, vulnerabilityPlanSteps(sizes), steps);
    const sequencesStarted = performance.now();
    for (const table of [
      'namespace',
      'feature',
      'feature_version',
      'vulnerability',
      'vulnerability_fixedin',
      'image',
      'layer_scan',
      'layer',
      'ancestry',
    ]) {
      await db.query(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), (SELECT max(id) FROM ${table}))`);
    }
    await db.query('ANALYZE');
    steps.push({ label: 'sequences, ANALYZE', seconds: (performance.now() - sequencesStarted) / 1000 });
  } finally {
    await db.end();
  }

  // The vulnerability the write runs change: no fix yet for the package every Debian 12 base holds.
  const writeStarted = performance.now();
  const pool = createPool({ connectionString: databaseUrl }, 1, pino({ level: 'silent' }));
  try {
    // Matches were decided by the current comparators: nothing for the server to recompute at start.
    for (const format of VERSION_FORMATS) await setMatchRevision(pool, format.name, format.revision);
    await createVulnerability(pool, {
      namespace: WIDE_PACKAGE.namespace,
      name: WIDE_VULNERABILITY,
      description: `A flaw in ${WIDE_PACKAGE.feature}'s certificate parsing may let a remote peer crash the process (the scale bench changes this one).`,
      link: `https://security-tracker.debian.org/tracker/${WIDE_VULNERABILITY}`,
      severity: 'High',
      metadata: { NVD: { CVSSv3: { Score: 7.5, Vectors: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H' } } },
      fixedIn: [{ feature: WIDE_PACKAGE.feature, version: null }],
    });
  } finally {
    await pool.end();
  }
  steps.push({
    label: `${WIDE_VULNERABILITY} on ${WIDE_PACKAGE.feature} (${WIDE_PACKAGE.namespace}), through the API's code`,
    seconds: (performance.now() - writeStarted) / 1000,
  });
  steps.push(...(await computeEverySummary(databaseUrl, SEED_SUMMARY_BATCH, SEED_SUMMARY_CONNECTIONS)));

  const record: SeedRecord = {
    version: SEED_VERSION,
    sizes,
    seconds: (performance.now() - started) / 1000,
    steps,
    seededAt: new Date().toISOString(),
    machine: machineInfo(),
    load: os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(', '),
    migration,
  };
  const db2 = new pg.Client({ connectionString: databaseUrl });
  await db2.connect();
  try {
    const name = (await db2.query<{ d: string }>('SELECT current_database() AS d')).rows[0]!.d;
    await db2.query(`COMMENT ON DATABASE ${db2.escapeIdentifier(name)} IS ${db2.escapeLiteral(JSON.stringify(record))}`);
  } finally {
    await db2.end();
  }
  return record;
}
