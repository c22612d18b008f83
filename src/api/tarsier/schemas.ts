import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { DATA_STATES } from '../../model/coverage.js';
import { FIX_STATES, SEVERITIES } from '../../model/vulnerability.js';
import { SKIP_REASONS } from '../../sbom/read.js';
import { MAX_NAME_LENGTH, MAX_PAGE_LIMIT } from '../limits.js';

/**
 * Tarsier's own API under /tarsier/v1: images from registries, layer uploads and registry webhooks.
 * Field names in the v1 API's style (PascalCase, NextPage), errors in its envelope.
 */

const optional = <T extends TSchema>(schema: T) => Type.Optional(schema);
const severity = (description: string) =>
  Type.Union(
    SEVERITIES.map((s) => Type.Literal(s)),
    { description },
  );
const timestamp = (description: string) => Type.String({ description: `${description} (RFC 3339).` });

export const DEFAULT_IMAGE_PAGE = 50;
const DIGEST_PATTERN = '^sha256:[a-f0-9]{64}$';

export const Digest = Type.String({
  pattern: DIGEST_PATTERN,
  maxLength: 71,
  description: 'A sha256 content digest: sha256:<64 lowercase hex digits>.',
});

export const DigestParams = Type.Object({ digest: Digest });
export const VulnerabilityNameParams = Type.Object({
  name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: 'A vulnerability name (CVE-…, DSA-…, ALAS-…).' }),
});

export const ImageScanBody = Type.Object(
  {
    reference: Type.String({
      minLength: 1,
      maxLength: MAX_NAME_LENGTH,
      description: 'The image: host[:port]/repository:tag, …@sha256:…, or a Docker Hub name (debian:12).',
    }),
    platform: optional(
      Type.String({ maxLength: 100, description: 'os/architecture[/variant]: only this image of a multi-platform index.' }),
    ),
    insecure: optional(Type.Boolean({ description: 'Pull over plain HTTP (also configurable per registry: clair.registries).' })),
    authorization: optional(
      Type.String({
        minLength: 1,
        maxLength: 16_384,
        description:
          'The registry Authorization header value (Basic … or Bearer …) for this pull only, instead of clair.registries: ' +
          'used while the scan runs, never stored, logged or queued (not with wait=false).',
      }),
    ),
  },
  { description: 'An image to pull from its registry and scan.' },
);
export type ImageScanBody = Static<typeof ImageScanBody>;

export const ImageScanQuery = Type.Object({
  wait: optional(
    Type.Boolean({ default: true, description: 'false: queue the scan and answer 202 at once instead of 201 when it is done.' }),
  ),
});

export const ImageListQuery = Type.Object({
  registry: optional(
    Type.String({ maxLength: MAX_NAME_LENGTH, description: 'Only images of this registry (ghcr.io, localhost:5000, docker.io).' }),
  ),
  repository: optional(
    Type.String({ maxLength: MAX_NAME_LENGTH, description: 'Only images of this repository (library/debian, team/app).' }),
  ),
  tag: optional(Type.String({ maxLength: 128, description: 'Only images this tag names.' })),
  digest: optional(Digest),
  min_severity: optional(severity('Only images affected by a vulnerability at least this severe.')),
  kev: optional(
    Type.Boolean({ description: "true: only images affected by a vulnerability in CISA's Known Exploited Vulnerabilities catalog." }),
  ),
  min_epss: optional(
    Type.Number({
      minimum: 0,
      maximum: 1,
      description: 'Only images affected by a vulnerability with an EPSS score of at least this (0 to 1).',
    }),
  ),
  limit: optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_IMAGE_PAGE, description: 'Images per page.' })),
  page: optional(Type.String({ maxLength: 4096, description: 'NextPage of the previous page, unchanged.' })),
});
export type ImageListQuery = Static<typeof ImageListQuery>;

export const PageQuery = Type.Object({
  limit: optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_IMAGE_PAGE, description: 'Images per page.' })),
  page: optional(Type.String({ maxLength: 4096, description: 'NextPage of the previous page, unchanged.' })),
});

const SeverityCount = Type.Object({
  Total: Type.Integer({ description: 'Distinct vulnerabilities of this severity (each at the highest severity its sources give).' }),
  Fixable: Type.Integer({ description: 'Of those, the ones an upgrade of an affected package fixes.' }),
});
const Summary = Type.Record(Type.String(), SeverityCount, {
  description: 'Per severity (Unknown … Defcon1; severities with none are left out): vulnerability counts.',
});

const KnownExploited = Type.Integer({
  description: "Distinct vulnerabilities affecting the image that CISA's Known Exploited Vulnerabilities catalog lists.",
});

const dataState = (description: string) =>
  Type.Union(
    DATA_STATES.map((s) => Type.Literal(s)),
    { description },
  );

const ImageData = Type.Object(
  {
    State: dataState(
      'missing: a namespace of the image has no vulnerability data, so its counts are unknown (null), never 0; ' +
        'stale: data of some namespace is older than updater.maxdataage; current: every namespace has data of at most that age.',
    ),
    Namespaces: Type.Array(
      Type.Object({
        Name: Type.String({ description: "A namespace the image's packages are matched in (debian:12, rhel:9)." }),
        State: dataState('current, stale or missing, as for the image.'),
        UpdatedAt: optional(timestamp('When its data was last brought up to date: the freshest of its sources; absent when it has none')),
        Sources: Type.Array(
          Type.Object({
            Name: Type.String({ description: 'An updater source (debian, rhel, …), or api for records written through the API.' }),
            UpdatedAt: optional(
              timestamp(
                "When its data was last current: the source's last successful update (for imported data, the exporting installation's), or the API's newest record",
              ),
            ),
          }),
          { description: 'Who wrote its vulnerability records; empty when it has none.' },
        ),
        ExpectedSources: Type.Array(Type.String(), {
          description: 'The sources that bring data for its distribution; empty when no source covers it.',
        }),
      }),
    ),
  },
  {
    description:
      'The vulnerability data the answer rests on, per namespace the image uses. Enrichment (NVD, EPSS, KEV) is not vulnerability data.',
  },
);
const UNKNOWN = ' Null when Data.State is missing: the image holds packages no data covers, so the count is unknown.';

/** An image's counts and the data they rest on, in every answer about one image. */
const ImageCounts = {
  Summary: Type.Union([Summary, Type.Null()], { description: `${Summary.description}${UNKNOWN}` }),
  KnownExploited: Type.Union([KnownExploited, Type.Null()], { description: `${KnownExploited.description}${UNKNOWN}` }),
  Data: ImageData,
};

export const ImageSummary = Type.Object({
  Registry: Type.String(),
  Repository: Type.String(),
  Digest: Type.String({ description: 'The manifest digest: the image.' }),
  Platform: Type.String({ description: 'os/architecture[/variant].' }),
  MediaType: Type.String({ description: 'The manifest media type.' }),
  IndexDigest: optional(Type.String({ description: 'The multi-platform index the image was reached through.' })),
  Tags: Type.Array(Type.String(), { description: 'Tags of the repository that name this image now; empty when a tag moved away.' }),
  FirstSeen: timestamp('When Tarsier first saw the image in this repository'),
  LastSeen: timestamp('When it last saw it (a scan or a push)'),
  ScannedAt: Type.Union([timestamp('When its contents were last assembled'), Type.Null()]),
  ...ImageCounts,
});

export const ImageList = Type.Object({
  Images: Type.Array(ImageSummary),
  NextPage: optional(Type.String({ description: 'Pass as page for the next page; absent on the last page.' })),
});

export const ScannedImages = Type.Object({ Images: Type.Array(ImageSummary) });

export const SbomQuery = Type.Object({
  name: optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_NAME_LENGTH,
      description:
        "The repository the SBOM is recorded in (registry sbom); default: the document's own name (SPDX name, CycloneDX " +
        'metadata.component as name@version), else its digest.',
    }),
  ),
});

const SkippedComponent = Type.Object(
  {
    At: Type.String({ description: 'Where it is in the document: components[3].components[0], packages[7].' }),
    Name: optional(Type.String()),
    Purl: optional(Type.String({ description: 'Its package URL, when it has one.' })),
    Reason: Type.Union(SKIP_REASONS.map((r) => Type.Literal(r))),
    Why: Type.String({ description: 'The reason in words.' }),
  },
  { description: 'A component or package the document lists that is not matched.' },
);

export const StoredSbom = Type.Object({
  Image: ImageSummary,
  Skipped: Type.Array(SkippedComponent, {
    description: 'What the document lists that Tarsier cannot match (no package URL, an unknown type or release, …): not in the image.',
  }),
});
export const QueuedScan = Type.Object({ Job: Type.String({ description: 'The id of the queued scan.' }) });

/** The risk context (EPSS, KEV); CVE names the CVE it came from when the vulnerability is an advisory listing several. */
const RiskFields = {
  EPSS: optional(
    Type.Object(
      {
        Score: Type.Number({ description: 'The probability of exploitation in the next 30 days (0 to 1).' }),
        Percentile: Type.Number({ description: 'The share of scored CVEs with a lower or equal score.' }),
        Date: Type.String({ description: 'The day FIRST scored it (YYYY-MM-DD).' }),
        CVE: optional(Type.String()),
      },
      { description: "FIRST's EPSS score (the highest among an advisory's CVEs)." },
    ),
  ),
  KEV: optional(
    Type.Object(
      {
        DateAdded: Type.String({ description: 'When CISA added it (YYYY-MM-DD).' }),
        DueDate: Type.String({ description: "CISA's remediation due date for US federal agencies (YYYY-MM-DD; empty when none)." }),
        KnownRansomwareCampaignUse: Type.String({ description: 'Known or Unknown.' }),
        CVE: optional(Type.String()),
      },
      { description: "Present when CISA's Known Exploited Vulnerabilities catalog lists it (or one of an advisory's CVEs)." },
    ),
  ),
};

const ImageVulnerability = Type.Object({
  Name: Type.String(),
  NamespaceName: Type.String(),
  Description: Type.String(),
  Link: Type.String(),
  Severity: Type.String(),
  Metadata: optional(Type.Record(Type.String(), Type.Unknown(), { description: "The source's metadata and enrichment (NVD scores)." })),
  FixedBy: optional(Type.String({ description: 'The version that fixes it; absent when there is no fix yet.' })),
  FixState: Type.Union(
    FIX_STATES.map((s) => Type.Literal(s)),
    {
      description:
        'fixed (FixedBy is the fix), affected (no fix yet), or what the source says of an unfixed package: will_not_fix, fix_deferred.',
    },
  ),
  ...RiskFields,
});

const ImagePackage = Type.Object({
  Name: Type.String(),
  Version: Type.String(),
  NamespaceName: Type.String(),
  VersionFormat: Type.String(),
  AddedBy: Type.String({ description: 'The digest of the layer that added the package; for an SBOM, the digest of the document.' }),
  Vulnerabilities: Type.Array(ImageVulnerability),
});

const ImageReference = Type.Object({
  Registry: Type.String(),
  Repository: Type.String(),
  Platform: Type.String(),
  Tags: Type.Array(Type.String()),
  FirstSeen: Type.String(),
  LastSeen: Type.String(),
});

export const ImageDetail = Type.Object({
  Image: Type.Object({
    Digest: Type.String(),
    Layers: Type.Array(Type.String(), { description: "Layer digests, bottom first; an SBOM's one layer is the document's digest." }),
    References: Type.Array(ImageReference, { description: 'Where registries hold the image; empty for an image uploaded by a client.' }),
    ...ImageCounts,
    Packages: Type.Array(ImagePackage),
    Unread: Type.Object(
      {
        Count: Type.Integer({ minimum: 0, description: 'How many files of its layers could not be read.' }),
        Files: Type.Array(
          Type.Object({
            Layer: Type.String(),
            Location: Type.String({ description: 'The file in the layer (`app/app.jar!/BOOT-INF/lib/x.jar` inside an archive).' }),
            Why: Type.String(),
          }),
          { description: 'The first 100 of each layer.' },
        ),
      },
      {
        description:
          'Files of the image that may hold packages but could not be read (a manifest that does not parse, a program or archive over the limits): their packages are not in Packages.',
      },
    ),
  }),
});

/** An image in a list about something else (a vulnerability, a notification): where it is and its tags. */
const TaggedImage = {
  Registry: Type.String(),
  Repository: Type.String(),
  Digest: Type.String(),
  Platform: Type.String(),
  Tags: Type.Array(Type.String()),
};

export const ExposedImages = Type.Object({
  Vulnerability: Type.String(),
  Images: Type.Array(
    Type.Object({
      ...TaggedImage,
      Packages: Type.Array(
        Type.Object({
          Name: Type.String(),
          Version: Type.String(),
          NamespaceName: Type.String(),
          Severity: Type.String(),
          FixedBy: optional(Type.String({ description: 'The version that fixes it here; absent when there is no fix yet.' })),
        }),
      ),
    }),
  ),
  NextPage: optional(Type.String()),
});

export const DeletedImages = Type.Object({ Deleted: Type.Integer({ description: 'Image records deleted (one per repository).' }) });

export const UploadedLayer = Type.Object({
  Layer: Type.Object({
    Digest: Type.String(),
    NamespaceName: optional(Type.String({ description: 'The namespace its release files name, if any.' })),
    IndexedByVersion: Type.Integer(),
  }),
});

export const WebhookAccepted = Type.Object({
  Queued: Type.Array(Type.Object({ Reference: Type.String(), Job: Type.String() }), {
    description: 'The scans the event queued (manifest pushes); other events are ignored.',
  }),
  Deleted: Type.Array(Type.Object({ Reference: Type.String(), Images: Type.Integer({ minimum: 0 }) }), {
    description: 'The deletes the event announced (a manifest by digest, a tag), in order, each with how many image records went with it.',
  }),
});

export const NotificationParams = Type.Object({
  name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: 'The notification name, as delivered to the webhook.' }),
});

const NotificationSide = Type.Object({
  Vulnerability: Type.Object({
    Name: Type.String(),
    NamespaceName: Type.String(),
    Description: Type.String(),
    Link: Type.String(),
    Severity: Type.String(),
    ...RiskFields,
  }),
  Images: Type.Array(Type.Object(TaggedImage), {
    description: 'Images holding a package this version of the vulnerability affects (this page of them).',
  }),
});

export const ImageNotification = Type.Object({
  Notification: Type.Object({
    Name: Type.String(),
    Created: timestamp('When the change was made'),
    Notified: optional(timestamp('When it was delivered')),
    Deleted: optional(timestamp('When it was marked read')),
    Old: optional(NotificationSide),
    New: optional(NotificationSide),
    NextPage: optional(Type.String({ description: 'Pass as page for the next images of both sides; absent on the last page.' })),
  }),
});
