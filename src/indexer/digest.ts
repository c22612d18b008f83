import { createHash } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { TarsierError } from '../errors.js';

/** A content digest as registries and the OCI spec write it. Only sha256 is accepted: it is what every registry uses. */
const SHA256_DIGEST = /^sha256:[a-f0-9]{64}$/;

export const isSha256Digest = (value: string): boolean => SHA256_DIGEST.test(value);

/**
 * The bytes read were not those the digest names. The message names the digests the bytes have:
 * the compressed one, and the uncompressed one when it was asked for (or why it is unknown).
 */
export class DigestMismatch extends TarsierError {
  constructor(
    readonly expected: string,
    readonly actual: string,
    uncompressed?: { digest: string } | { unknownBecause: string },
  ) {
    const also =
      uncompressed === undefined
        ? ''
        : 'digest' in uncompressed
          ? `, and uncompressed the digest ${uncompressed.digest}`
          : `; their uncompressed digest is unknown (${uncompressed.unknownBecause})`;
    super('bad_request', `layer ${expected}: the bytes received have the digest ${actual}${also}; nothing was stored`);
    this.name = 'DigestMismatch';
  }
}

/**
 * How a layer's bytes may be named by its digest: `blob` for the compressed bytes as a registry
 * stores them; `blob-or-tar` also for the decompressed tar stream (the image config's
 * rootfs.diff_ids), which names the same files.
 */
export type DigestOf = 'blob' | 'blob-or-tar';

/**
 * Resolves when stream can take more, or is gone; both listeners are removed either way (a race of
 * two once() promises left the loser's listeners behind at every pause: thousands on a large layer).
 */
function drainedOrClosed(stream: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

/**
 * Runs consume over source's bytes while hashing every byte of source, and resolves only when the
 * whole of source hashed to expected, or, when uncompressedDigest is given, when the digest of
 * the decompressed stream it reads from consume's result is expected (computed in the same pass
 * by the consumer, which decompresses anyway). consume may stop reading early (the archive
 * reader stops at the end-of-archive marker): the rest is still read and hashed, as a digest
 * covers the whole blob. A mismatch rejects with DigestMismatch whatever consume returned, so
 * nothing derived from the bytes is used; when consume fails on bytes that are not what the
 * digest names, the mismatch is what is reported.
 */
export async function verifiedRead<T>(
  source: Readable,
  expected: string,
  consume: (stream: Readable) => Promise<T>,
  uncompressedDigest?: (result: T) => string | undefined,
): Promise<T> {
  const hash = createHash('sha256');
  const forConsumer = new PassThrough();
  const pump = async (): Promise<string> => {
    try {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        hash.update(chunk);
        if (forConsumer.destroyed || forConsumer.writableEnded) continue;
        if (!forConsumer.write(chunk)) await drainedOrClosed(forConsumer);
      }
      forConsumer.end();
      return `sha256:${hash.digest('hex')}`;
    } catch (err) {
      forConsumer.destroy(err as Error);
      throw err;
    }
  };
  const pumping = pump();
  // The hashing side fails as soon as the source does, the consumer often only after its own I/O
  // (a decompressor process): until the code below awaits it, that rejection has no handler, and
  // an unhandled rejection ends the process.
  pumping.catch(() => undefined);
  let result: T;
  try {
    result = await consume(forConsumer);
  } catch (err) {
    // Bytes the layer reader refused may simply not be the layer the digest names: read the rest
    // (bounded by the layer limits) and say so. Anything else (the client went away) stops here.
    if (!(err instanceof TarsierError)) source.destroy();
    const actual = await pumping.catch(() => undefined);
    if (actual !== undefined && actual !== expected) {
      // Unread, the bytes may still be the tar the digest names: say why that is unknown.
      throw new DigestMismatch(expected, actual, uncompressedDigest && { unknownBecause: (err as Error).message });
    }
    throw err;
  }
  const actual = await pumping;
  if (actual === expected) return result;
  const uncompressed = uncompressedDigest?.(result);
  if (uncompressed === expected) return result;
  if (!uncompressedDigest) throw new DigestMismatch(expected, actual);
  throw new DigestMismatch(
    expected,
    actual,
    uncompressed === undefined
      ? { unknownBecause: 'what follows the end of the tar archive is over the size limit or cannot be decompressed' }
      : { digest: uncompressed },
  );
}
