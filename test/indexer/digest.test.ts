/**
 * verifiedRead hashes a layer while a reader consumes it. When the bytes stop coming (a client
 * that cancels its upload, a download cut off), the hashing side fails at once and the reader
 * later, after its own I/O: the first failure must not be an unhandled rejection, which would
 * take the whole server down, and the caller must see the cause.
 */
import { createHash } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DigestMismatch, verifiedRead } from '../../src/indexer/digest.js';

describe('verifiedRead', () => {
  const unhandled: unknown[] = [];
  const record = (reason: unknown): void => void unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', record);
  });
  afterEach(() => void process.off('unhandledRejection', record));

  /** A reader that, like the archive reader behind a decompressor process, fails a few event-loop turns after its input. */
  const slowToFail = async (stream: Readable): Promise<number> => {
    let bytes = 0;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) bytes += chunk.length;
    } catch (err) {
      for (let turn = 0; turn < 5; turn++) await nextTurn();
      throw err;
    }
    return bytes;
  };

  it('rejects with the source failure, and leaves no rejection unhandled, when the source fails mid-stream', async () => {
    const source = new PassThrough();
    const reading = verifiedRead(source, `sha256:${'0'.repeat(64)}`, slowToFail);
    source.write(Buffer.alloc(1024));
    await nextTurn();
    source.destroy(new Error('the layer upload failed: aborted'));
    await expect(reading).rejects.toThrow('the layer upload failed: aborted');
    for (let turn = 0; turn < 5; turn++) await nextTurn();
    expect(unhandled).toEqual([]);
  });

  it('returns what the reader read when every byte has the expected digest, and names both digests when not', async () => {
    const bytes = Buffer.from('layer bytes');
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    const good = new PassThrough();
    good.end(bytes);
    await expect(verifiedRead(good, digest, slowToFail)).resolves.toBe(bytes.length);
    const other = new PassThrough();
    other.end(Buffer.from('other bytes'));
    await expect(verifiedRead(other, digest, slowToFail)).rejects.toBeInstanceOf(DigestMismatch);
  });
});
