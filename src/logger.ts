import pino, { type Logger } from 'pino';

/**
 * The process logger: JSON lines on stdout. Credentials never reach the log: request headers are
 * not logged by the request serializer, and these paths are redacted wherever they appear.
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
    pino.destination({ fd: destination, sync: true }),
  );
}
