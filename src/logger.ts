import pino, { type Logger } from 'pino';

/**
 * The process logger: JSON lines on stdout. Credentials never reach the log: request headers are
 * not logged by the request serializer, and these paths are redacted wherever they appear.
 * Written asynchronously: a synchronous write blocks the event loop whenever the reader of stdout
 * (a container runtime, a pipe) is slower than the server, which halved the rate of cached reports
 * in the layer-report benchmark. pino flushes what is buffered synchronously when the process exits.
 */
export function createLogger(level: string, destination: 1 | 2 = 1): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'headers.Authorization',
          '*.headers.authorization',
          '*.headers.Authorization',
          'authorization',
          'Authorization',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: destination, sync: false }),
  );
}
