import { Type, type Static } from '@sinclair/typebox';

/**
 * Request bodies of the v1 API. Both revisions' shapes are accepted (Namespace or NamespaceName),
 * unknown fields are ignored, and field names match case-insensitively (as Go's decoder did for
 * Clair clients): normalizeFieldNames rewrites them to the canonical spelling before validation.
 */
const CANONICAL_FIELDS = [
  'Layer', 'Name', 'Path', 'Headers', 'Authorization', 'ParentName', 'Format', 'IndexedByVersion',
  'Vulnerability', 'Namespace', 'NamespaceName', 'Description', 'Link', 'Severity', 'Metadata',
  'FixedIn', 'FixedBy', 'Feature', 'Version', 'VersionFormat', 'AddedBy', 'Features', 'Vulnerabilities',
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

const OptionalString = Type.Optional(Type.String());

export const FeatureInput = Type.Object({
  Name: OptionalString,
  Namespace: OptionalString,
  NamespaceName: OptionalString,
  VersionFormat: OptionalString,
  Version: OptionalString,
});
export type FeatureInput = Static<typeof FeatureInput>;

export const VulnerabilityInput = Type.Object({
  Name: OptionalString,
  Namespace: OptionalString,
  NamespaceName: OptionalString,
  Description: OptionalString,
  Link: OptionalString,
  Severity: OptionalString,
  Metadata: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  FixedIn: Type.Optional(Type.Union([Type.Array(FeatureInput), Type.Null()])),
});
export type VulnerabilityInput = Static<typeof VulnerabilityInput>;

export const VulnerabilityEnvelope = Type.Object({ Vulnerability: VulnerabilityInput });
export const FeatureEnvelope = Type.Object({ Feature: FeatureInput });

export const LayerInput = Type.Object({
  Name: OptionalString,
  Path: OptionalString,
  Headers: Type.Optional(Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()])),
  Authorization: OptionalString,
  ParentName: OptionalString,
  Format: OptionalString,
});
export type LayerInput = Static<typeof LayerInput>;

export const LayerEnvelope = Type.Object({ Layer: LayerInput });
export const LayerParams = Type.Object({ name: Type.String() });

export const NamespaceParams = Type.Object({ ns: Type.String() });
export const VulnerabilityParams = Type.Object({ ns: Type.String(), name: Type.String() });
export const FixParams = Type.Object({ ns: Type.String(), name: Type.String(), feature: Type.String() });

/** Query strings are read by hand (presence flags, limits) to give messages that name the parameter. */
export const AnyQuery = Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())]));
