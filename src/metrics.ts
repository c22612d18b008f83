import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

const DEFAULT_METRICS_PREFIX = 'tarsier_';

/**
 * prom-client's default metrics that are gauges named with the `_total` suffix Prometheus keeps for
 * counters (`promtool check metrics` fails the exposition over them). Each is the sum of the
 * per-type gauge beside it (nodejs_active_handles{type}, ...), so they are not served.
 */
const MISNAMED_DEFAULT_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * Prometheus metrics of one Tarsier process. One registry per process (not prom-client's global
 * one) so tests can run several apps side by side.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'tarsier_http_requests_total',
    help: 'HTTP requests served, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'tarsier_http_request_duration_seconds',
    help: 'Time to serve HTTP requests, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  readonly httpErrors = new Counter({
    name: 'tarsier_http_errors_total',
    help: 'HTTP error answers, by route pattern ("unmatched": no route; "unparsed": refused by the HTTP parser), status code and reason (the error code).',
    labelNames: ['route', 'status', 'reason'] as const,
    registers: [this.registry],
  });

  readonly grpcRequests = new Counter({
    name: 'tarsier_grpc_requests_total',
    help: 'gRPC calls of the ancestry API, by method (Service/Method) and status code name.',
    labelNames: ['method', 'code'] as const,
    registers: [this.registry],
  });

  readonly grpcDuration = new Histogram({
    name: 'tarsier_grpc_request_duration_seconds',
    help: 'Time to serve gRPC calls, by method.',
    labelNames: ['method'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  readonly layerIndexDuration = new Histogram({
    name: 'tarsier_layer_index_duration_seconds',
    help: 'Time to download, read and store a layer, by outcome (indexed, or the error code).',
    labelNames: ['outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900],
    registers: [this.registry],
  });

  readonly updaterRuns = new Counter({
    name: 'tarsier_updater_runs_total',
    help: 'Updater runs by source and outcome (success, failure).',
    labelNames: ['source', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly updaterDuration = new Gauge({
    name: 'tarsier_updater_last_run_duration_seconds',
    help: 'Duration of the last run of each updater source.',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  readonly updaterLastSuccess = new Gauge({
    name: 'tarsier_updater_last_success_timestamp_seconds',
    help: 'Unix time of the last successful run of each updater source.',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  readonly updaterRecords = new Gauge({
    name: 'tarsier_updater_records',
    help: 'Vulnerabilities (NVD: entries) each updater source holds after its last successful run.',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  readonly updaterFailing = new Gauge({
    name: 'tarsier_updater_last_run_failed',
    help: '1 when the last run of the source failed (its error is in GET /status and the log), else 0.',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  readonly deliveries = new Counter({
    name: 'tarsier_notifier_deliveries_total',
    help: 'Webhook delivery tries of notifications, by outcome (delivered, failed).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly deliveryDuration = new Histogram({
    name: 'tarsier_notifier_delivery_duration_seconds',
    help: 'Time to deliver one notification to every endpoint.',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly imageScans = new Counter({
    name: 'tarsier_image_scans_total',
    help: 'Image scans from registries (API, queue attempts, Harbor), by outcome (scanned, failed).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly imageJobs = new Counter({
    name: 'tarsier_image_jobs_total',
    help: 'Queued image scan attempts (webhooks, ?wait=false, Harbor), by outcome: done, retry (failed, will run again), given_up.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly unhandledRejections = new Counter({
    name: 'tarsier_unhandled_rejections_total',
    help: 'Promise rejections no code handled: each is a defect, logged with its stack; the process goes on serving.',
    registers: [this.registry],
  });

  /** Where the image queue depth is read at scrape time (set by whoever runs the queue). */
  imageQueueDepth: (() => Promise<{ waiting: number; running: number }>) | undefined;

  readonly imageQueue: Gauge<'state'> = new Gauge({
    name: 'tarsier_image_queue_depth',
    help: 'Queued image scans not yet done, by state (waiting: ready or backing off; running: locked by a worker).',
    labelNames: ['state'] as const,
    registers: [this.registry],
    collect: async () => {
      const depth = await this.imageQueueDepth?.().catch(() => undefined);
      if (!depth) return;
      this.imageQueue.set({ state: 'waiting' }, depth.waiting);
      this.imageQueue.set({ state: 'running' }, depth.running);
    },
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: DEFAULT_METRICS_PREFIX });
    for (const name of MISNAMED_DEFAULT_GAUGES) this.registry.removeSingleMetric(DEFAULT_METRICS_PREFIX + name);
  }
}
