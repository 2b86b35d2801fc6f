import { describe, expect, it, vi } from 'vitest';
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

/** A coordinator whose Redis and queue are fakes that record what is asked of them. */
function watched(options: { lockHeld?: boolean; jobState?: string; exec?: () => Promise<unknown> } = {}) {
  const told: { key: string; value: string }[] = [];
  const queued: string[] = [];
  const removed: string[] = [];
  const warned: string[] = [];
  const chain = {
    rpush: (key: string, value: string) => (told.push({ key, value }), chain),
    pexpire: () => chain,
    set: () => chain,
    del: () => chain,
    exec: options.exec ?? (async () => []),
  };
  const redis = { multi: () => chain, exists: async () => (options.lockHeld ? 1 : 0), disconnect: () => {} } as never;
  const queue = {
    add: async (_name: string, _data: unknown, o: { jobId: string }) => void queued.push(o.jobId),
    getJobState: async () => options.jobState ?? 'waiting',
    getJob: async (id: string) => ({ getState: async () => options.jobState ?? 'waiting', remove: async () => void removed.push(id) }),
    toKey: (k: string) => `bull:q:${k}`,
    close: async () => {},
  } as never;
  const identity = { run: 'r', version: '0', workflow: { path: 'w.yml', sha256: 'x' }, providers: ['anthropic' as const], queue: 'q', shownUrl: 'redis://h' };
  const p = new WorkerPool(redis, redis, queue, identity, new Signer('s'.repeat(32)), (m) => warned.push(m));
  const internals = p as unknown as {
    heardSafely(m: unknown): void;
    sayStoppedWorkers(now: number): Promise<void>;
    lookAfterWaiting(): Promise<void>;
  };
  return { p, told, queued, removed, warned, internals };
}

const REQUEST = { model: 'm', max_tokens: 1, messages: [] } as never;
const pending = (p: WorkerPool, agent: string) => {
  const call = p.open(agent, 1, {}).call(REQUEST, new AbortController().signal, {}, 'anthropic');
  call.catch(() => {});
  return call;
};
const tick = () => new Promise((r) => setTimeout(r, 10));

describe("the coordinator's care of turns that wait", () => {
  it('hears an attachment of its own incarnation only; one for a turn that is over is told it is done', async () => {
    const { p, told, internals } = watched();
    const turn = p.open('a', 1, {}) as unknown as { busyWorker(): string | undefined; call: (...a: unknown[]) => Promise<unknown> };
    turn.call(REQUEST, new AbortController().signal, {}, 'anthropic').catch(() => {});
    await tick();
    internals.heardSafely({ type: 'attached', job: 'r/a/1', token: 't', incarnation: 'an-old-coordinator', worker: 'w1' });
    expect(turn.busyWorker()).toBeUndefined();
    internals.heardSafely({ type: 'attached', job: 'r/a/1', token: 't', incarnation: p.incarnation, worker: 'w1' });
    expect(turn.busyWorker()).toBe('w1');
    told.length = 0;
    internals.heardSafely({ type: 'attached', job: 'r/gone/3', token: 'tok', incarnation: p.incarnation, worker: 'w1' });
    await tick();
    expect(told.map((t) => t.key)).toEqual(['conclave:q:down:r/gone/3:tok']);
    expect(new Signer('s'.repeat(32)).openText('conclave:q:down:r/gone/3:tok', told[0]!.value)).toEqual({ type: 'done' });
    // A message for a job it does not know, or of another kind, changes nothing.
    expect(() => internals.heardSafely({ type: 'result', job: 'r/unknown/1', id: 'x', value: {} })).not.toThrow();
  });

  it("says a worker's refusal once per worker and reason", () => {
    const { internals, warned } = watched();
    for (const worker of ['w1', 'w1', 'w2']) internals.heardSafely({ type: 'refused', job: 'r/a/1', worker, reason: 'another version' });
    internals.heardSafely({ type: 'refused', job: 'r/a/1', worker: 'w1', reason: 'no sandbox' });
    expect(warned).toEqual(['worker w1 refused r/a/1: another version', 'worker w2 refused r/a/1: another version', 'worker w1 refused r/a/1: no sandbox']);
  });

  it("says once that a busy worker stopped when its job's lock lapsed, and not while the lock is held", async () => {
    const held = watched({ lockHeld: true });
    void pending(held.p, 'a');
    await tick();
    held.internals.heardSafely({ type: 'attached', job: 'r/a/1', token: 't', incarnation: held.p.incarnation, worker: 'w1' });
    await held.internals.sayStoppedWorkers(Date.now() + 60_000);
    expect(held.warned).toEqual([]);

    const { p, warned, internals } = watched();
    void pending(p, 'a');
    void pending(p, 'b');
    await tick();
    internals.heardSafely({ type: 'attached', job: 'r/a/1', token: 't', incarnation: p.incarnation, worker: 'w1' });
    // Not yet: its operation has waited less than the lock's life.
    await internals.sayStoppedWorkers(Date.now() + 1_000);
    expect(warned).toEqual([]);
    await internals.sayStoppedWorkers(Date.now() + 4_100);
    await internals.sayStoppedWorkers(Date.now() + 60_000);
    expect(warned).toEqual([
      'worker w1 stopped answering for turn 1 of @a (its lock on the job lapsed): the turn goes to the next worker that takes it; if none runs, start ' +
        'one with: conclave worker redis://h --queue q',
    ]);
  });

  it('queues again a job that was lost, and only one that was', async () => {
    const lost = watched({ jobState: 'unknown' });
    void pending(lost.p, 'a');
    await tick();
    expect(lost.queued).toEqual(['r/a/1']);
    await lost.internals.lookAfterWaiting();
    expect(lost.queued, 'too soon: it was queued a moment ago').toEqual(['r/a/1']);
    await new Promise((r) => setTimeout(r, 2_100));
    await lost.internals.lookAfterWaiting();
    expect(lost.queued).toEqual(['r/a/1', 'r/a/1']);

    const fine = watched({ jobState: 'waiting' });
    void pending(fine.p, 'a');
    await new Promise((r) => setTimeout(r, 2_100));
    await fine.internals.lookAfterWaiting();
    expect(fine.queued).toEqual(['r/a/1']);
  }, 10_000);

  it('says how many turns wait for a worker, and for how long, after 5 s and then every 30 s', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const { p, warned, internals } = watched();
      void pending(p, 'a');
      void pending(p, 'b');
      await vi.advanceTimersByTimeAsync(4_000);
      await internals.lookAfterWaiting();
      expect(warned).toEqual([]);
      await vi.advanceTimersByTimeAsync(1_000);
      await internals.lookAfterWaiting();
      expect(warned).toEqual([
        'waiting for workers: 2 turns queued on "q" at redis://h, and no worker has taken them for 5s; start one with: conclave worker redis://h --queue q',
      ]);
      await vi.advanceTimersByTimeAsync(29_000);
      await internals.lookAfterWaiting();
      expect(warned).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1_000);
      await internals.lookAfterWaiting();
      expect(warned.at(-1)).toBe(
        'waiting for workers: 2 turns queued on "q" at redis://h, and no worker has taken them for 35s; start one with: conclave worker redis://h --queue q',
      );
      internals.heardSafely({ type: 'attached', job: 'r/a/1', token: 't', incarnation: p.incarnation, worker: 'w1' });
      await vi.advanceTimersByTimeAsync(30_000);
      await internals.lookAfterWaiting();
      expect(warned.filter((w) => w.startsWith('waiting')).at(-1)).toMatch(
        /^waiting for workers: 1 turn queued on "q" at redis:\/\/h, and no worker has taken it for 65s;/,
      );
    } finally {
      vi.useRealTimers();
    }
  });

  it('an ended turn takes back a job no worker took, and leaves one a worker holds', async () => {
    const waiting = watched({ jobState: 'waiting' });
    const a = waiting.p.open('a', 1, {});
    a.call(REQUEST, new AbortController().signal, {}, 'anthropic').catch(() => {});
    await tick();
    await (a as unknown as { end(): Promise<void> }).end();
    expect(waiting.removed).toEqual(['r/a/1']);
    const active = watched({ jobState: 'active' });
    const b = active.p.open('b', 1, {});
    b.call(REQUEST, new AbortController().signal, {}, 'anthropic').catch(() => {});
    await tick();
    await (b as unknown as { end(): Promise<void> }).end();
    expect(active.removed).toEqual([]);
    // A turn that never queued its job asks nothing of the queue.
    const never = watched();
    await (never.p.open('c', 1, {}) as unknown as { end(): Promise<void> }).end();
    expect(never.removed).toEqual([]);
  });

  it('a Redis that does not answer at the end of the run is said, once, within 5 s', async () => {
    const { p, warned } = watched({ exec: () => new Promise(() => {}) });
    const started = Date.now();
    await p.close();
    await p.close();
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(warned).toEqual(["the workers' Redis did not answer at the end of the run: workers will find the run gone when its heartbeat expires"]);
  }, 20_000);
});
