/**
 * Seeding with SQL, shared by the benchmarks that write their data straight into the schema the
 * project's migrations create (through the API it would take hours): timed statement lists,
 * versions in each package format's syntax that the format's comparator orders as the seed
 * means, the vulnerability population built from a plan (its versions, fixes, matches, EPSS, KEV,
 * notifications and feed states), bulk loads into tables whose indexes are rebuilt afterwards,
 * and every image summary computed as the refreshers compute them.
 */
import type pg from 'pg';
import pino from 'pino';
import { createPool, withTransaction } from '../src/store/pool.js';
import { refreshStaleSummaries } from '../src/store/summaries.js';

/** A labelled statement of a seed, with its parameters. */
export type SeedStep = readonly [label: string, sql: string, parameters?: readonly unknown[]];

export interface StepTime {
  label: string;
  seconds: number;
}

/** Runs the statements in order on one connection (so temporary tables and setseed carry over), timing each. */
export async function runSeedSteps(db: pg.ClientBase, steps: readonly SeedStep[], times: StepTime[] = []): Promise<StepTime[]> {
  for (const [label, sql, parameters] of steps) {
    const started = performance.now();
    await db.query(sql, parameters ? [...parameters] : []);
    times.push({ label, seconds: (performance.now() - started) / 1000 });
  }
  return times;
}

/** Source packages of a Debian base image, by name: the first features of a seed (the rest are named pkg-NNNN). */
export const BASE_NAMES = [
  'acl adduser apt attr audit base-files base-passwd bash bzip2 cdebconf coreutils dash db5.3 debconf',
  'debian-archive-keyring debianutils diffutils dpkg e2fsprogs findutils gcc-12 gdbm glibc gmp gnupg2 gnutls28',
  'grep gzip hostname init-system-helpers keyutils krb5 libbsd libcap-ng libcap2 libffi libgcrypt20 libgpg-error',
  'libidn2 libmd libnsl libseccomp libselinux libsemanage libsepol libtasn1-6 libtirpc libunistring libxcrypt',
  'libzstd lz4 mawk ncurses nettle openldap openssl p11-kit pam pcre2 perl sed shadow systemd sysvinit tar',
  'tzdata usrmerge util-linux xxhash xz-utils zlib curl ca-certificates nghttp2 libpsl rtmpdump libssh2 brotli',
  'cyrus-sasl2 sqlite3 expat libxml2 icu readline libedit libyaml jansson json-c libevent libuv1 python3.11',
  'python3-defaults mpdecimal libnss3 nspr git openssh procps less wget',
]
  .join(' ')
  .split(' ');

/** The name of feature number n (1-based) of a seed's package pool. */
export const poolNameSql = (n: string): string => `coalesce(($1::text[])[${n}], 'pkg-' || lpad(${n}::text, 4, '0'))`;

/**
 * Versions as the seeds write them, in each package format's syntax: installed versions 1.M.v
 * (v = 0, 1, …; M: the feature id modulo 50), and for a fix k a version after 1.M.k and before
 * 1.M.(k+1) (so versions 0…k are affected), or one before every installed version (none is).
 * Each format's comparator orders them so, which keeps the matches a seed stores
 * (vulnerability_affects) the ones the server would decide.
 */
const VERSION_SYNTAX = {
  dpkg: { installed: '1.%s.%s-1', fixed: '1.%s.%s-1+deb12u1', beforeAll: '1.%s.0~rc1-1' },
  rpm: { installed: '1.%s.%s-1.el9', fixed: '1.%s.%s-2.el9', beforeAll: '1.%s.0~rc1-1.el9' },
  apk: { installed: '1.%s.%s-r0', fixed: '1.%s.%s-r1', beforeAll: '1.%s.0_rc1-r0' },
} as const;

export type SeededFormat = keyof typeof VERSION_SYNTAX;

const byFormat = (format: string, pick: (syntax: (typeof VERSION_SYNTAX)[SeededFormat]) => string): string =>
  `CASE ${format} ${Object.values(VERSION_SYNTAX)
    .map((syntax, i) => `WHEN '${Object.keys(VERSION_SYNTAX)[i]}' THEN ${pick(syntax)}`)
    .join(' ')} END`;

/** Installed version v of feature f, in the format named by the SQL expression format. */
export const installedVersionSql = (format: string, feature: string, v: string): string =>
  byFormat(format, (s) => `format('${s.installed}', ${feature} % 50, ${v})`);

/** The fixed version of a fix k (NULL: no fix yet; negative: fixed before every installed version). */
export const fixedVersionSql = (format: string, feature: string, k: string): string =>
  `CASE WHEN ${k} IS NULL THEN NULL WHEN ${k} < 0 THEN ${byFormat(format, (s) => `format('${s.beforeAll}', ${feature} % 50)`)}
        ELSE ${byFormat(format, (s) => `format('${s.fixed}', ${feature} % 50, ${k})`)} END`;

/** The size of a seed's vulnerability population. */
export interface VulnerabilityPopulation {
  /** Plan rows (vulnerability ids 1 … this), before the new versions of the changed ones. */
  vulnerabilities: number;
  versionsPerFeature: number;
  /** Vulnerabilities changed: each gets a superseded version and a new one, with a notification. */
  changed: number;
  /** Recent new vulnerabilities with a notification of their own. */
  newNotified: number;
  kevRows: number;
}

/**
 * Which vulnerabilities change (old_id: retired at the time of the change; new_id: its new
 * version then), drawn before the plan.
 */
export const changesStep = (p: VulnerabilityPopulation): SeedStep => [
  'changes',
  `CREATE TEMPORARY TABLE change AS
   SELECT g * 25 AS old_id, ${p.vulnerabilities} + g AS new_id, now() - random() * interval '30 days' AS at
   FROM generate_series(1, ${p.changed}) g`,
];

/** Where each source's advisories live, by the updater (namespace prefix) that wrote them. */
const ADVISORY_LINK = (updater: string): string =>
  `CASE ${updater} WHEN 'debian' THEN 'https://security-tracker.debian.org/tracker/' WHEN 'ubuntu' THEN 'https://ubuntu.com/security/'
     WHEN 'alpine' THEN 'https://security.alpinelinux.org/vuln/' ELSE 'https://access.redhat.com/security/cve/' END`;

/**
 * The vulnerabilities of a plan, which the caller writes first as a temporary table plan(id,
 * namespace_id, feature_id, cve, k, severity, created_at): one row per vulnerability, on one
 * feature, named CVE-YYYY-NNNNN after cve (rows of several namespaces may share one), k its fix
 * (as fixedVersionSql). Feature versions are numbered (feature_id - 1) × versionsPerFeature + v + 1.
 * Writes the live and superseded versions, their fixed-in rows and their matches.
 */
export const vulnerabilitySteps = (p: VulnerabilityPopulation): SeedStep[] => [
  [
    'vulnerability',
    `INSERT INTO vulnerability (id, namespace_id, name, description, link, severity, source_severity, metadata, updater, created_at, deleted_at)
     SELECT p.id, p.namespace_id, n.name, d.description, ${ADVISORY_LINK('s.updater')} || n.name, p.severity, p.severity,
            jsonb_build_object('NVD', jsonb_build_object('CVSSv3', jsonb_build_object(
              'Score', CASE p.severity WHEN 'Critical' THEN 9.8 WHEN 'High' THEN 7.5 WHEN 'Medium' THEN 5.3 ELSE 3.1 END,
              'Vectors', 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N'))),
            s.updater, CASE WHEN c.at IS NULL THEN p.created_at ELSE least(p.created_at, c.at - interval '1 day') END, c.at
     FROM plan p
     JOIN namespace ns ON ns.id = p.namespace_id
     CROSS JOIN LATERAL (SELECT split_part(ns.name, ':', 1) AS updater) s
     LEFT JOIN change c ON c.old_id = p.id
     CROSS JOIN LATERAL (SELECT format('CVE-%s-%s', 2014 + p.cve % 12, 10000 + p.cve) AS name) n
     CROSS JOIN LATERAL (SELECT 'A flaw was found in ' || (SELECT f.name FROM feature f WHERE f.id = p.feature_id) ||
       ': a crafted input may cause an out-of-bounds read in the parser, which a remote attacker could use to crash the '
       'process or disclose memory. ' || n.name || '.' AS description) d`,
  ],
  // The new versions: the same package; a fix released in the newest version when there was none; most of them more severe.
  [
    'vulnerability (new versions)',
    `INSERT INTO vulnerability (id, namespace_id, name, description, link, severity, source_severity, metadata, updater, created_at)
     SELECT c.new_id, v.namespace_id, v.name, v.description || ' Updated analysis.', v.link, s.severity, s.severity, v.metadata, v.updater, c.at
     FROM change c JOIN vulnerability v ON v.id = c.old_id
     CROSS JOIN LATERAL (SELECT CASE WHEN random() < 0.6 AND v.severity < 'Critical' AND v.severity >= 'Low'
       THEN (enum_range(v.severity, NULL))[2] ELSE v.severity END AS severity) s`,
  ],
  [
    'plan (new versions)',
    `INSERT INTO plan (id, namespace_id, feature_id, cve, k, severity, created_at)
     SELECT c.new_id, p.namespace_id, p.feature_id, p.cve, coalesce(p.k, ${p.versionsPerFeature - 1}), p.severity, c.at
     FROM change c JOIN plan p ON p.id = c.old_id`,
  ],
  [
    'vulnerability_fixedin',
    `INSERT INTO vulnerability_fixedin (id, vulnerability_id, feature_id, fixed_version)
     SELECT p.id, p.id, p.feature_id, ${fixedVersionSql('ns.version_format', 'p.feature_id', 'p.k')}
     FROM plan p JOIN namespace ns ON ns.id = p.namespace_id`,
  ],
  [
    'vulnerability_affects',
    `INSERT INTO vulnerability_affects (vulnerability_id, feature_version_id, fixedin_id)
     SELECT p.id, (p.feature_id - 1) * ${p.versionsPerFeature} + v + 1, p.id
     FROM plan p, generate_series(0, ${p.versionsPerFeature - 1}) v
     WHERE p.k IS NULL OR v <= p.k`,
  ],
];

/**
 * EPSS for most CVEs (most scores near zero), KEV for High and Critical ones, and a notification
 * per change (read a day later when older than a week) and per recent new vulnerability.
 */
export const riskAndNotificationSteps = (p: VulnerabilityPopulation): SeedStep[] => [
  [
    'epss',
    `INSERT INTO epss (cve, score, percentile, scored_on)
     SELECT name, score, percent_rank() OVER (ORDER BY score), current_date - 1
     FROM (SELECT DISTINCT ON (name) name, score
           FROM (SELECT name, round(power(random(), 6)::numeric, 5)::float8 AS score
                 FROM vulnerability WHERE deleted_at IS NULL AND random() < 0.8) x
           ORDER BY name) y`,
  ],
  [
    'kev',
    `INSERT INTO kev (cve, vendor_project, product, vulnerability_name, date_added, due_date, known_ransomware_campaign_use, required_action)
     SELECT DISTINCT ON (v.name) v.name, initcap(v.updater), f.name, f.name || ' out-of-bounds read', d, d + 21,
            CASE WHEN random() < 0.2 THEN 'Known' ELSE 'Unknown' END, 'Apply updates per vendor instructions.'
     FROM (SELECT id, name, updater FROM vulnerability WHERE deleted_at IS NULL AND severity >= 'High' ORDER BY random() LIMIT ${p.kevRows}) v
     JOIN vulnerability_fixedin fi ON fi.vulnerability_id = v.id JOIN feature f ON f.id = fi.feature_id
     CROSS JOIN LATERAL (SELECT current_date - floor(random() * 1200)::int AS d) x`,
  ],
  [
    'notification',
    `INSERT INTO notification (name, created_at, notified_at, deleted_at, old_vulnerability_id, new_vulnerability_id, next_delivery_at)
     SELECT gen_random_uuid()::text, at, at + interval '1 minute', CASE WHEN at < now() - interval '7 days' THEN at + interval '1 day' END,
            old_id, new_id, at + interval '2 hours'
     FROM (SELECT at, old_id, new_id FROM change
           UNION ALL
           SELECT * FROM (SELECT created_at, NULL::bigint, id FROM vulnerability WHERE deleted_at IS NULL AND id <= ${p.vulnerabilities}
                          ORDER BY created_at DESC LIMIT ${p.newNotified}) n) x
     ORDER BY at`,
  ],
];

/** A vulnerability source the seed says ran: its records and the changes of its last run. */
export interface SeededSource {
  name: string;
  records: number;
  changed: number;
}

/**
 * Feed states: each seeded source last succeeded 40 minutes ago; NVD, EPSS and KEV ran too; the
 * failing source's last attempt timed out. Written again at the start of a run on a seed kept from
 * an earlier one, so the data is as current as on the day it was seeded.
 */
export const updaterStateStep = (sources: readonly SeededSource[], failing: { name: string; url: string }, kevRows: number): SeedStep => [
  'updater_state',
  `INSERT INTO updater_state (name, fingerprint, last_attempt_at, last_success_at, last_error, record_count, next_run_at,
                              consecutive_failures, last_duration_ms, last_changed, data_updated_at)
   VALUES ${sources
     .map(
       (s) =>
         `('${s.name}', 'etag:"5f2a"', now() - interval '40 minutes', now() - interval '40 minutes', NULL, ${s.records},
           now() + interval '80 minutes', 0, 41200, ${s.changed}, now() - interval '40 minutes')`,
     )
     .join(',\n')},
          ('nvd', 'last-modified:2099-01-01', now() - interval '35 minutes', now() - interval '35 minutes', NULL, 245000,
           now() + interval '85 minutes', 0, 182000, 310, now() - interval '35 minutes'),
          ('epss', 'score_date:2099-01-01', now() - interval '3 hours', now() - interval '3 hours', NULL, 280000,
           now() - interval '1 hour', 0, 9300, 279000, now() - interval '3 hours'),
          ('kev', 'etag:"kev-1"', now() - interval '50 minutes', now() - interval '50 minutes', NULL, ${kevRows},
           now() + interval '70 minutes', 0, 800, 2, now() - interval '50 minutes'),
          ('${failing.name}', NULL, now() - interval '20 minutes', NULL, 'GET ${failing.url}: connect ETIMEDOUT',
           0, now() + interval '10 minutes', 4, 30000, 0, NULL)
   ON CONFLICT (name) DO UPDATE SET last_attempt_at = EXCLUDED.last_attempt_at, last_success_at = EXCLUDED.last_success_at,
     next_run_at = EXCLUDED.next_run_at, data_updated_at = EXCLUDED.data_updated_at`,
];

/**
 * Loads a large table with its indexes, primary and unique keys and foreign keys set aside, and
 * then puts them back from their own definitions (PostgreSQL's advice for populating a database:
 * one sort per index instead of an index insertion per row, one join per foreign key instead of a
 * lookup per row). The table must have no incoming foreign keys. Returns the time spent rebuilding.
 */
export async function loadWithoutIndexes(db: pg.ClientBase, table: string, load: () => Promise<void>): Promise<number> {
  const constraints = (
    await db.query<{ name: string; definition: string }>(
      `SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint
       WHERE conrelid = $1::regclass AND contype IN ('p', 'u', 'f') ORDER BY contype DESC, conname`,
      [table],
    )
  ).rows;
  const indexes = (
    await db.query<{ name: string; definition: string }>(
      `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE i.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`,
      [table],
    )
  ).rows;
  for (const c of constraints) await db.query(`ALTER TABLE ${table} DROP CONSTRAINT ${c.name}`);
  for (const i of indexes) await db.query(`DROP INDEX ${i.name}`);
  await load();
  const started = performance.now();
  for (const i of indexes) await db.query(i.definition);
  // Keys first, then the foreign keys (contype 'f' sorts before 'p' and 'u': reversed above).
  for (const c of constraints.toReversed()) await db.query(`ALTER TABLE ${table} ADD CONSTRAINT ${c.name} ${c.definition}`);
  return (performance.now() - started) / 1000;
}

/**
 * Every image's summary, as the refreshers compute them after a change that stales them all (a KEV
 * update): all marked stale, then claimed in batches under SKIP LOCKED on several connections and
 * computed by the server's own statement; then VACUUM ANALYZE, the steady state autovacuum would
 * reach (it is off on some servers).
 */
export async function computeEverySummary(databaseUrl: string, batch: number, connections: number): Promise<StepTime[]> {
  const pool = createPool({ connectionString: databaseUrl }, connections, pino({ level: 'silent' }));
  try {
    const started = performance.now();
    const { rowCount } = await pool.query(
      "INSERT INTO ancestry_summary (ancestry_id, counts, known_exploited, risk, stale) SELECT id, '{}', 0, '{}', true FROM ancestry",
    );
    // The changes the seed's writes queued for marking are covered: every summary is computed after them.
    await pool.query('DELETE FROM summary_change');
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while ((await withTransaction(pool, (client) => refreshStaleSummaries(client, batch))) > 0);
      }),
    );
    const steps = [
      {
        label: `ancestry_summary (all ${(rowCount ?? 0).toLocaleString('en')} stale, refreshed as the refreshers do)`,
        seconds: (performance.now() - started) / 1000,
      },
    ];
    const vacuumed = performance.now();
    await pool.query('VACUUM ANALYZE');
    steps.push({ label: 'VACUUM ANALYZE', seconds: (performance.now() - vacuumed) / 1000 });
    return steps;
  } finally {
    await pool.end();
  }
}
