import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { VERSION_FORMAT_NAMES_TEXT } from '../../ecosystems/index.js';
import { SEVERITIES } from '../../model/vulnerability.js';
import { DEFAULT_NOTIFICATION_PAGE, MAX_NAME_LENGTH, MAX_PAGE_LIMIT } from '../limits.js';

/**
 * The v1 API's schemas: what each route accepts (checked before the handler runs) and answers
 * (serialized through them), and so the OpenAPI document. Both revisions' shapes are accepted
 * (Namespace or NamespaceName), unknown fields are ignored, and field names match
 * case-insensitively (as Go's decoder did for Clair clients): normalizeFieldNames rewrites them to
 * the canonical spelling before validation.
 */
const CANONICAL_FIELDS = [
  'Layer',
  'Name',
  'Path',
  'Headers',
  'Authorization',
  'ParentName',
  'Format',
  'IndexedByVersion',
  'Vulnerability',
  'Namespace',
  'NamespaceName',
  'Description',
  'Link',
  'Severity',
  'Metadata',
  'FixedIn',
  'FixedBy',
  'Feature',
  'Version',
  'VersionFormat',
  'AddedBy',
  'Features',
  'Vulnerabilities',
] as const;

const BY_LOWER_CASE = new Map<string, string>(CANONICAL_FIELDS.map((f) => [f.toLowerCase(), f]));

/** Fields whose content is free-form and keeps its keys as sent. */
const OPAQUE_FIELDS = new Set(['Metadata', 'Headers']);

export function normalizeFieldNames(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalizeFieldNames);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    const canonical = BY_LOWER_CASE.get(key.toLowerCase()) ?? key;
    // An exact spelling wins over a case-variant of the same field.
    if (canonical !== key && Object.hasOwn(value, canonical)) continue;
    out[canonical] = OPAQUE_FIELDS.has(canonical) ? inner : normalizeFieldNames(inner);
  }
  return out;
}

const name = (description: string) => Type.String({ maxLength: MAX_NAME_LENGTH, description });
const optional = <T extends TSchema>(schema: T) => Type.Optional(schema);
const orNull = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const NAMESPACE_A = 'The namespace (revision A).';
const NAMESPACE_B = 'The namespace (revision B).';

// Requests -------------------------------------------------------------------------------------

export const FeatureInput = Type.Object({
  Name: optional(name('The package: a source package (dpkg), origin (apk) or binary package (rpm).')),
  Namespace: optional(name(NAMESPACE_A)),
  NamespaceName: optional(name(NAMESPACE_B)),
  VersionFormat: optional(Type.String({ description: `${VERSION_FORMAT_NAMES_TEXT}; read only for namespaces Tarsier does not know.` })),
  Version: optional(Type.String({ description: 'The first fixed version, or "None" when no fix exists.' })),
});
export type FeatureInput = Static<typeof FeatureInput>;

export const VulnerabilityInput = Type.Object({
  Name: optional(name('The vulnerability, e.g. CVE-2023-5678.')),
  Namespace: optional(name(NAMESPACE_A)),
  NamespaceName: optional(name(NAMESPACE_B)),
  Description: optional(Type.String()),
  Link: optional(Type.String()),
  Severity: optional(Type.String({ description: `One of ${SEVERITIES.join(', ')} (case-insensitive).` })),
  Metadata: optional(
    orNull(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          'Free-form JSON kept as given, e.g. {"NVD":{"CVSSv3":{"Score":7.5,"Vectors":"…"}}}; the whole body nests at most 32 levels.',
      }),
    ),
  ),
  FixedIn: optional(orNull(Type.Array(FeatureInput))),
});
export type VulnerabilityInput = Static<typeof VulnerabilityInput>;

export const VulnerabilityEnvelope = Type.Object({ Vulnerability: VulnerabilityInput });
export const FeatureEnvelope = Type.Object({ Feature: FeatureInput });

export const LayerInput = Type.Object({
  Name: optional(name('The layer name the client chooses (e.g. a digest); at most 1,024 characters.')),
  Path: optional(Type.String({ description: 'Where to download the layer: an http(s) URL, or a local file under api.localroots.' })),
  Headers: optional(
    orNull(
      Type.Record(Type.String(), Type.String(), { description: 'Headers sent with the download (e.g. Authorization); never stored.' }),
    ),
  ),
  Authorization: optional(Type.String({ description: 'The Authorization header of the download (revision B); never stored.' })),
  ParentName: optional(name('The parent layer, which must be indexed already; empty or absent for a base layer.')),
  Format: optional(Type.String({ description: 'Docker (also OCI) or ACI, case-insensitive.' })),
});
export type LayerInput = Static<typeof LayerInput>;

export const LayerEnvelope = Type.Object({ Layer: LayerInput });

export const LayerParams = Type.Object({ name: name('The layer name.') });
export const NamespaceParams = Type.Object({ ns: name('The namespace, URL-encoded (debian%3A12).') });
export const VulnerabilityParams = Type.Object({ ns: NamespaceParams.properties.ns, name: name('The vulnerability name.') });
export const FixParams = Type.Object({ ...VulnerabilityParams.properties, feature: name('The fixed package.') });
export const NotificationParams = Type.Object({ name: name('The notification name.') });

/** A presence flag: on when present (`?features`), off when absent or given as false or 0. */
const flag = (description: string) =>
  optional(Type.String({ description: `${description} A presence flag: ?x turns it on, ?x=false or ?x=0 off.` }));
const limit = (options: { default?: number }) =>
  Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, description: `Items per page (1 to ${MAX_PAGE_LIMIT}).`, ...options });
const page = optional(Type.String({ description: 'The NextPage token of the previous page (valid for one hour).' }));

export const LayerQuery = Type.Object({
  features: flag('List the packages of the layer and its parents.'),
  vulnerabilities: flag('List the packages with the vulnerabilities affecting each (implies features).'),
});
export const VulnerabilityListQuery = Type.Object({ limit: limit({}), page });
export const VulnerabilityQuery = Type.Object({ fixedIn: flag('Include the FixedIn list.') });
export const NotificationQuery = Type.Object({ limit: optional(limit({ default: DEFAULT_NOTIFICATION_PAGE })), page });

/** Every v1 route reads this header; a value other than A or B is refused before any work. */
export const RevisionHeaders = Type.Object({
  'x-clair-api-revision': optional(
    Type.Unsafe<'A' | 'B' | 'a' | 'b'>({
      type: 'string',
      enum: ['A', 'B', 'a', 'b'],
      description: 'The output revision: A writes Namespace, B NamespaceName and VersionFormat. Default: api.v1revision (B).',
    }),
  ),
});

// Responses ------------------------------------------------------------------------------------

export const ErrorBody = Type.Object(
  { Error: Type.Object({ Message: Type.String({ description: 'What is wrong and what to do.' }) }) },
  { description: 'An error, with a message a person can act on.' },
);

const namespaced = {
  Namespace: optional(Type.String({ description: NAMESPACE_A })),
  NamespaceName: optional(Type.String({ description: NAMESPACE_B })),
};

export const FeatureOutput = Type.Object({
  Name: Type.String(),
  ...namespaced,
  VersionFormat: optional(Type.String({ description: `${VERSION_FORMAT_NAMES_TEXT} (revision B).` })),
  Version: Type.String({ description: 'The fixed version, or "None" when no fix exists.' }),
});

export const VulnerabilityOutput = Type.Object({
  Name: Type.String(),
  ...namespaced,
  Description: optional(Type.String()),
  Link: optional(Type.String()),
  Severity: optional(Type.Unsafe<string>({ type: 'string', enum: [...SEVERITIES] })),
  Metadata: optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Source metadata, e.g. NVD CVSS scores.' })),
  FixedBy: optional(Type.String({ description: 'In a layer report: the version that fixes the package; absent when no fix exists.' })),
  FixedIn: optional(Type.Array(FeatureOutput)),
});

const LayerFeatureOutput = Type.Object({
  Name: Type.String(),
  ...namespaced,
  VersionFormat: optional(Type.String({ description: `${VERSION_FORMAT_NAMES_TEXT} (revision B).` })),
  Version: Type.String(),
  AddedBy: Type.String({ description: 'The layer that introduced this package version.' }),
  Vulnerabilities: optional(Type.Array(VulnerabilityOutput)),
});

export const LayerReport = Type.Object({
  Layer: Type.Object({
    Name: Type.String(),
    ...namespaced,
    ParentName: optional(Type.String()),
    IndexedByVersion: Type.Integer({ description: 'The indexer version that read the layer.' }),
    Features: optional(Type.Array(LayerFeatureOutput)),
  }),
});

export const PostedLayer = Type.Object({
  Layer: Type.Object({
    ...LayerInput.properties,
    IndexedByVersion: Type.Integer({ description: 'The indexer version that read the layer.' }),
  }),
});

export const NamespaceList = Type.Object({
  Namespaces: Type.Array(
    Type.Union([
      Type.String({ description: 'Revision A: the name.' }),
      Type.Object({ Name: Type.String(), VersionFormat: Type.String() }, { description: 'Revision B.' }),
    ]),
  ),
});

export const VulnerabilityList = Type.Object({
  Vulnerabilities: Type.Array(VulnerabilityOutput),
  NextPage: optional(Type.String({ description: 'The token of the next page; absent on the last page.' })),
});

export const VulnerabilityResponse = Type.Object({ Vulnerability: VulnerabilityOutput });
export const FixList = Type.Object({ Features: Type.Array(FeatureOutput) });
export const FixResponse = Type.Object({ Feature: FeatureOutput });

const NotificationSide = Type.Object({
  Vulnerability: VulnerabilityOutput,
  LayersIntroducingVulnerability: Type.Array(Type.String()),
  OrderedLayersIntroducingVulnerability: Type.Array(Type.Object({ Index: Type.Integer(), LayerName: Type.String() })),
});

export const NotificationResponse = Type.Object({
  Notification: Type.Object({
    Name: Type.String(),
    Created: Type.String({ description: 'Unix seconds.' }),
    Notified: optional(Type.String({ description: 'Unix seconds: when it was delivered.' })),
    Deleted: optional(Type.String({ description: 'Unix seconds: when it was marked read.' })),
    Limit: Type.Integer(),
    Page: Type.String(),
    NextPage: optional(Type.String({ description: 'Absent on the last page.' })),
    Old: optional(NotificationSide),
    New: optional(NotificationSide),
  }),
});

/** A 200 with no body (DELETE): OpenAPI shows no content for a null schema, and Fastify sends nothing for no payload. */
export const Empty = Type.Unsafe<void>({ type: 'null', description: 'Done (no body).' });
