import { Type } from '@sinclair/typebox';
import { VERSION_FORMAT_NAMES_TEXT } from '../ecosystems/index.js';
import { DATA_STATES } from '../model/coverage.js';
import { FIX_STATES, SEVERITIES } from '../model/vulnerability.js';
import { SKIP_REASONS } from '../sbom/read.js';
import { SCAN_REPORT_VERSION } from './report.js';

/**
 * The JSON schema of the scan report (report.ts), written with TypeBox: published as
 * docs/scan-report.schema.json, and the source of the report's types. A scan never loads it:
 * building it takes TypeBox and the format catalog, most of the start-up of `tarsier scan`, for a
 * report the scan assembles itself (findings.ts).
 */

export const ReportSeverity = Type.Union(
  SEVERITIES.map((s) => Type.Literal(s)),
  { description: "Clair's severity scale, least to most severe: Unknown, Negligible, Low, Medium, High, Critical, Defcon1." },
);

export const ReportPackage = Type.Object(
  {
    name: Type.String({ description: 'The package name, as the package database gives it.' }),
    version: Type.String(),
    namespace: Type.String({
      description: 'The distribution release it belongs to, e.g. debian:10, alpine:v3.18, rhel:8, or its ecosystem: npm, pypi, maven, ….',
    }),
    versionFormat: Type.String({ description: `How its versions compare: ${VERSION_FORMAT_NAMES_TEXT}.` }),
    purl: Type.String({ description: 'Package URL, e.g. pkg:deb/debian/openssl@1.1.1n-0+deb10u3?distro=debian-10.' }),
    layer: Type.Optional(Type.String({ description: 'Digest of the layer that added it; absent for a package an SBOM lists.' })),
  },
  { additionalProperties: false },
);

export const ReportCvss = Type.Object(
  {
    version: Type.Union([Type.Literal('3'), Type.Literal('2')]),
    score: Type.Number({ minimum: 0, maximum: 10 }),
    vector: Type.Optional(Type.String()),
    source: Type.String({ description: 'Who scored it, e.g. NVD.' }),
  },
  { additionalProperties: false },
);

export const ReportEpss = Type.Object(
  {
    score: Type.Number({ minimum: 0, maximum: 1, description: 'The probability of exploitation in the next 30 days (0 to 1).' }),
    percentile: Type.Number({ minimum: 0, maximum: 1, description: 'The share of scored CVEs with a lower or equal score (0 to 1).' }),
    date: Type.String({ description: 'The day FIRST scored it (YYYY-MM-DD).' }),
    cve: Type.String({
      description: 'The CVE scored: the id itself, or for an advisory (ALAS-…, RHSA-…) the one of its CVEs with the highest score.',
    }),
  },
  { additionalProperties: false, description: "FIRST's EPSS score, when the vulnerability or a CVE it lists has one." },
);

export const ReportKev = Type.Object(
  {
    dateAdded: Type.String({ description: 'When CISA added it to the catalog (YYYY-MM-DD).' }),
    dueDate: Type.String({ description: "CISA's remediation due date for US federal agencies (YYYY-MM-DD; empty when none)." }),
    knownRansomwareCampaignUse: Type.String({ description: 'Known or Unknown, as CISA writes it.' }),
    cve: Type.String({
      description: 'The CVE listed: the id itself, or for an advisory (ALAS-…, RHSA-…) the one of its CVEs CISA added first.',
    }),
  },
  {
    additionalProperties: false,
    description: "Present when CISA's Known Exploited Vulnerabilities catalog lists the vulnerability (or a CVE it lists).",
  },
);

export const ReportNamespace = Type.Object(
  {
    namespace: Type.String({ description: 'A namespace the image uses, e.g. debian:12.' }),
    state: Type.Union(
      DATA_STATES.map((s) => Type.Literal(s)),
      {
        description:
          'current: its data is at most --max-data-age old; stale: older, or of unknown age; missing: there is none, so its packages were not matched ' +
          '(a scan exits 2 on stale or missing data unless --allow-missing-data).',
      },
    ),
    updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When its data was last brought up to date (the freshest of its sources); null: none, or not recorded.',
    }),
    sources: Type.Array(Type.String(), {
      description: 'Who wrote its vulnerability records: updater sources (debian, rhel, …), or api for records written through the API.',
    }),
  },
  { additionalProperties: false },
);

export const ReportSkipped = Type.Object(
  {
    at: Type.String({ description: 'Where it is in the document: components[3].components[0], packages[7].' }),
    name: Type.Optional(Type.String()),
    purl: Type.Optional(Type.String({ description: 'Its package URL, when it has one.' })),
    reason: Type.Union(SKIP_REASONS.map((r) => Type.Literal(r))),
    why: Type.String({ description: 'The reason in words.' }),
  },
  { additionalProperties: false },
);

export const ReportUnread = Type.Object(
  {
    count: Type.Integer({ minimum: 0, description: "How many files of the image's layers could not be read." }),
    files: Type.Array(
      Type.Object(
        {
          layer: Type.String({ description: 'Digest of the layer that holds it.' }),
          location: Type.String({ description: 'The file in the layer (`app/app.jar!/BOOT-INF/lib/x.jar` inside an archive).' }),
          why: Type.String(),
        },
        { additionalProperties: false },
      ),
      { description: 'The first 100 of each layer.' },
    ),
  },
  {
    additionalProperties: false,
    description:
      'Image targets: files that may hold packages but could not be read (a manifest that does not parse, a program or archive over the limits). Their packages are not in packages: not found is not the same as not installed.',
  },
);

const findingFields = {
  id: Type.String({ description: 'The vulnerability name: a CVE, or an advisory id (DSA-…, ALAS-…, RHSA-…).' }),
  namespace: Type.String({ description: 'The namespace of the advisory that lists it.' }),
  severity: ReportSeverity,
  description: Type.String(),
  link: Type.String({ description: 'Where the advisory is published; may be empty.' }),
  package: ReportPackage,
  fixedBy: Type.Union([Type.String(), Type.Null()], { description: 'The version that fixes it; null when there is no fix yet.' }),
  fixState: Type.Union(
    FIX_STATES.filter((s) => s !== 'not_affected').map((s) => Type.Literal(s)),
    { description: 'fixed (fixedBy is the fix), affected (no fix yet), or what the source says: will_not_fix, fix_deferred.' },
  ),
  cvss: Type.Optional(ReportCvss),
  epss: Type.Optional(ReportEpss),
  kev: Type.Optional(ReportKev),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "The source's metadata, as the v1 API gives it." })),
};

export const Finding = Type.Object(findingFields, {
  additionalProperties: false,
  description: 'One vulnerability affecting one package.',
});

export const IgnoredFinding = Type.Object(
  {
    ...findingFields,
    ignored: Type.Object(
      {
        because: Type.Union([Type.Literal('unfixed'), Type.Literal('ignore-file')]),
        reason: Type.Optional(Type.String()),
        expires: Type.Optional(Type.String({ description: 'The ignore entry applies until this date (YYYY-MM-DD).' })),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: 'A finding left out of the gate and the outputs, and why.' },
);

export const ScanReport = Type.Object(
  {
    schemaVersion: Type.Literal(SCAN_REPORT_VERSION),
    tool: Type.Object({ name: Type.Literal('tarsier'), version: Type.String() }, { additionalProperties: false }),
    createdAt: Type.String({ format: 'date-time' }),
    target: Type.Object(
      {
        input: Type.String({ description: 'The TARGET as given on the command line.' }),
        kind: Type.Union([Type.Literal('docker-archive'), Type.Literal('oci-layout'), Type.Literal('registry'), Type.Literal('sbom')]),
        digest: Type.String({
          description:
            'The manifest digest; for a docker save archive without one (before Docker 25), the image ID (config digest); ' +
            "for an SBOM, the sha256 of the document's bytes.",
        }),
        platform: Type.Union([Type.String(), Type.Null()], { description: 'os/architecture[/variant], when known.' }),
        references: Type.Array(Type.String(), {
          description: "The names the archive or registry gives the image (repo:tag); an SBOM's own name, when it gives one.",
        }),
      },
      { additionalProperties: false },
    ),
    layers: Type.Array(Type.String(), { description: 'Layer digests, base first; none for an SBOM.' }),
    database: Type.Object(
      {
        mode: Type.Union([Type.Literal('server'), Type.Literal('standalone')]),
        server: Type.Optional(Type.String({ description: 'The server scanned against (server mode).' })),
        updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
          description:
            "When the data the image was matched against was last brought up to date: the oldest of its namespaces' (see namespaces); " +
            'null when one of them has none, or the image holds no package of a distribution.',
        }),
        namespaces: Type.Array(ReportNamespace, {
          description: "The vulnerability data behind the answer, per namespace the image's packages are matched in.",
        }),
      },
      { additionalProperties: false },
    ),
    packages: Type.Array(ReportPackage, { description: 'Every package found, vulnerable or not.' }),
    skipped: Type.Optional(
      Type.Array(ReportSkipped, {
        description: 'SBOM targets: every component or package the document lists that is not matched, and why (not in packages).',
      }),
    ),
    unread: Type.Optional(ReportUnread),
    vulnerabilities: Type.Array(Finding, { description: 'Findings that remain after --ignore-unfixed and --ignore.' }),
    ignored: Type.Array(IgnoredFinding),
    summary: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), {
      description: 'Distinct vulnerability ids among the remaining findings, per severity (each at its highest severity).',
    }),
    knownExploited: Type.Integer({
      minimum: 0,
      description: "Distinct vulnerability ids among the remaining findings that CISA's KEV catalog lists (those with kev).",
    }),
    gate: Type.Object(
      {
        failOn: Type.Union([ReportSeverity, Type.Null()]),
        failOnKev: Type.Boolean({ description: 'Whether a remaining finding with kev fails the gate (--fail-on-kev).' }),
        failed: Type.Boolean({
          description: 'Whether a remaining finding is at or above failOn, or has kev when failOnKev is set (exit code 1).',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'Tarsier scan report' },
);
