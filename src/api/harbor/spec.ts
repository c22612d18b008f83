import { Type, type Static } from '@sinclair/typebox';
import { cvssScores } from '../../model/cvss.js';
import { MEDIA_TYPES } from '../../registry/manifest.js';

/**
 * Harbor's Pluggable Scanner API v1.1 (served at /api/v1): the wire format, as TypeBox schemas and
 * constants. No routes here.
 *
 * Sources (read field by field):
 * - [spec]   goharbor/pluggable-scanner-spec api/spec/scanner-adapter-openapi-v1.1.yaml (and v1.2 for
 *            the fields Harbor now sends), README.md; commit d898c3d7.
 * - [client] goharbor/harbor src/pkg/scan/rest/v1/{spec,client,models}.go, src/pkg/scan/job.go,
 *            src/pkg/scan/vuln/{report,severity}.go, src/pkg/scan/postprocessors/report_converters.go;
 *            commit c50c7ddd. This is what Harbor actually sends and reads.
 * - [trivy]  goharbor/harbor-scanner-trivy pkg/http/api/v1/handler.go, pkg/http/api/base_handler.go,
 *            pkg/harbor/model.go; commit 0d3fb521 (the reference adapter).
 * - [clair]  goharbor/harbor-scanner-clair pkg/scanner/transformer.go; commit a80ecc00.
 */

// MIME types ------------------------------------------------------------------------------------

/** GET /metadata: Harbor's Accept, and the 200 Content-Type ([spec]; [client] spec.go MimeTypeAdapterMeta). */
export const MIME_METADATA = 'application/vnd.scanner.adapter.metadata+json; version=1.0';
/** POST /scan: the Content-Type Harbor sends ([spec]; [client] spec.go MimeTypeScanRequest). */
export const MIME_SCAN_REQUEST = 'application/vnd.scanner.adapter.scan.request+json; version=1.0';
/** POST /scan: Harbor's Accept, and the 202 Content-Type ([spec]; [client] spec.go MimeTypeScanResponse). */
export const MIME_SCAN_RESPONSE = 'application/vnd.scanner.adapter.scan.response+json; version=1.0';
/**
 * The v1.1 vulnerability report (HarborVulnerabilityReport with preferred_cvss, cwe_ids,
 * vendor_attributes): the Accept of GET /scan/{id}/report and its 200 Content-Type
 * ([spec]; [client] spec.go MimeTypeGenericVulnerabilityReport). Its media type has no "json" in it.
 */
export const MIME_VULN_REPORT_V1_1 = 'application/vnd.security.vulnerability.report; version=1.1';
/** Every error answer's Content-Type, whatever its status ([spec] v1.2: 400, 422, 500, 501 of each operation). */
export const MIME_ERROR = 'application/vnd.scanner.adapter.error+json; version=1.0';
/** The deprecated v1.0 report type: the same HarborVulnerabilityReport schema ([spec]; [client] MimeTypeNativeReport). */
export const MIME_NATIVE_REPORT_V1_0 = 'application/vnd.scanner.adapter.vuln.report.harbor+json; version=1.0';
/** Artifact MIME types the spec names ([spec] "Supported consumed MIME types"; [client] spec.go). */
export const MIME_OCI_IMAGE_MANIFEST = MEDIA_TYPES.ociManifest;
/** Harbor refuses metadata whose every capability does not consume this one ([client] models.go Validate). */
export const MIME_DOCKER_MANIFEST_V2 = MEDIA_TYPES.dockerManifest;
export const CONSUMED_MIME_TYPES: readonly string[] = [MIME_OCI_IMAGE_MANIFEST, MIME_DOCKER_MANIFEST_V2];

// Headers and metadata properties ---------------------------------------------------------------

/**
 * 302 from GET /scan/{id}/report: seconds until Harbor asks again. Harbor parses it with
 * strconv.ParseInt(v, 10, 8): an integer up to 127; anything else (or no header) means 5 s
 * ([client] client.go reportResponseHandler, defaultRefreshInterval).
 */
export const REFRESH_AFTER_HEADER = 'Refresh-After';
/** The largest Refresh-After Harbor can parse (int8). */
export const REFRESH_AFTER_MAX_SECONDS = 127;

/** Metadata property keys: [spec] ScannerProperties example; [trivy] handler.go; Harbor portal utils.ts (dates shown as dates). */
export const PROPERTY_SCANNER_TYPE = 'harbor.scanner-adapter/scanner-type';
export const PROPERTY_DB_UPDATED_AT = 'harbor.scanner-adapter/vulnerability-database-updated-at';
/**
 * "Basic" (default) or "Bearer": how Harbor fills ScanRequest.registry.authorization. Bearer makes
 * Harbor fetch a pull token for the repository from its token service first
 * ([client] pkg/scan/dao/scanner/model.go GetRegistryAuthorizationType, pkg/scan/job.go).
 */
export const PROPERTY_REGISTRY_AUTHORIZATION_TYPE = 'harbor.scanner-adapter/registry-authorization-type';

// Schemas ---------------------------------------------------------------------------------------

/** [spec] Severity; [client] vuln/severity.go (Harbor's internal "None" is not on the wire). */
export const Severity = Type.Union(
  [
    Type.Literal('Unknown'),
    Type.Literal('Negligible'),
    Type.Literal('Low'),
    Type.Literal('Medium'),
    Type.Literal('High'),
    Type.Literal('Critical'),
  ],
  { description: 'Harbor severity scale.' },
);
export type Severity = Static<typeof Severity>;
/** Lowest first, as [spec] lists them and [client] severity.go Code() orders them. */
export const SEVERITIES: readonly Severity[] = ['Unknown', 'Negligible', 'Low', 'Medium', 'High', 'Critical'];

/** [spec] Scanner. Harbor refuses metadata with any of the three empty ([client] models.go Validate). */
export const Scanner = Type.Object({
  name: Type.String({ minLength: 1, example: 'Tarsier' }),
  vendor: Type.String({ minLength: 1 }),
  version: Type.String({ minLength: 1 }),
});
export type Scanner = Static<typeof Scanner>;

/**
 * [spec] ScannerCapability (consumes_mime_types and produces_mime_types required). `type` is from
 * v1.2; Harbor reads it, and treats a capability without it as "vulnerability" ([client] models.go,
 * dao/scanner/model.go GetProducesMimeTypes). Harbor GETs the report once per produced type.
 */
export const ScannerCapability = Type.Object({
  type: Type.Optional(Type.Union([Type.Literal('vulnerability'), Type.Literal('sbom')])),
  consumes_mime_types: Type.Array(Type.String()),
  produces_mime_types: Type.Array(Type.String()),
});
export type ScannerCapability = Static<typeof ScannerCapability>;

/** [spec] ScannerProperties: string → string. */
export const ScannerProperties = Type.Record(Type.String(), Type.String());
export type ScannerProperties = Static<typeof ScannerProperties>;

/** [spec] ScannerAdapterMetadata: scanner and capabilities required; Harbor also needs ≥ 1 capability. */
export const ScannerAdapterMetadata = Type.Object({
  scanner: Scanner,
  capabilities: Type.Array(ScannerCapability, { minItems: 1 }),
  properties: Type.Optional(ScannerProperties),
});
export type ScannerAdapterMetadata = Static<typeof ScannerAdapterMetadata>;

/**
 * [spec] Registry (no required field). Harbor always sends url (its external URL, or its internal
 * core URL when the registration sets use_internal_addr), authorization ("Basic base64(robot:secret)",
 * "Bearer <JWT>", or "" if making the token failed) and insecure (false for vulnerability scans)
 * ([client] models.go Registry, controller/scan/base_controller.go launchScanJob, job.go Run).
 */
export const Registry = Type.Object({
  url: Type.Optional(Type.String({ example: 'https://core.harbor.domain' })),
  authorization: Type.Optional(Type.String({ example: 'Basic BASE64_ENCODED_CREDENTIALS' })),
  insecure: Type.Optional(Type.Boolean()),
});
export type Registry = Static<typeof Registry>;

/**
 * [spec] Artifact (no required field); namespace_id and size are Harbor's additions ([client]
 * models.go: namespace_id is zeroed and so omitted before sending; size is always sent; tag is ""
 * for an untagged artifact). Also the `artifact` of the report.
 */
export const Artifact = Type.Object({
  namespace_id: Type.Optional(Type.Integer()),
  repository: Type.Optional(Type.String({ example: 'library/mongo' })),
  digest: Type.Optional(Type.String({ example: 'sha256:6c3c624b58dbbcd3c0dd82b4c53f04194d1247c6eebdaab7c610cf7d66709b3b' })),
  tag: Type.Optional(Type.String()),
  mime_type: Type.Optional(Type.String()),
  size: Type.Optional(Type.Integer()),
});
export type Artifact = Static<typeof Artifact>;

/**
 * v1.2's enabled_capabilities item, which Harbor sends in every request: for a vulnerability scan
 * `{"type":"vulnerability","produces_mime_types":["application/vnd.security.vulnerability.report; version=1.1"],"parameters":null}`
 * ([client] models.go ScanType, job.go ExtractScanReq, vulnerability/vul.go RequestProducesMineTypes).
 */
export const EnabledCapability = Type.Object({
  type: Type.Optional(Type.String()),
  produces_mime_types: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
  parameters: Type.Optional(Type.Unknown()),
});
export type EnabledCapability = Static<typeof EnabledCapability>;

/**
 * [spec] ScanRequest: registry and artifact required. Unknown fields are allowed everywhere (Harbor
 * adds fields over time). Check the fields the scan needs with {@link scanRequestProblem} (422).
 */
export const ScanRequest = Type.Object({
  registry: Registry,
  artifact: Artifact,
  enabled_capabilities: Type.Optional(Type.Union([Type.Array(EnabledCapability), Type.Null()])),
});
export type ScanRequest = Static<typeof ScanRequest>;

/** [spec] ScanResponse: id required (any unique string). */
export const ScanResponse = Type.Object({ id: Type.String({ minLength: 1, example: '3fa85f64-5717-4562-b3fc-2c963f66afa6' }) });
export type ScanResponse = Static<typeof ScanResponse>;

/** [spec] CVSSDetails (all optional; Harbor reads nil scores as absent: [client] vuln/report.go CVSS). */
export const CVSSDetails = Type.Object({
  score_v3: Type.Optional(Type.Number()),
  score_v2: Type.Optional(Type.Number()),
  vector_v3: Type.Optional(Type.String({ example: 'CVSS:3.0/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:N/A:N' })),
  vector_v2: Type.Optional(Type.String({ example: 'AV:N/AC:L/Au:N/C:N/I:N/A:P' })),
});
export type CVSSDetails = Static<typeof CVSSDetails>;

/**
 * [spec] VulnerabilityItem (the spec requires nothing; Tarsier always sends id, package, version,
 * severity: Harbor keys a finding on id-package-version, [client] vuln/report.go Key). fix_version:
 * omit it or send "" when there is no fix; Harbor counts any non-empty value as fixable.
 */
export const VulnerabilityItem = Type.Object({
  id: Type.String({ example: 'CVE-2017-8283' }),
  package: Type.String({ example: 'dpkg' }),
  version: Type.String({ example: '1.17.27' }),
  fix_version: Type.Optional(Type.String({ example: '1.18.0' })),
  severity: Severity,
  description: Type.Optional(Type.String()),
  links: Type.Optional(Type.Array(Type.String())),
  preferred_cvss: Type.Optional(CVSSDetails),
  cwe_ids: Type.Optional(Type.Array(Type.String())),
  vendor_attributes: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type VulnerabilityItem = Static<typeof VulnerabilityItem>;

/**
 * [spec] HarborVulnerabilityReport (nothing required by the spec). Tarsier always sends
 * vulnerabilities (an empty list when clean: Harbor issue 11131), and severity only when there is a
 * finding (as [trivy] does; Harbor recomputes it from the items anyway: report/summary.go).
 */
export const HarborVulnerabilityReport = Type.Object({
  generated_at: Type.String({ description: 'RFC 3339 date-time.' }),
  artifact: Artifact,
  scanner: Scanner,
  severity: Type.Optional(Severity),
  vulnerabilities: Type.Array(VulnerabilityItem),
});
export type HarborVulnerabilityReport = Static<typeof HarborVulnerabilityReport>;

/** [spec] ErrorResponse; Harbor appends error.message to its job error ([client] client.go generalRespHandlerFunc). */
export const ErrorResponse = Type.Object({ error: Type.Object({ message: Type.String() }) });
export type ErrorResponse = Static<typeof ErrorResponse>;

// Helpers ---------------------------------------------------------------------------------------

const TO_HARBOR: ReadonlyMap<string, Severity> = new Map<string, Severity>([
  ['unknown', 'Unknown'],
  ['negligible', 'Negligible'],
  ['low', 'Low'],
  ['medium', 'Medium'],
  ['high', 'High'],
  ['critical', 'Critical'],
  // Clair: "Defcon1 is a Critical problem which has been manually highlighted by the team"
  // (quay/clair database/severity.go). Harbor's scale has nothing above Critical. [clair]'s
  // toHarborSeverity has no case for it (it would log and answer Unknown); Critical keeps the rank.
  ['defcon1', 'Critical'],
]);

/**
 * Tarsier/Clair severity (case-insensitive) → Harbor's. Anything unrecognized is Unknown, as in
 * [clair] transformer.go toHarborSeverity. Note: Harbor stores Negligible as "None" ([client]
 * severity.go ParseSeverityVersion3).
 */
export function harborSeverity(tarsierSeverity: string): Severity {
  return TO_HARBOR.get(tarsierSeverity.trim().toLowerCase()) ?? 'Unknown';
}

/** The highest of the given severities; undefined for none (then leave the report's severity out). */
export function highestSeverity(severities: Iterable<Severity>): Severity | undefined {
  let best: Severity | undefined;
  for (const s of severities) if (best === undefined || SEVERITIES.indexOf(s) > SEVERITIES.indexOf(best)) best = s;
  return best;
}

/** RFC 7235 auth-scheme followed by a token68 credential (Base64 for Basic, a JWT for Bearer). */
const AUTHORIZATION = /^(basic|bearer) +[A-Za-z0-9\-._~+/]+=*$/i;

/**
 * The headers to send to the registry for ScanRequest.registry.authorization. Harbor sends exactly
 * `Basic base64(robot$name:secret)` (the default) or `Bearer <JWT>` (when the metadata property
 * {@link PROPERTY_REGISTRY_AUTHORIZATION_TYPE} is "Bearer") ([client] job.go makeBasicAuthorization,
 * makeBearerAuthorization); the value goes through unchanged. Empty or absent (the spec calls it
 * optional; Harbor sends "" when it could not make the token) means no header, as [trivy]'s
 * controller.go ToRegistryAuth reads it. Anything else throws.
 */
export function parseRegistryAuthorization(value: string | undefined): Readonly<Record<string, string>> {
  if (value === undefined || value === '') return {};
  if (!AUTHORIZATION.test(value)) throw new Error('registry.authorization must be "Basic <credentials>" or "Bearer <token>"');
  return { Authorization: value };
}

/** OCI digest grammar: algorithm ":" encoded (opencontainers/image-spec descriptor.md). */
const DIGEST = /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;

/**
 * Why a schema-valid ScanRequest cannot be scanned, for a 422 ("Received invalid field", [spec]);
 * undefined when it can. Harbor itself requires registry.url, artifact.repository, .digest and
 * .mime_type ([client] models.go ScanRequest.Validate); [trivy] answers 422 for the first three.
 */
export function scanRequestProblem(request: ScanRequest): string | undefined {
  const { registry, artifact } = request;
  if (!registry.url) return 'missing registry.url';
  let url: URL;
  try {
    url = new URL(registry.url);
  } catch {
    return 'invalid registry.url';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'invalid registry.url: not http(s)';
  try {
    parseRegistryAuthorization(registry.authorization);
  } catch (err) {
    return (err as Error).message;
  }
  if (!artifact.repository) return 'missing artifact.repository';
  if (!artifact.digest) return 'missing artifact.digest';
  if (!DIGEST.test(artifact.digest)) return 'invalid artifact.digest';
  if (artifact.mime_type && !CONSUMED_MIME_TYPES.includes(artifact.mime_type))
    return `unsupported artifact.mime_type ${JSON.stringify(artifact.mime_type)}`;
  return undefined;
}

/**
 * The report type to answer for an Accept header. Harbor sends exactly one of the produced types it
 * read from the metadata ([client] spec.go GetScanReport). Both report types share one schema.
 * No Accept: the v1.0 type, as [spec] README says ("assumed ... for backward compatibility").
 * undefined: nothing Tarsier produces was asked for.
 */
export function reportMimeType(accept: string | undefined): string | undefined {
  if (accept === undefined || accept.trim() === '') return MIME_NATIVE_REPORT_V1_0;
  let fallback: string | undefined;
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((p) =>
      p
        .trim()
        .toLowerCase()
        .replace(/\s*=\s*/, '='),
    );
    if (type === 'application/vnd.security.vulnerability.report' && params.includes('version=1.1')) return MIME_VULN_REPORT_V1_1;
    if (type === 'application/vnd.scanner.adapter.vuln.report.harbor+json' && params.includes('version=1.0'))
      fallback ??= MIME_NATIVE_REPORT_V1_0;
    if (type === '*/*' || type === 'application/*') fallback ??= MIME_VULN_REPORT_V1_1;
  }
  return fallback;
}

/** The capability Tarsier declares in its metadata: the only one a scan request may enable. */
export const CAPABILITY_TYPE = 'vulnerability';

/**
 * Why Tarsier cannot do what a request's enabled_capabilities asks, for a 501 ("The scanner has no
 * capability to handle the scan request", [spec] v1.2); undefined when it can. Each enabled
 * capability must be the one the metadata declares (a capability without a type is that one, as
 * the spec reads it), and one that lists the report types it wants must list one Tarsier produces.
 * No enabled_capabilities: every declared capability ([spec]).
 */
export function unsupportedCapability(request: ScanRequest): string | undefined {
  for (const capability of request.enabled_capabilities ?? []) {
    const type = capability.type ?? CAPABILITY_TYPE;
    if (type !== CAPABILITY_TYPE) {
      return `Tarsier has no ${JSON.stringify(type)} capability: it produces vulnerability reports only (GET /api/v1/metadata)`;
    }
    const wanted = (capability.produces_mime_types ?? []).filter((mime) => mime.trim() !== '');
    if (wanted.length > 0 && !wanted.some((mime) => reportMimeType(mime) !== undefined)) {
      return `Tarsier produces none of the report types ${JSON.stringify(wanted)}: it produces ${MIME_VULN_REPORT_V1_1}`;
    }
  }
  return undefined;
}

/** preferred_cvss from a Tarsier vulnerability's metadata; undefined when it has no score (then leave preferred_cvss out). */
export function preferredCvss(metadata: Readonly<Record<string, unknown>> | null | undefined): CVSSDetails | undefined {
  const scores = cvssScores(metadata);
  if (!scores) return undefined;
  return {
    ...(scores.v3 ? { score_v3: scores.v3.score, ...(scores.v3.vector ? { vector_v3: scores.v3.vector } : {}) } : {}),
    ...(scores.v2 ? { score_v2: scores.v2.score, ...(scores.v2.vector ? { vector_v2: scores.v2.vector } : {}) } : {}),
  };
}
