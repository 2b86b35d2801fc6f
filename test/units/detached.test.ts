import { describe, expect, it } from 'vitest';
import { detached, nothingToDo } from '../../src/detached.js';

/** A promise nobody awaits, handed to what becomes of its failure (src/detached.ts), from source. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('a detached promise', () => {
  it('its failure reaches the handler with the error; a success calls nothing', async () => {
    const seen: unknown[] = [];
    const boom = new Error('boom');
    detached(Promise.reject(boom), (e) => seen.push(e));
    detached(Promise.resolve('fine'), (e) => seen.push(e));
    await turn();
    expect(seen).toEqual([boom]);
  });

  it('a handler that throws is the last word: dropped, no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      let called = 0;
      detached(Promise.reject(new Error('first')), () => {
        called++;
        throw new Error('the handler fails too');
      });
      await turn();
      await turn();
      expect(called).toBe(1);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });

  it('no promise at all: nothing happens', async () => {
    expect(() => detached(undefined, () => expect.unreachable())).not.toThrow();
    await turn();
  });

  it('a thenable that is not a promise is followed the same way', async () => {
    const seen: unknown[] = [];
    // biome-ignore lint/suspicious/noThenProperty: a thenable that is no promise is what this case is about
    const thenable: PromiseLike<unknown> = { then: (_ok, fail) => Promise.resolve().then(() => fail?.('refused')) as never };
    detached(thenable, (e) => seen.push(e));
    await turn();
    expect(seen).toEqual(['refused']);
  });

  it('nothingToDo does nothing and returns nothing', () => {
    expect(nothingToDo()).toBeUndefined();
  });
});
