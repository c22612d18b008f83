import { afterAll, onTestFinished, TestRunner } from 'vitest';

/**
 * Releases what a helper opened (a database, a pool, an app, a server, a process) once whoever
 * asked for it is done: the test that made it (in its body or its beforeEach) when that test ends,
 * and what was made at the top of the file, in a describe or in a beforeAll when the file ends.
 * vitest runs no afterAll registered inside a hook or a test, so helpers register their releases
 * here instead. Releasing a test's own at its end keeps a file of many tests from holding their
 * databases and connections until it ends.
 *
 * This module is imported while the test file is collected (each file has its own copy), so its
 * one afterAll belongs to that file. Releases run last in, first out (an app before its pool, a
 * pool before its database), each once, every one of them even when another fails; the file's end
 * also runs those a test's end did not.
 */
/** Releases registered and not run yet, in the order they were registered. */
const pending = new Set<() => Promise<void>>();

async function releaseAll(releases: Array<() => Promise<void>>): Promise<void> {
  const errors: unknown[] = [];
  for (let release = releases.pop(); release; release = releases.pop()) {
    try {
      await release();
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, 'releasing what the test file opened failed');
}

afterAll(() => releaseAll([...pending]));

/** Runs release when the test that calls this ends, or, called outside a test, when the test file ends. */
export function whenDone(release: () => unknown): void {
  let done: Promise<void> | undefined;
  const once = (): Promise<void> => {
    pending.delete(once);
    return (done ??= (async () => void (await release()))());
  };
  pending.add(once);
  if (TestRunner.getCurrentTest()) onTestFinished(once);
}
