import { describe, expect, it } from 'vitest';
import { SinglePass } from '../src/single-pass.js';

/** A pass whose runs the test ends one by one. */
function controlledPass() {
  const ends: Array<() => void> = [];
  let runs = 0;
  const pass = new SinglePass(
    () =>
      new Promise<void>((resolve) => {
        runs++;
        ends.push(resolve);
      }),
  );
  const endCurrent = async () => {
    ends.shift()?.();
    // Let the pass's settlement and the follow-up it schedules run.
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { pass, endCurrent, runs: () => runs, pending: () => ends.length };
}

describe('SinglePass', () => {
  it('runs one pass at a time; wake-ups during a pass make exactly one more pass follow', async () => {
    const { pass, endCurrent, runs } = controlledPass();
    pass.wake();
    expect(runs()).toBe(1);
    for (let i = 0; i < 5; i++) pass.wake();
    expect(runs()).toBe(1);
    await endCurrent();
    expect(runs()).toBe(2);
    await endCurrent();
    expect(runs()).toBe(2);
    await pass.idle();
    pass.wake();
    expect(runs()).toBe(3);
    await endCurrent();
    await pass.idle();
  });

  it('stop waits for the pass under way and starts none after it, however it was woken', async () => {
    const { pass, endCurrent, runs } = controlledPass();
    pass.wake();
    pass.wake();
    let stopped = false;
    const stopping = pass.stop().then(() => (stopped = true));
    expect(pass.stopped).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    await endCurrent();
    await stopping;
    pass.wake();
    expect(runs()).toBe(1);
  });
});
