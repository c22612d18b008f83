import { expect } from 'vitest';
import { TarsierError } from '../../src/errors.js';

/** The TarsierError `promise` rejects with; fails the test when it resolves or rejects otherwise. */
export async function tarsierError(promise: Promise<unknown>): Promise<TarsierError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TarsierError);
  return err as TarsierError;
}
