/**
 * Each part's settings from the configuration: the one place the Config is translated into what
 * the indexer, the registry client, the updater runner and the notifier take. The parts never see
 * the Config (config.ts only parses and validates it); the entry points (server.ts, cli.ts, the
 * standalone scanner) and services.ts call these. Type imports only, so a command that loads this
 * loads none of the parts it describes.
 */
import type { Config } from './config.js';
import type { IndexerSettings } from './indexer/indexer.js';
import type { NotifierSettings } from './notifier/notifier.js';
import type { RegistryClientSettings } from './registry/client.js';
import type { RunnerSettings } from './updater/runner.js';

/** The indexer's: layer downloads (clair.api.localroots, clair.indexer.*) and archive limits. */
export function indexerSettings(config: Config): IndexerSettings {
  return {
    fetch: {
      localRoots: config.api.localRoots,
      downloadTimeoutMs: config.indexer.downloadTimeoutMs,
      uploadIdleTimeoutMs: config.api.uploadIdleTimeoutMs,
      maxLayerBytes: config.indexer.maxLayerBytes,
      denyPrivate: config.indexer.denyPrivate,
      allowNetworks: config.indexer.allowNetworks,
    },
    limits: { maxExpandedBytes: config.indexer.maxExpandedBytes, maxFileBytes: config.indexer.maxFileBytes },
  };
}

/**
 * The registry client's: the layer downloads' timeouts and address policy, credentials from
 * clair.registries. requestsConfigure: see RegistryClientSettings.
 */
export function registryClientSettings(config: Config, options: { requestsConfigure?: boolean } = {}): RegistryClientSettings {
  return {
    fetch: indexerSettings(config).fetch,
    hosts: (host) => config.registries[host],
    ...(options.requestsConfigure ? { requestsConfigure: true } : {}),
  };
}

/** The updater runner's. */
export function runnerSettings(config: Config): RunnerSettings {
  return {
    intervalMs: config.updater.intervalMs,
    sources: config.updater.sources,
    downloadTimeoutMs: config.indexer.downloadTimeoutMs,
    notifyRiskChanges: config.notifier.onEnrichment,
  };
}

/** The notifier's (its TLS material is read from disk by the server: readNotifierTls). */
export function notifierSettings(config: Config): NotifierSettings {
  return {
    endpoints: config.notifier.endpoints,
    attempts: config.notifier.attempts,
    renotifyIntervalMs: config.notifier.renotifyIntervalMs,
    secret: config.notifier.secret,
    retentionMs: config.notifier.retentionMs,
  };
}
