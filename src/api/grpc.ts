import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';
import type { Logger } from 'pino';
import protobuf from 'protobufjs';
import { badRequest, TarsierError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import type { Config } from '../config.js';
import type { AncestryService } from '../indexer/ancestry-service.js';
import { createAuthenticator } from './auth.js';
import { wireProblem } from './grpc-wire.js';
import { DEFAULT_NOTIFICATION_PAGE, MAX_PAGE_LIMIT } from './limits.js';
import { API_TIMEOUT_ERROR, classifyRequestError } from './request-errors.js';
import { grpcCodeOf } from './v3/errors.js';
import type { PageTokens } from './paging.js';
import { AncestryOperations, parsePostAncestry } from './v3/operations.js';

/**
 * The ancestry API as native gRPC (package coreos.clair, proto/ancestry.proto): the same five
 * operations as the JSON routes, from the same AncestryService, with the same errors as gRPC
 * status codes. Clair v3's clients (klar, genuinetools/reg) speak only this. @grpc/grpc-js serves
 * it; the standard health service (grpc.health.v1) and server reflection come with it, so grpcurl
 * and load balancers work. GetAncestry answers in one of two messages, by what the request shows
 * the client reads (ancestryAnswer).
 */

/** The proto file, found above this module whether it runs from src/ or dist/src/. */
function protoFile(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, 'proto', 'ancestry.proto');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error('proto/ancestry.proto not found above the Tarsier modules');
  }
}

type Message = Record<string, unknown>;

const PROTO_FILE = protoFile();
// keepCase: messages carry the proto field names, the shape the JSON routes read and write.
const packageDefinition = protoLoader.loadSync(PROTO_FILE, { keepCase: true, longs: Number, enums: String, defaults: false });
const clair = (grpc.loadPackageDefinition(packageDefinition).coreos as grpc.GrpcObject).clair as grpc.GrpcObject;
const serviceOf = (name: string): grpc.ServiceDefinition => (clair[name] as grpc.ServiceClientConstructor).service;

/**
 * Clair's early GetAncestry messages, which no method declares (a method has one request and one
 * response type), so proto-loader makes them no (de)serializer: protobufjs, which proto-loader runs
 * on, reads and writes them, with proto-loader's object options.
 */
const protoRoot = new protobuf.Root().loadSync(PROTO_FILE, { keepCase: true }).resolveAll();
const clairEarlyRequest = protoRoot.lookupType('coreos.clair.ClairEarlyGetAncestryRequest');
const clairEarlyResponse = protoRoot.lookupType('coreos.clair.ClairEarlyGetAncestryResponse');
const ancestryService = serviceOf('AncestryService');
const getAncestryMethod = ancestryService.GetAncestry as grpc.MethodDefinition<Message, Message>;

/** The services served, by their full names (health and reflection report on these). */
export const GRPC_SERVICES = ['coreos.clair.AncestryService', 'coreos.clair.NotificationService', 'coreos.clair.StatusService'] as const;

/** A google.protobuf.Timestamp from the RFC 3339 text the JSON mapping carries. */
function timestampMessage(rfc3339: unknown): { seconds: number; nanos: number } | undefined {
  if (typeof rfc3339 !== 'string') return undefined;
  const ms = Date.parse(rfc3339);
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 };
}

/** GetStatusResponse and ClairEarlyGetAncestryResponse: the ClairStatus whole, its time as a Timestamp. */
function withStatusTimestamp(message: { status?: object | undefined }): Message {
  if (!message.status) return message;
  const status = message.status as Message;
  return { ...message, status: { ...status, last_update_time: timestampMessage(status.last_update_time) } };
}

/**
 * The ClairStatus of PostAncestryResponse and GetAncestryResponse: its time only. Clair v3.0.0-pre1,
 * which genuinetools/reg and klar builds on pre1 use, has Detector messages at fields 1 and 2 of
 * ClairStatus where this contract has lister and detector names; those clients cannot decode a
 * response carrying them and fail the call. The names stay in GetStatus (which those clients never
 * call) and in each ancestry's scanned_listers and scanned_detectors.
 */
function withClientSafeStatus(message: { status?: object | undefined }): Message {
  if (!message.status) return message;
  return { ...message, status: { last_update_time: timestampMessage((message.status as Message).last_update_time) } };
}

interface ContractFeature {
  name: string;
  namespace_name?: string;
  version: string;
  version_format?: string;
  vulnerabilities?: Message[];
}

/** GetAncestryResponse with the layers also in Clair v3.0.0-pre1's shape (see the proto). */
function withClairPre1Layers(response: Message): Message {
  const ancestry = response.ancestry as { layers?: Array<{ layer: Message; detected_features?: ContractFeature[] }> } | undefined;
  if (!ancestry?.layers) return response;
  const clair_pre1_layers = ancestry.layers.map(({ layer, detected_features }) => ({
    layer,
    detected_features: (detected_features ?? []).map(({ namespace_name, ...feature }) => ({
      ...feature,
      ...(namespace_name ? { namespace: { name: namespace_name } } : {}),
    })),
  }));
  return { ...response, ancestry: { ...ancestry, clair_pre1_layers } };
}

/** ClairEarlyGetAncestryResponse: the contract's answer with every layer's features, and the layers' hashes, again. */
function withFeaturesAndLayerHashes(response: Message): Message {
  const ancestry = response.ancestry as { layers?: Array<{ layer: Message; detected_features?: ContractFeature[] }> } | undefined;
  if (!ancestry?.layers) return response;
  const features = ancestry.layers.flatMap((l) => l.detected_features ?? []);
  return { ...response, ancestry: { ...ancestry, features, layer_hashes: ancestry.layers.map((l) => l.layer) } };
}

/**
 * The one choice between GetAncestry's answers, which cannot share a message: clients of Clair's
 * early v3 messages (released klar) read every feature at field 2 of the Ancestry and Layer
 * messages at field 3, where Clair v3.0.0-pre1's (reg, klar builds on pre1) read layers with
 * their features. Only the early GetAncestryRequest has with_features and with_vulnerabilities, so
 * the request itself says which; the user-agent would not (released klar sends grpc-go/1.9.0-dev,
 * reg and pre1 klar builds are grpc-go too). Either answer carries every feature where its
 * clients read them, so no client reads an ancestry emptied by the choice. The answer is encoded
 * here, in the call, so that a failure to encode it is the call's error, logged and counted as such.
 */
function ancestryAnswer(request: Message, response: Message): Buffer {
  if (request.with_features === true || request.with_vulnerabilities === true) {
    const message = clairEarlyResponse.fromObject(withFeaturesAndLayerHashes(withStatusTimestamp(response)));
    return Buffer.from(clairEarlyResponse.encode(message).finish());
  }
  return getAncestryMethod.responseSerialize(withClairPre1Layers(withClientSafeStatus(response)));
}

/** A request the server could not decode, with why: the call answers INVALID_ARGUMENT. */
class UndecodableRequest {
  constructor(readonly problem: string) {}
}

/**
 * A request deserializer that never throws: bytes that are not a well-formed message of type
 * (grpc-wire.ts), or that protobufjs cannot read, become an UndecodableRequest. grpc-js answers a
 * deserializer's exception itself, with INTERNAL and no reason; a request the client got wrong is
 * its own fault, and the call says what is wrong.
 */
function strictDeserializer(type: protobuf.Type, deserialize: (bytes: Buffer) => Message): (bytes: Buffer) => Message {
  return (bytes) => {
    let problem = wireProblem(type, bytes);
    if (problem === undefined) {
      try {
        return deserialize(bytes);
      } catch (err) {
        problem = err instanceof Error ? err.message : String(err);
      }
    }
    return new UndecodableRequest(
      `the request is not a valid ${type.fullName.replace(/^\./, '')} message: ${problem}`,
    ) as unknown as Message;
  };
}

/** A service of the proto with every request read strictly. */
function strictService(name: string): grpc.ServiceDefinition {
  const methods = protoRoot.lookupService(`coreos.clair.${name}`).methods;
  return Object.fromEntries(
    Object.entries(serviceOf(name)).map(([method, definition]) => [
      method,
      { ...definition, requestDeserialize: strictDeserializer(methods[method]!.resolvedRequestType!, definition.requestDeserialize) },
    ]),
  );
}

/** The AncestryService, its GetAncestry reading every request as an early one and sending the bytes ancestryAnswer wrote. */
function ancestryServiceDefinition(): grpc.ServiceDefinition {
  const objectOptions = { longs: Number, enums: String, defaults: false };
  const requestDeserialize = strictDeserializer(clairEarlyRequest, (bytes) =>
    clairEarlyRequest.toObject(clairEarlyRequest.decode(bytes), objectOptions),
  );
  const responseSerialize = (bytes: Buffer): Buffer => bytes;
  return { ...strictService('AncestryService'), GetAncestry: { ...getAncestryMethod, requestDeserialize, responseSerialize } };
}

/** GetNotificationRequest.limit: 0 is the default; otherwise 1 to MAX_PAGE_LIMIT, as the JSON route's. */
function notificationLimit(limit: unknown): number {
  if (limit === undefined || limit === 0) return DEFAULT_NOTIFICATION_PAGE;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new TarsierError('bad_request', `limit must be an integer from 1 to ${MAX_PAGE_LIMIT} (got ${String(limit)})`);
  }
  return limit;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

export interface GrpcDeps {
  service: AncestryService;
  /** Mint and read the notification pages' tokens, as the JSON routes do. */
  pageTokens: PageTokens;
  log: Logger;
  metrics: Metrics;
  /**
   * clair.api: auth is checked on the `authorization` metadata as on the HTTP header; a call still
   * unfinished after timeoutMs is stopped and answered UNAVAILABLE, as over HTTP; a connection
   * without a call for idleTimeoutMs is closed (GOAWAY), as an idle HTTP/1.1 one is.
   */
  api: Pick<Config['api'], 'auth' | 'timeoutMs' | 'idleTimeoutMs'>;
}

export interface GrpcApi {
  server: grpc.Server;
  health: HealthImplementation;
  /** Sets the health of every service (and of the server as a whole, service ""). */
  setServing(status: ServingStatus): void;
}

/** The gRPC server with the ancestry services, health and reflection; bound or given connections by the caller. */
export function buildGrpcServer(deps: GrpcDeps): GrpcApi {
  const log = deps.log.child({ component: 'grpc' });
  const authenticator = createAuthenticator(deps.api.auth);
  const server = new grpc.Server({ 'grpc.max_connection_idle_ms': deps.api.idleTimeoutMs });

  /** One unary method: authentication, cancellation, errors as status codes, a metric and a log line. */
  const unary =
    <Response>(
      method: string,
      handle: (request: Message, signal: AbortSignal) => Promise<Response>,
    ): grpc.handleUnaryCall<Message, Response> =>
    (call, callback) => {
      const started = performance.now();
      const controller = new AbortController();
      // The client cancelled, or its deadline passed: the work done for it stops.
      call.on('cancelled', () => controller.abort(new TarsierError('cancelled', 'the call was cancelled or its deadline passed')));
      const timer = setTimeout(
        () => controller.abort(new TarsierError(API_TIMEOUT_ERROR.code, API_TIMEOUT_ERROR.message)),
        deps.api.timeoutMs,
      );
      // Which client, for the log: grpc-go's default is grpc-go/<version> (released klar: 1.9.0-dev).
      const userAgent = call.metadata.get('user-agent')[0]?.toString();
      const finish = (code: grpc.status, message?: string): void => {
        clearTimeout(timer);
        const seconds = (performance.now() - started) / 1000;
        deps.metrics.grpcRequests.inc({ method, code: grpc.status[code] ?? String(code) });
        deps.metrics.grpcDuration.observe({ method }, seconds);
        log.info({ method, code: grpc.status[code], ms: Math.round(seconds * 1000), message, userAgent }, 'grpc call completed');
      };
      const authorization = call.metadata.get('authorization')[0];
      const work = (async () => {
        await authenticator?.authenticate(typeof authorization === 'string' ? authorization : undefined);
        const request = call.request as Message | UndecodableRequest;
        if (request instanceof UndecodableRequest) throw badRequest(request.problem);
        return handle(request, controller.signal);
      })();
      // Work that ignores the signal is not waited for: the answer goes when the call is stopped.
      work.catch(() => undefined);
      const stopped = new Promise<never>((_, reject) =>
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason as Error), { once: true }),
      );
      Promise.race([work, stopped]).then(
        (response) => {
          finish(grpc.status.OK);
          callback(null, response);
        },
        (err: unknown) => {
          const problem = classifyRequestError(err instanceof Error ? err : new Error(String(err)), log);
          const code = grpcCodeOf(problem);
          finish(code, problem.message);
          callback({ code, details: problem.message });
        },
      );
    };

  const operations = new AncestryOperations(deps.service, deps.pageTokens);
  server.addService(ancestryServiceDefinition(), {
    PostAncestry: unary('AncestryService/PostAncestry', async (request, signal) =>
      withClientSafeStatus(await operations.postAncestry(parsePostAncestry(request), signal)),
    ),
    GetAncestry: unary('AncestryService/GetAncestry', async (request) =>
      ancestryAnswer(request, await operations.getAncestry(text(request.ancestry_name))),
    ),
  });
  server.addService(strictService('NotificationService'), {
    GetNotification: unary('NotificationService/GetNotification', async (request) =>
      operations.getNotification({
        name: text(request.name),
        limit: notificationLimit(request.limit),
        oldPage: text(request.old_vulnerability_page),
        newPage: text(request.new_vulnerability_page),
      }),
    ),
    MarkNotificationAsRead: unary('NotificationService/MarkNotificationAsRead', async (request) =>
      operations.markNotificationAsRead(text(request.name)),
    ),
  });
  server.addService(strictService('StatusService'), {
    GetStatus: unary('StatusService/GetStatus', async () => withStatusTimestamp(await operations.getStatus())),
  });

  const health = new HealthImplementation(Object.fromEntries(['', ...GRPC_SERVICES].map((name) => [name, 'SERVING'])));
  health.addToServer(server);
  new ReflectionService(packageDefinition).addToServer(server);
  return {
    server,
    health,
    setServing(status) {
      for (const name of ['', ...GRPC_SERVICES]) health.setStatus(name, status);
    },
  };
}
