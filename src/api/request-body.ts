import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { badRequest, TarsierError } from '../errors.js';
import { BODY_LIMIT_BYTES } from './limits.js';

export interface BodySettings {
  /** A body that has not fully arrived this long after its headers is answered 408 (clair.api.bodytimeout). */
  readonly deadlineMs: number;
  /** The most bytes it may have; BODY_LIMIT_BYTES unless given. */
  readonly limitBytes?: number;
}

const sizeText = (bytes: number): string => (bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`);

/** Bodies are read as sent: a compressed one is refused (415), with what to do, rather than read as garbage. */
export function compressedBodyError(headers: IncomingHttpHeaders): TarsierError | undefined {
  const encoding = headers['content-encoding']?.trim().toLowerCase();
  if (!encoding || encoding === 'identity') return undefined;
  return new TarsierError(
    'unsupported_media_type',
    `request bodies must not be compressed (Content-Encoding: ${encoding} is not supported)`,
  );
}

/**
 * A whole request body as bytes, within its size limit and the body deadline. Every route that
 * reads a body reads it through here (the layer upload, a stream, has its own idle deadline): a
 * client that declares a body and never sends it, or sends it too slowly, gets request_timeout
 * instead of holding the request open; a client that goes away mid-body ends the read.
 */
export function readBody(stream: Readable, headers: IncomingHttpHeaders, settings: BodySettings): Promise<Buffer> {
  const { deadlineMs, limitBytes = BODY_LIMIT_BYTES } = settings;
  const tooLarge = (): TarsierError =>
    new TarsierError('payload_too_large', `request body is larger than the ${sizeText(limitBytes)} limit`);
  return new Promise((resolve, reject) => {
    if (Number(headers['content-length']) > limitBytes) {
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (err: Error | undefined): void => {
      clearTimeout(timer);
      stream.off('data', onData).off('end', onEnd).off('error', finish).off('close', onClose);
      if (err) {
        stream.pause();
        reject(err);
      } else {
        resolve(Buffer.concat(chunks, size));
      }
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limitBytes) finish(tooLarge());
      else chunks.push(chunk);
    };
    const onEnd = (): void => finish(undefined);
    const onClose = (): void => finish(badRequest('the client closed the connection before the request body ended'));
    const timer = setTimeout(
      () =>
        finish(
          new TarsierError('request_timeout', `the request body did not arrive within ${deadlineMs / 1000} s (clair.api.bodytimeout)`),
        ),
      deadlineMs,
    );
    stream.on('data', onData).on('end', onEnd).on('error', finish).on('close', onClose);
  });
}
