import { Type, type TSchema } from '@sinclair/typebox';
import { DEFAULT_NOTIFICATION_PAGE, MAX_NAME_LENGTH, MAX_PAGE_LIMIT } from '../limits.js';

/**
 * The ancestry API's schemas, in the proto3 JSON mapping grpc-gateway produced
 * (reference: ancestry.proto, package coreos.clair): proto field names, every field optional
 * (default values are left out of responses), null read as the default on input. Requests are
 * also parsed by hand (proto-json.ts) for the lowerCamelCase spellings proto3 JSON allows.
 */

const optional = <T extends TSchema>(schema: T) => Type.Optional(schema);
const orNull = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const name = (description: string) => Type.String({ maxLength: MAX_NAME_LENGTH, description });

// Requests -------------------------------------------------------------------------------------

const PostLayer = Type.Object({
  hash: optional(
    orNull(
      name(
        "The layer's identity (e.g. its digest): a layer hash already scanned is not downloaded again. A sha256:<hex> hash given " +
          "with a path is checked against the bytes: the digest of the blob (compressed) or of the tar in it (an image config's diff_id).",
      ),
    ),
  ),
  path: optional(
    orNull(Type.String({ description: 'Where to download the layer: an http(s) URL, or a local file under api.localroots.' })),
  ),
  headers: optional(orNull(Type.Record(Type.String(), Type.String(), { description: 'Headers sent with the download; never stored.' }))),
});

export const PostAncestryRequest = Type.Object(
  {
    ancestry_name: optional(orNull(name('The ancestry (image) name; posting it again replaces it.'))),
    format: optional(orNull(Type.String({ description: 'Docker (also OCI) or ACI, case-insensitive.' }))),
    layers: optional(orNull(Type.Array(PostLayer, { description: 'The layers, parent first.' }))),
  },
  { description: 'lowerCamelCase names (ancestryName) are accepted too; unknown fields are ignored.' },
);

export const AncestryParams = Type.Object({ ancestry_name: name('The ancestry name.') });

/** Clair v3.0's GetAncestryRequest had these (klar and paclair send them); features and vulnerabilities are always returned. */
export const AncestryQuery = Type.Object({
  with_features: optional(Type.String({ description: 'Accepted for Clair v3.0 clients; features are always returned.' })),
  with_vulnerabilities: optional(Type.String({ description: 'Accepted for Clair v3.0 clients; vulnerabilities are always returned.' })),
});

export const NotificationParams = Type.Object({ name: name('The notification name.') });

const sidePage = (side: string) => optional(Type.String({ description: `The next_page token of the ${side} side's previous page.` }));
export const NotificationQuery = Type.Object({
  limit: optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE_LIMIT,
      default: DEFAULT_NOTIFICATION_PAGE,
      description: `Ancestries per side and page (1 to ${MAX_PAGE_LIMIT}).`,
    }),
  ),
  old_vulnerability_page: sidePage('old'),
  new_vulnerability_page: sidePage('new'),
  oldVulnerabilityPage: optional(Type.String({ description: 'lowerCamelCase spelling of old_vulnerability_page.' })),
  newVulnerabilityPage: optional(Type.String({ description: 'lowerCamelCase spelling of new_vulnerability_page.' })),
});

// Responses ------------------------------------------------------------------------------------

export const GrpcErrorBody = Type.Object(
  {
    error: Type.String({ description: "The message (as Clair's gateway wrote it)." }),
    code: Type.Integer({
      description:
        'The gRPC status code: 3 InvalidArgument, 4 DeadlineExceeded, 5 NotFound, 12 Unimplemented, 13 Internal, 14 Unavailable, 16 Unauthenticated.',
    }),
    message: Type.String({ description: 'The message (as later gateway versions write it).' }),
  },
  { description: 'A grpc-gateway error.' },
);

const ClairStatus = Type.Object({
  listers: optional(Type.Array(Type.String())),
  detectors: optional(Type.Array(Type.String())),
  last_update_time: optional(Type.String({ description: 'RFC 3339: the last successful vulnerability update; absent before the first.' })),
});

const Vulnerability = Type.Object({
  name: optional(Type.String()),
  namespace_name: optional(Type.String()),
  description: optional(Type.String()),
  link: optional(Type.String()),
  severity: optional(Type.String()),
  metadata: optional(Type.String({ description: 'JSON text.' })),
  fixed_by: optional(Type.String({ description: 'In a feature: the version that fixes it; absent when no fix exists.' })),
});

const Feature = Type.Object({
  name: optional(Type.String()),
  namespace_name: optional(Type.String()),
  version: optional(Type.String()),
  version_format: optional(Type.String()),
  vulnerabilities: optional(Type.Array(Vulnerability)),
});

export const PostAncestryResponse = Type.Object({ status: optional(ClairStatus) });

export const GetAncestryResponse = Type.Object({
  ancestry: optional(
    Type.Object({
      name: optional(Type.String()),
      scanned_listers: optional(Type.Array(Type.String())),
      scanned_detectors: optional(Type.Array(Type.String())),
      layers: optional(
        Type.Array(
          Type.Object({
            layer: optional(Type.Object({ hash: optional(Type.String()) })),
            detected_features: optional(Type.Array(Feature, { description: 'The features this layer introduced.' })),
          }),
        ),
      ),
    }),
  ),
  status: optional(ClairStatus),
});

const PagedVulnerableAncestries = Type.Object({
  current_page: optional(Type.String()),
  next_page: optional(Type.String({ description: 'Absent on the last page.' })),
  limit: optional(Type.Integer()),
  vulnerability: optional(Vulnerability),
  ancestries: optional(Type.Array(Type.Object({ index: optional(Type.Integer()), name: optional(Type.String()) }))),
});

export const GetNotificationResponse = Type.Object({
  notification: optional(
    Type.Object({
      name: optional(Type.String()),
      created: optional(Type.String({ description: 'Unix seconds.' })),
      notified: optional(Type.String({ description: 'Unix seconds.' })),
      deleted: optional(Type.String({ description: 'Unix seconds.' })),
      old: optional(PagedVulnerableAncestries),
      new: optional(PagedVulnerableAncestries),
    }),
  ),
});

export const EmptyMessage = Type.Object({}, { description: 'The empty message.' });

export const GetStatusResponse = Type.Object({ status: optional(ClairStatus) });
