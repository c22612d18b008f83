import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

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

  readonly layerIndexDuration = new Histogram({
    name: 'tarsier_layer_index_duration_seconds',
    help: 'Time to download, read and store a layer, by outcome (indexed, or the error code).',
    labelNames: ['outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'tarsier_' });
  }
}
