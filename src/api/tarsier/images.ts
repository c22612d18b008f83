import { badRequest, notFound } from '../../errors.js';
import type { ImageData } from '../../model/coverage.js';
import { riskMetadata } from '../../model/risk.js';
import type { ImageQueue } from '../../images/queue.js';
import type { ImageScanner } from '../../images/images.js';
import type { ImageInventory, ImageWithData } from '../../images/inventory.js';
import type { ImageFilter, ImageRow } from '../../store/images.js';
import { whileClientWaits } from '../edge.js';
import type { PageTokens } from '../paging.js';
import type { RouteApp } from '../route-app.js';
import {
  DEFAULT_IMAGE_PAGE,
  DeletedImages,
  DigestParams,
  ExposedImages,
  ImageDetail,
  ImageList,
  ImageListQuery,
  ImageScanBody,
  ImageScanQuery,
  PageQuery,
  QueuedScan,
  ScannedImages,
  VulnerabilityNameParams,
} from './schemas.js';

export interface ImageRouteDeps {
  scanner: ImageScanner;
  queue: ImageQueue;
  inventory: ImageInventory;
  pageTokens: PageTokens;
}

const TAGS = ['images'];

/** A page token: the last id of the page and the list it belongs to (so it cannot be used on another). */
interface ImagePage {
  After: number;
  List: string;
}

function pageStart(tokens: PageTokens, token: string | undefined, list: string): number {
  if (token === undefined || token === '') return 0;
  const payload = tokens.decode(token) as Partial<ImagePage> | null;
  if (!payload || typeof payload.After !== 'number' || !Number.isSafeInteger(payload.After) || payload.List !== list) {
    throw badRequest('page is a token of another list; start again from the first page');
  }
  return payload.After;
}

function nextPage(tokens: PageTokens, rows: readonly { id: number }[], limit: number, list: string): string | undefined {
  return rows.length === limit ? tokens.encode({ After: rows[rows.length - 1]!.id, List: list } satisfies ImagePage) : undefined;
}

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

function summaryOf(counts: ImageRow['counts']): Record<string, { Total: number; Fixable: number }> {
  return Object.fromEntries(Object.entries(counts).map(([severity, c]) => [severity, { Total: c.total, Fixable: c.fixable }]));
}

function dataOf(data: ImageData) {
  return {
    State: data.state,
    Namespaces: data.namespaces.map((n) => ({
      Name: n.namespace,
      State: n.state,
      ...(n.updatedAt ? { UpdatedAt: n.updatedAt.toISOString() } : {}),
      Sources: n.sources.map((source) => ({
        Name: source.name,
        ...(source.updatedAt ? { UpdatedAt: source.updatedAt.toISOString() } : {}),
      })),
      ExpectedSources: n.expectedSources,
    })),
  };
}

/** Counts are unknown, never 0, where a namespace of the image has no data. */
const unlessMissing = <T>(data: ImageData, value: T): T | null => (data.state === 'missing' ? null : value);

/** An image as lists and scan answers show it: its record, its counts, and the data they rest on. */
export function imageSummary({ image: row, data }: ImageWithData) {
  return {
    Registry: row.registry,
    Repository: row.repository,
    Digest: row.digest,
    Platform: row.platform,
    MediaType: row.mediaType,
    ...(row.indexDigest ? { IndexDigest: row.indexDigest } : {}),
    Tags: row.tags,
    FirstSeen: row.firstSeen.toISOString(),
    LastSeen: row.lastSeen.toISOString(),
    ScannedAt: iso(row.scannedAt),
    Summary: unlessMissing(data, summaryOf(row.counts)),
    KnownExploited: unlessMissing(data, row.knownExploited),
    Data: dataOf(data),
  };
}

export function registerImageRoutes(app: RouteApp, deps: ImageRouteDeps): void {
  const { scanner, queue, inventory, pageTokens } = deps;

  app.post(
    '/tarsier/v1/images',
    {
      schema: {
        tags: TAGS,
        operationId: 'scanImage',
        summary: 'Pull an image from its registry and scan it',
        description:
          'Fetches the manifest (an index gives one image per platform, or the one asked for), downloads each layer once by digest ' +
          '(verified), indexes each image as the ancestry named by its manifest digest, and records it with its repository and tag. ' +
          'Credentials come from clair.registries, or from authorization for this pull only. Answers 201 when done, or 202 at once with ?wait=false (the scan is queued).',
        body: ImageScanBody,
        querystring: ImageScanQuery,
        response: { 201: ScannedImages, 202: QueuedScan },
      },
    },
    async (request, reply) => {
      const body = request.body;
      // Checked here, before anything is queued or fetched: a bad reference, or plain HTTP that would
      // carry the registry's credentials in clear, is the client's 400.
      const checked = scanner.check(body);
      if (request.query.wait === false) {
        // A queued job is stored in the database, and credentials never are.
        if (body.authorization !== undefined)
          throw badRequest('authorization cannot be queued: scan with wait=true, or configure clair.registries');
        const job = await queue.enqueue({ reference: body.reference, platform: body.platform, insecure: body.insecure, source: 'api' });
        return reply.code(202).send({ Job: job });
      }
      const scanned = await scanner.scan(body, whileClientWaits(reply));
      const { registry, repository } = checked.reference;
      const images = await inventory.scanned(
        { registry, repository },
        scanned.map((image) => image.digest),
      );
      return reply.code(201).send({ Images: images.map(imageSummary) });
    },
  );

  app.get(
    '/tarsier/v1/images',
    {
      schema: {
        tags: TAGS,
        operationId: 'listImages',
        summary: 'List images with their vulnerability counts',
        description: 'Images in the order they were first recorded, filtered, with per-severity and fixable counts; paged with NextPage.',
        querystring: ImageListQuery,
        response: { 200: ImageList },
      },
    },
    async (request) => {
      const q = request.query;
      const filter: ImageFilter = {
        registry: q.registry,
        repository: q.repository,
        tag: q.tag,
        digest: q.digest,
        minSeverity: q.min_severity,
        knownExploited: q.kev,
        minEpss: q.min_epss,
      };
      const list = `images ${JSON.stringify(filter)}`;
      const limit = q.limit ?? DEFAULT_IMAGE_PAGE;
      const images = await inventory.list(filter, pageStart(pageTokens, q.page, list), limit);
      const next = nextPage(
        pageTokens,
        images.map((i) => i.image),
        limit,
        list,
      );
      return { Images: images.map(imageSummary), ...(next ? { NextPage: next } : {}) };
    },
  );

  app.get(
    '/tarsier/v1/images/:digest',
    {
      schema: {
        tags: TAGS,
        operationId: 'getImage',
        summary: 'One image: layers, packages and vulnerabilities',
        description:
          'The image with this manifest digest: where registries hold it, its layers, and each package with the layer that added ' +
          'it and the vulnerabilities affecting it (severity, FixedBy, metadata).',
        params: DigestParams,
        response: { 200: ImageDetail },
      },
    },
    async (request) => {
      const { digest } = request.params;
      const image = await inventory.image(digest);
      if (!image) throw notFound(`image ${digest} is not known: scan it with POST /tarsier/v1/images`);
      const { contents, references, data } = image;
      return {
        Image: {
          Digest: digest,
          Layers: contents.layers,
          References: references.map((r) => ({
            Registry: r.registry,
            Repository: r.repository,
            Platform: r.platform,
            Tags: r.tags,
            FirstSeen: r.firstSeen.toISOString(),
            LastSeen: r.lastSeen.toISOString(),
          })),
          Summary: unlessMissing(data, summaryOf(contents.summary)),
          KnownExploited: unlessMissing(data, contents.knownExploited),
          Data: dataOf(data),
          Packages: contents.packages.map((p) => ({
            Name: p.name,
            Version: p.version,
            NamespaceName: p.namespace,
            VersionFormat: p.versionFormat,
            AddedBy: p.addedBy,
            Vulnerabilities: p.vulnerabilities.map((v) => ({
              Name: v.name,
              NamespaceName: v.namespace,
              Description: v.description,
              Link: v.link,
              Severity: v.severity,
              ...(v.metadata ? { Metadata: v.metadata } : {}),
              ...(v.fixedBy !== null ? { FixedBy: v.fixedBy } : {}),
              FixState: v.fixState,
              ...riskMetadata(v.name, v.risk),
            })),
          })),
          Unread: {
            Count: contents.unread.count,
            Files: contents.unread.files.map((f) => ({ Layer: f.layer, Location: f.location, Why: f.why })),
          },
        },
      };
    },
  );

  app.delete(
    '/tarsier/v1/images/:digest',
    {
      schema: {
        tags: TAGS,
        operationId: 'deleteImage',
        summary: 'Delete an image',
        description: 'Deletes every record of the digest (in every repository) and its contents.',
        params: DigestParams,
        response: { 200: DeletedImages },
      },
    },
    async (request) => {
      const { digest } = request.params;
      const deleted = await inventory.delete(digest);
      if (deleted === 0) throw notFound(`image ${digest} is not known`);
      return { Deleted: deleted };
    },
  );

  app.get(
    '/tarsier/v1/vulnerabilities/:name/images',
    {
      schema: {
        tags: TAGS,
        operationId: 'listImagesAffectedBy',
        summary: 'Images a vulnerability affects',
        description:
          'Every recorded image holding a package the vulnerability (any namespace) affects, with those packages and the ' +
          'version that fixes each; paged with NextPage.',
        params: VulnerabilityNameParams,
        querystring: PageQuery,
        response: { 200: ExposedImages },
      },
    },
    async (request) => {
      const { name } = request.params;
      const list = `exposed ${name}`;
      const limit = request.query.limit ?? DEFAULT_IMAGE_PAGE;
      const start = pageStart(pageTokens, request.query.page, list);
      const rows = await inventory.exposedTo(name, start, limit);
      if (!rows) throw notFound(`vulnerability ${name} is not known`);
      const next = nextPage(pageTokens, rows, limit, list);
      return {
        Vulnerability: name,
        Images: rows.map((r) => ({
          Registry: r.registry,
          Repository: r.repository,
          Digest: r.digest,
          Platform: r.platform,
          Tags: r.tags,
          Packages: r.packages.map((p) => ({
            Name: p.name,
            Version: p.version,
            NamespaceName: p.namespace,
            Severity: p.severity,
            ...(p.fixedBy !== null ? { FixedBy: p.fixedBy } : {}),
          })),
        })),
        ...(next ? { NextPage: next } : {}),
      };
    },
  );
}
