import { describe, expect, it } from 'vitest';
import { CallAborted, PromptTooLong, ProviderError } from '../../src/provider/provider-errors.js';
import { errorFromWire, errorToWire, jobIdOf, jobPlace, keysOf, messageOf, QUEUE_NAME, WorkerFailure } from '../../src/workers/wire.js';

/** An error as the coordinator rebuilds it after a worker sent it across Redis. */
const across = (e: unknown, signal?: AbortSignal) => errorFromWire(JSON.parse(JSON.stringify(errorToWire(e, signal))), 'w1');

describe('what crosses Redis between a coordinator and its workers', () => {
  it("a provider's failure keeps its kind and status; a prompt too long is one again, with the window it named", () => {
    const outage = across(new ProviderError('529 overloaded', 'outage', 529));
    expect(outage).toBeInstanceOf(ProviderError);
    expect(outage).toMatchObject({ message: '529 overloaded', kind: 'outage', status: 529 });
    const auth = across(new ProviderError('invalid x-api-key', 'auth'));
    expect(auth).toMatchObject({ kind: 'auth', status: undefined });
    expect(errorToWire(new ProviderError('invalid x-api-key', 'auth')), 'no status key when there is none').toStrictEqual({
      message: 'invalid x-api-key',
      provider: { kind: 'auth' },
    });
    const tooLong = across(new ProviderError('prompt is too long: 250000 tokens > 200000 maximum', 'request', 400));
    expect(tooLong).toBeInstanceOf(PromptTooLong);
    expect((tooLong as PromptTooLong).maximumTokens).toBe(200000);
    expect(across(new ProviderError('max_tokens: too large', 'request', 400))).not.toBeInstanceOf(PromptTooLong);
  });

  it("an aborted call is an abort on the other side, whatever the error; anything else is the worker's failure, in its words", () => {
    expect(across(new CallAborted())).toBeInstanceOf(CallAborted);
    const stopped = new AbortController();
    stopped.abort();
    expect(across(new Error('socket hang up'), stopped.signal)).toBeInstanceOf(CallAborted);
    expect(errorToWire(new Error('socket hang up'), new AbortController().signal)).toEqual({ message: 'socket hang up' });
    const failure = across(new Error('ENOSPC: no space left on device'));
    expect(failure).toBeInstanceOf(WorkerFailure);
    expect(failure.message).toBe('worker w1: ENOSPC: no space left on device');
    expect(across('a string thrown').message).toBe('worker w1: a string thrown');
    expect(errorToWire('a string thrown')).toEqual({ message: 'a string thrown' });
  });

  it('takes for a message only an object with a type: a hostile list holds anything', () => {
    expect(messageOf({ type: 'done' })).toEqual({ type: 'done' });
    for (const value of [null, undefined, 3, 'done', [], ['done'], {}, { type: 3 }, { kind: 'done' }])
      expect(messageOf(value), JSON.stringify(value)).toBeUndefined();
  });

  it('names jobs, places and keys so that a turn is queued once and a sealed job opens only where it was meant to', () => {
    expect(jobIdOf('20261126T000000Z-abc', 'reviewer-2', 3)).toBe('20261126T000000Z-abc/reviewer-2/3');
    expect(jobPlace('q1', 'r/a/1')).toBe('job q1 r/a/1');
    expect(jobPlace('q1', 'r/a/1')).not.toBe(jobPlace('q2', 'r/a/1'));
    const keys = keysOf('q1');
    expect(keys).toMatchObject({ up: 'conclave:q1:up', heartbeat: 'conclave:q1:heartbeat', ended: 'conclave:q1:ended' });
    expect(keys.down('r/a/1', 'tok')).toBe('conclave:q1:down:r/a/1:tok');
    expect(keysOf('q2').up).not.toBe(keys.up);
  });

  it('takes a queue name BullMQ can use and a person would type', () => {
    for (const ok of ['conclave', 'run-123-1', 'a', 'A.b_c-9', 'x'.repeat(100)]) expect(QUEUE_NAME.test(ok), ok).toBe(true);
    for (const bad of ['', '-a', '.a', 'a:b', 'a b', 'x'.repeat(101), 'ü']) expect(QUEUE_NAME.test(bad), bad).toBe(false);
  });
});
