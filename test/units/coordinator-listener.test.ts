import { describe, expect, it } from 'vitest';
import { WorkerPool } from '../../src/workers/coordinator.js';
import { Signer } from '../../src/workers/signing.js';

/** A coordinator whose Redis and queue only take what is asked of them. */
function pool(): WorkerPool {
  const chain = { rpush: () => chain, pexpire: () => chain, exec: async () => [] };
  const redis = { multi: () => chain } as never;
  const queue = { add: async () => ({}) } as never;
  const identity = { run: 'r', version: '0', workflow: { path: 'w.yml', sha256: 'x' }, providers: ['anthropic' as const], queue: 'q', shownUrl: 'redis://h' };
  return new WorkerPool(redis, redis, queue, identity, new Signer('s'.repeat(32)), () => {});
}

describe("the coordinator's reading of what workers say", () => {
  it('a listener that throws (a session write on a full disk) fails its own turn; the next message is still heard', async () => {
    const p = pool();
    const heard = (message: unknown) => (p as unknown as { heardSafely(m: unknown): void }).heardSafely(message);
    const failing = p.open('a', 1, {});
    const call = failing.call(
      { model: 'm', max_tokens: 1, messages: [] } as never,
      new AbortController().signal,
      {
        onWait: () => {
          throw new Error('ENOSPC: no space left on device');
        },
      },
      'anthropic',
    );
    const other = p.open('b', 1, {});
    const otherCall = other.call({ model: 'm', max_tokens: 1, messages: [] } as never, new AbortController().signal, {}, 'anthropic');
    await new Promise((r) => setTimeout(r, 10));
    heard({ type: 'attached', job: 'r/a/1', token: 't1', incarnation: p.incarnation, worker: 'w' });
    heard({ type: 'attached', job: 'r/b/1', token: 't2', incarnation: p.incarnation, worker: 'w' });
    expect(() => heard({ type: 'waiting', job: 'r/a/1', id: `${p.incarnation}.1`, reason: 'requests', waitMs: 10 })).not.toThrow();
    await expect(call).rejects.toThrow('ENOSPC');
    const answer = {
      id: 'msg',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 1, output_tokens: 1 },
    };
    heard({ type: 'result', job: 'r/b/1', id: `${p.incarnation}.1`, value: answer });
    await expect(otherCall).resolves.toMatchObject({ id: 'msg' });
  });
});
