/**
 * The only impure module: config → database → migrations → services → listen, and a graceful
 * stop in reverse order on SIGTERM/SIGINT.
 */
import { readFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { loadPageTokenKey, PageTokens } from './api/paging.js';
import * as grpc from '@grpc/grpc-js';
import { buildGrpcServer } from './api/grpc.js';
import { buildApp, buildHealthApp, type ApiTls } from './app.js';
import { ancestryService, imageServices } from './services.js';
import { authConfigured, type Config } from './config.js';
import { Indexer } from './indexer/indexer.js';
import { Metrics } from './metrics.js';
import { Notifier, type NotifierTls } from './notifier/notifier.js';
import { indexerSettings, notifierSettings, runnerSettings } from './settings.js';
import { UpdaterRunner } from './updater/runner.js';
import { UpdaterScheduler } from './updater/scheduler.js';
import { SummaryRefresher } from './images/summaries.js';
import { enabledSources } from './updater/sources.js';
import { openDatabase } from './database.js';
import { ImageRetention } from './images/retention.js';
import { Rematcher } from './rematch.js';

/** The API's TLS material when api.certfile and api.keyfile are set (Clair's rule). */
async function readTls(config: Config): Promise<ApiTls | undefined> {
  const { certFile, keyFile, caFile } = config.api.tls;
  if (!certFile || !keyFile) return undefined;
  return {
    cert: await readFile(certFile),
    key: await readFile(keyFile),
    ...(caFile ? { ca: await readFile(caFile) } : {}),
  };
}

/** Client TLS and proxy for webhook deliveries (Clair's notifier.http settings). */
async function readNotifierTls(config: Config): Promise<NotifierTls> {
  const { caFile, certFile, keyFile, serverName, proxy } = config.notifier.http;
  return {
    ...(caFile ? { ca: await readFile(caFile) } : {}),
    ...(certFile && keyFile ? { cert: await readFile(certFile), key: await readFile(keyFile) } : {}),
    ...(serverName ? { serverName } : {}),
    ...(proxy ? { proxy } : {}),
  };
}

export interface RunningServer {
  api: FastifyInstance;
  health: FastifyInstance;
  /** Where the API (JSON and gRPC) and health servers listen (ports resolved when configured as 0). */
  apiPort: number;
  healthPort: number;
  /** The gRPC-only port, when clair.api.grpcport asks for one. */
  grpcPort: number | undefined;
  stop(): Promise<void>;
}

/** How long gRPC calls under way may take to finish once the server stops. */
const GRPC_DRAIN_MS = 30_000;
/** How often the gRPC health service's answer is brought up to date with the database's. */
const GRPC_HEALTH_CHECK_MS = 5_000;

/** Binds the gRPC server alone to a port of its own (clair.api.grpcport), TLS as the API port's. */
function bindGrpcPort(server: grpc.Server, host: string, port: number, tls: ApiTls | undefined): Promise<number> {
  const credentials = tls
    ? grpc.ServerCredentials.createSsl(tls.ca ?? null, [{ private_key: tls.key, cert_chain: tls.cert }], tls.ca !== undefined)
    : grpc.ServerCredentials.createInsecure();
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => server.bindAsync(address, credentials, (err, bound) => (err ? reject(err) : resolve(bound))));
}

/** Whether a listen host is reachable from this machine only. */
function isLoopback(host: string): boolean {
  const v4 = host.toLowerCase().replace(/^::ffff:/, '');
  return host === 'localhost' || host === '::1' || (isIPv4(v4) && v4.startsWith('127.'));
}

function portOf(app: FastifyInstance): number {
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  const database = await openDatabase(config, log);
  const { pool } = database;
  // What a failed start must undo, so the process can end (the embedded database with it).
  const undo: Array<() => unknown> = [];
  let stopWatching = (): void => undefined;
  try {
    const pageTokens = new PageTokens(await loadPageTokenKey(pool, config.api.paginationKey));
    const metrics = new Metrics();
    // A rejection nothing handled is a defect in one piece of work (a request, a job), not a
    // reason to drop every other request: Node's default would end the process.
    const onUnhandledRejection = (reason: unknown): void => {
      metrics.unhandledRejections.inc();
      log.error({ err: reason }, 'unhandled promise rejection');
    };
    process.on('unhandledRejection', onUnhandledRejection);
    stopWatching = () => process.off('unhandledRejection', onUnhandledRejection);
    const indexer = new Indexer({ pool, settings: indexerSettings(config), log, metrics });
    const runner = new UpdaterRunner({ pool, settings: runnerSettings(config), log, metrics });
    const scheduler =
      config.updater.intervalMs > 0
        ? new UpdaterScheduler({ runner, pool, sources: enabledSources(config.updater.enabledUpdaters), log })
        : undefined;
    const notifier = new Notifier({
      pool,
      connection: database.connection,
      settings: notifierSettings(config),
      log,
      metrics,
      tls: await readNotifierTls(config),
    });
    // One implementation of the ancestry API, two transports: the JSON routes and gRPC.
    const images = imageServices({ pool, indexer, config, log, metrics });
    const ancestry = ancestryService({ pool, scans: images.scans });
    const grpcApi = buildGrpcServer({
      service: ancestry,
      pageTokens,
      log,
      metrics,
      api: config.api,
    });
    const retention = new ImageRetention({ pool, retentionMs: config.images.untaggedRetentionMs, log });
    const summaries = new SummaryRefresher({ pool, connection: pool.options, log });
    const rematcher = new Rematcher({ pool, log });
    const tls = await readTls(config);
    const api = buildApp({
      config,
      pool,
      log,
      pageTokens,
      metrics,
      indexer,
      ancestry,
      images,
      tls,
      grpc: { server: grpcApi.server, drainMs: GRPC_DRAIN_MS },
    });
    const health = buildHealthApp({ pool, log });
    // Closed even when listen fails: the app, once ready, listens for report changes on a connection of its own.
    undo.push(() => api.close());
    await api.listen({ host: config.api.host, port: config.api.port });
    undo.push(() => grpcApi.server.forceShutdown());
    const grpcPort =
      config.api.grpcPort === null ? undefined : await bindGrpcPort(grpcApi.server, config.api.host, config.api.grpcPort, tls);
    undo.push(() => health.close());
    await health.listen({ host: config.api.healthHost, port: config.api.healthPort });
    const apiPort = portOf(api);
    const healthPort = portOf(health);
    if (!authConfigured(config.api.auth) && !isLoopback(config.api.host)) {
      // Every route, writes included, is open to whoever reaches the address.
      log.warn({ host: config.api.host, port: apiPort, grpcPort }, 'API listening beyond loopback without authentication');
    }
    // gRPC's health service answers from a map: keep it in step with the database.
    const healthCheck = setInterval(() => {
      pool.query('SELECT 1').then(
        () => grpcApi.setServing('SERVING'),
        () => grpcApi.setServing('NOT_SERVING'),
      );
    }, GRPC_HEALTH_CHECK_MS);
    healthCheck.unref();
    undo.push(() => clearInterval(healthCheck));
    scheduler?.start();
    undo.push(() => scheduler?.stop());
    undo.push(() => notifier.stop());
    await notifier.start();
    // The image queue stops with the API app (its onClose hook).
    await images.queue.start();
    retention.start();
    undo.push(() => retention.stop());
    undo.push(() => summaries.stop());
    await summaries.start();
    rematcher.start();
    log.info({ apiHost: config.api.host, apiPort, healthHost: config.api.healthHost, healthPort, grpcPort }, 'tarsier listening');

    let stopping: Promise<void> | undefined;
    return {
      api,
      health,
      apiPort,
      healthPort,
      grpcPort,
      stop() {
        // Drain in-flight requests first, then release the database they were using.
        stopping ??= (async () => {
          clearInterval(healthCheck);
          await rematcher.stop();
          await scheduler?.stop();
          retention.stop();
          await summaries.stop();
          await notifier.stop();
          // Scans under way are aborted and their jobs released, to run again after a restart.
          await images.queue.stop();
          await api.close();
          await new Promise<void>((resolve) => grpcApi.server.tryShutdown(() => resolve()));
          await health.close();
          await database.close();
          stopWatching();
          log.info('tarsier stopped');
        })();
        return stopping;
      },
    };
  } catch (err) {
    for (const step of undo.reverse()) await step();
    await database.close();
    stopWatching();
    throw err;
  }
}

/** Stops the server on SIGTERM/SIGINT; a second signal exits at once. */
export function stopOnSignals(server: RunningServer, log: Logger): void {
  let received = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received) process.exit(1);
    received = true;
    log.info({ signal }, 'shutting down');
    server.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}
