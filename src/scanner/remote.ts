import type { Static } from '@sinclair/typebox';
import { request, type Dispatcher } from 'undici';
import type { ImageDetail, ScannedImages, StoredSbom } from '../api/tarsier/schemas.js';
import type { ImagePackage } from '../images/report.js';
import type { NamespaceCoverage } from '../model/coverage.js';
import type { RiskContext } from '../model/risk.js';
import { parseSeverity } from '../model/vulnerability.js';
import { SBOM_MEDIA_TYPES } from '../sbom/read.js';
import { outboundDispatcher } from '../outbound/dispatcher.js';
import {
  sbomContents,
  ScanError,
  sendNewLayers,
  withDefaultPlatform,
  type Progress,
  type RegistryScanRequest,
  type ScanBackend,
  type LocalSbom,
  type ScannedContents,
} from './backend.js';
import type { LocalImage } from './local-image.js';

/**
 * Scans through a Tarsier server: a local image's layers are sent only when the server has not
 * scanned them (HEAD, then a streamed PUT of /tarsier/v1/layers/{digest}), the image is assembled
 * as the ancestry named by its digest (POST /ancestry) and read through the images API; a registry
 * image is pulled by the server (POST /tarsier/v1/images); an SBOM is posted (POST
 * /tarsier/v1/sboms), where it is recorded as an image, and read back the same way.
 */

/** Layers sent at once. */
const UPLOAD_CONCURRENCY = 3;
/** How long the server may take to answer once a request is sent: indexing a large layer takes a while. */
const ANSWER_TIMEOUT_MS = 30 * 60_000;

/** The images API's answers, typed by the schemas the server validates them with. */
type ImageDetailJson = Static<typeof ImageDetail>;

type VulnerabilityJson = ImageDetailJson['Image']['Packages'][number]['Vulnerabilities'][number];

/**
 * The risk context the images API gives beside a vulnerability (CVE only when it is not
 * the vulnerability's own name); none from a server that has no such data, or predates it.
 */
export function riskOf(v: Pick<VulnerabilityJson, 'Name' | 'EPSS' | 'KEV'>): RiskContext {
  const { EPSS: epss, KEV: kev } = v;
  return {
    ...(epss ? { epss: { cve: epss.CVE ?? v.Name, score: epss.Score, percentile: epss.Percentile, date: epss.Date } } : {}),
    ...(kev
      ? {
          kev: {
            cve: kev.CVE ?? v.Name,
            dateAdded: kev.DateAdded,
            dueDate: kev.DueDate,
            knownRansomwareCampaignUse: kev.KnownRansomwareCampaignUse,
          },
        }
      : {}),
  };
}

export class ServerBackend implements ScanBackend {
  readonly mode = 'server' as const;
  readonly server: string;
  readonly #token: string | undefined;
  readonly #dispatcher: Dispatcher;

  constructor(options: { url: string; token: string | undefined }) {
    this.server = options.url.replace(/\/+$/, '');
    this.#token = options.token;
    this.#dispatcher = outboundDispatcher({ headersTimeoutMs: ANSWER_TIMEOUT_MS, bodyTimeoutMs: ANSWER_TIMEOUT_MS });
  }

  async #call(
    method: Dispatcher.HttpMethod,
    path: string,
    options: { body?: Dispatcher.DispatchOptions['body']; headers?: Record<string, string>; signal: AbortSignal; ok?: number[] },
  ): Promise<{ status: number; json: unknown }> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${this.server}${path}`, {
        method,
        headers,
        body: options.body,
        signal: options.signal,
        dispatcher: this.#dispatcher,
      });
    } catch (err) {
      if (options.signal.aborted) throw err;
      throw new ScanError(`the server ${this.server} cannot be reached: ${(err as Error).message}`, { cause: err });
    }
    const text = method === 'HEAD' ? '' : await response.body.text();
    if (method === 'HEAD') await response.body.dump();
    const json = text === '' ? undefined : safeJson(text);
    if (!(options.ok ?? [200, 201]).includes(response.statusCode)) {
      throw new ScanError(`${method} ${path}: the server answered ${response.statusCode}${errorMessage(json, text)}`);
    }
    return { status: response.statusCode, json };
  }

  async #isScanned(digest: string, signal: AbortSignal): Promise<boolean> {
    const { status } = await this.#call('HEAD', `/tarsier/v1/layers/${digest}`, { signal, ok: [200, 404] });
    return status === 200;
  }

  async scanLocal(image: LocalImage, progress: Progress, signal: AbortSignal): Promise<ScannedContents> {
    await sendNewLayers(image, UPLOAD_CONCURRENCY, progress, {
      isScanned: (digest) => this.#isScanned(digest, signal),
      send: async (layer, body) => {
        await this.#call('PUT', `/tarsier/v1/layers/${layer.digest}`, {
          body,
          headers: { 'content-type': 'application/octet-stream', 'content-length': String(layer.size) },
          signal,
        });
      },
    });
    progress({ kind: 'step', message: 'matching vulnerabilities' });
    await this.#call('POST', '/ancestry', {
      body: JSON.stringify({ ancestry_name: image.digest, format: 'Docker', layers: image.layers.map((l) => ({ hash: l.digest })) }),
      headers: { 'content-type': 'application/json' },
      signal,
    });
    const contents = await this.#contents(image.digest, signal);
    return { ...contents, platform: image.platform, references: image.references };
  }

  async scanRegistry(scan: RegistryScanRequest, progress: Progress, signal: AbortSignal): Promise<ScannedContents> {
    progress({ kind: 'step', message: `the server is pulling ${scan.reference}` });
    const body = {
      reference: scan.reference,
      ...(scan.insecure ? { insecure: true } : {}),
      ...(scan.authorization !== undefined ? { authorization: scan.authorization } : {}),
    };
    const answer = await withDefaultPlatform(scan.platform, (platform) =>
      this.#call('POST', '/tarsier/v1/images', {
        body: JSON.stringify({ ...body, platform }),
        headers: { 'content-type': 'application/json' },
        signal,
      }),
    );
    const images = (answer.json as Partial<Static<typeof ScannedImages>>).Images;
    const image = images?.[0];
    if (!image) throw new ScanError(`the server scanned no image for ${scan.reference}`);
    const contents = await this.#contents(image.Digest, signal);
    return {
      ...contents,
      platform: image.Platform,
      references: image.Tags.map((tag) => `${image.Registry}/${image.Repository}:${tag}`),
    };
  }

  async scanSbom({ bytes, sbom }: LocalSbom, progress: Progress, signal: AbortSignal): Promise<ScannedContents> {
    progress({ kind: 'step', message: 'matching vulnerabilities' });
    const { json } = await this.#call('POST', '/tarsier/v1/sboms', {
      body: bytes,
      headers: { 'content-type': SBOM_MEDIA_TYPES[sbom.format] },
      signal,
    });
    // What the server skipped: its reading of the document is the one its packages come from.
    const skipped = (json as Partial<Static<typeof StoredSbom>>).Skipped?.map((s) => ({
      at: s.At,
      ...(s.Name !== undefined ? { name: s.Name } : {}),
      ...(s.Purl !== undefined ? { purl: s.Purl } : {}),
      reason: s.Reason,
      why: s.Why,
    }));
    return sbomContents(await this.#contents(sbom.digest, signal), sbom, skipped ?? sbom.skipped);
  }

  async #contents(digest: string, signal: AbortSignal): Promise<Omit<ScannedContents, 'platform' | 'references'>> {
    const { json } = await this.#call('GET', `/tarsier/v1/images/${digest}`, { signal });
    const image = (json as ImageDetailJson).Image;
    const packages: ImagePackage[] = image.Packages.map((p) => ({
      name: p.Name,
      version: p.Version,
      namespace: p.NamespaceName,
      versionFormat: p.VersionFormat,
      addedBy: p.AddedBy,
      vulnerabilities: p.Vulnerabilities.map((v) => ({
        name: v.Name,
        namespace: v.NamespaceName,
        description: v.Description,
        link: v.Link,
        severity: parseSeverity(v.Severity) ?? 'Unknown',
        metadata: v.Metadata ?? null,
        fixedBy: v.FixedBy ?? null,
        fixState: v.FixState,
        risk: riskOf(v),
      })),
    }));
    const unread = image.Unread && {
      count: image.Unread.Count,
      files: image.Unread.Files.map((f) => ({ layer: f.Layer, location: f.Location, why: f.Why })),
    };
    return {
      digest: image.Digest,
      layers: image.Layers,
      packages,
      coverage: coverageFromAnswer(image.Data),
      ...(unread ? { unread } : {}),
    };
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }
}

/** The coverage the images API gives with an image; undefined from a server that predates it. */
function coverageFromAnswer(data: ImageDetailJson['Image']['Data'] | undefined): NamespaceCoverage[] | undefined {
  if (data === undefined) return undefined;
  const date = (text: string | undefined) => (text !== undefined ? new Date(text) : null);
  return data.Namespaces.map((n) => ({
    namespace: n.Name,
    sources: n.Sources.map((s) => ({ name: s.Name, updatedAt: date(s.UpdatedAt) })),
    expectedSources: n.ExpectedSources,
    updatedAt: date(n.UpdatedAt),
  }));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The message of an error answer in any of the server's dialects (v1, ancestry API, Harbor), prefixed for a sentence. */
function errorMessage(json: unknown, text: string): string {
  const body = json as { Error?: { Message?: unknown }; message?: unknown; error?: unknown } | undefined;
  const message = body?.Error?.Message ?? body?.message ?? (typeof body?.error === 'string' ? body.error : undefined);
  if (typeof message === 'string' && message !== '') return `: ${message}`;
  return text !== '' && text.length < 300 && json === undefined ? `: ${text.trim()}` : '';
}
