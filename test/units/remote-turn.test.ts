import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { ModelRequest, ModelResponse } from '../../src/provider/client.js';
import { CallAborted, ProviderError, PromptTooLong } from '../../src/provider/provider-errors.js';
import { RemoteTurn, type TurnCarrier } from '../../src/workers/remote-turn.js';
import { WorkerFailure, type Down, type TurnJob, type Up } from '../../src/workers/wire.js';

const JOB: TurnJob = { run: 'r', agent: 'helper', turn: 1, version: '0.1.0', workflow: { path: 'w.yml', sha256: 'x' }, providers: ['anthropic'], env: {} };
const REQUEST = { model: 'claude-haiku-4-5', max_tokens: 10, messages: [] } as unknown as ModelRequest;
const ANSWER: ModelResponse = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-haiku-4-5',
  content: [{ type: 'text', text: 'hi', citations: null }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 1, output_tokens: 1 },
} as unknown as ModelResponse;

/** A coordinator that keeps what the turn asks of it. */
function carrier() {
  const told: { token: string; message: Down }[] = [];
  const log: string[] = [];
  const c: TurnCarrier = {
    incarnation: 'inc',
    lost: undefined,
    enqueue: async () => void log.push('enqueue'),
    dequeue: async () => void log.push('dequeue'),
    tell: async (jobId, token, message) => void told.push({ token, message: { ...message, ...(jobId === 'job' ? {} : { jobId }) } as Down }),
  };
  return { c, told, log };
}

const ops = (told: { token: string; message: Down }[]) =>
  told
    .filter((t) => t.message.type === 'op')
    .map((t) => [t.token, t.message.type === 'op' ? t.message.op.kind : '', t.message.type === 'op' ? t.message.id : '']);
const flush = () => new Promise((r) => setTimeout(r, 0));
const result = (id: string, value: unknown): Exclude<Up, { type: 'attached' | 'refused' }> => ({ type: 'result', job: 'job', id, value }) as never;
const use = (name: string) => ({ id: 'tu_1', name, input: { path: 'a' } });

describe('a turn whose operations run on a worker', () => {
  it('queues its job once, with its first operation, and sends each operation to the worker attached to it', async () => {
    const { c, told, log } = carrier();
    const turn = new RemoteTurn('job', JOB, c);
    expect(log).toEqual([]);
    const answer = turn.call(REQUEST, new AbortController().signal, { inputTokens: 5 }, 'anthropic');
    await flush();
    expect(log).toEqual(['enqueue']);
    expect(turn.waitingSince()).toBeTypeOf('number');
    expect(told).toEqual([]);
    turn.attached('w1', 't1');
    expect(turn.waitingSince()).toBeUndefined();
    await flush();
    expect(told).toEqual([
      { token: 't1', message: { type: 'op', id: 'inc.1', op: { kind: 'call', request: REQUEST, provider: 'anthropic', inputTokens: 5 } } },
    ]);
    turn.heard(result('inc.1', ANSWER));
    expect(await answer).toBe(ANSWER);
    const tool = turn.tool(use('read_file'), true, new AbortController().signal);
    await flush();
    expect(ops(told).at(-1)).toEqual(['t1', 'tool', 'inc.2']);
    expect(log).toEqual(['enqueue']);
    turn.heard(result('inc.2', { content: 'text' }));
    expect(await tool).toEqual({ content: 'text' });
    turn.heard(result('inc.2', { content: 'again' }));
    turn.attached('w1', 't1');
    expect(ops(told)).toHaveLength(2);
  });

  it('taken over by another worker: the call in flight and a read-only tool are sent again, a tool that may have acted is "outcome unknown"', async () => {
    const { c, told } = carrier();
    const turn = new RemoteTurn('job', JOB, c);
    turn.attached('w1', 't1');
    const call = turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
    await flush();
    turn.attached('w2', 't2');
    await flush();
    expect(ops(told)).toEqual([
      ['t1', 'call', 'inc.1'],
      ['t2', 'call', 'inc.1'],
    ]);
    turn.heard(result('inc.1', ANSWER));
    expect(await call).toBe(ANSWER);

    const write = turn.tool(use('write_file'), false, new AbortController().signal);
    await flush();
    turn.attached('w3', 't3');
    expect((await write).content).toMatch(/^The outcome of this write_file call is unknown: the worker running it \(w2\) stopped, and it was not run again/);
    expect((await write).isError).toBe(true);
    expect(ops(told).map((o) => o[0])).toEqual(['t1', 't2', 't2']);

    const read = turn.tool(use('read_file'), true, new AbortController().signal);
    await flush();
    turn.attached('w4', 't4');
    await flush();
    expect(ops(told).slice(-2)).toEqual([
      ['t3', 'tool', 'inc.3'],
      ['t4', 'tool', 'inc.3'],
    ]);
    turn.heard(result('inc.3', { content: 'read' }));
    expect(await read).toEqual({ content: 'read' });
  });

  it('a worker failure keeps what decides the exit code; an answer that is none is refused; retries, waits and pacing reach the listeners', async () => {
    const { c } = carrier();
    const turn = new RemoteTurn('job', JOB, c);
    turn.attached('w1', 't1');
    const seen: unknown[] = [];
    const listeners = {
      onRetry: (e: string, ms: number) => seen.push(['retry', e, ms]),
      onWait: (r: string, ms: number) => seen.push(['wait', r, ms]),
      onPaced: (ms: number, r: string) => seen.push(['paced', ms, r]),
    };
    const first = turn.call(REQUEST, new AbortController().signal, listeners, 'anthropic');
    turn.heard({ type: 'retry', job: 'job', id: 'inc.1', error: '529 overloaded', waitMs: 500 });
    turn.heard({ type: 'waiting', job: 'job', id: 'inc.1', reason: 'requests', waitMs: 800 });
    turn.heard({ type: 'paced', job: 'job', id: 'inc.1', waitedMs: 810, reason: 'requests' });
    turn.heard({
      type: 'failed',
      job: 'job',
      id: 'inc.1',
      error: { message: 'prompt is too long: 300000 tokens > 200000 maximum', provider: { kind: 'request', status: 400 } },
    });
    const error = await first.catch((e: unknown) => e);
    expect(seen).toEqual([
      ['retry', '529 overloaded', 500],
      ['wait', 'requests', 800],
      ['paced', 810, 'requests'],
    ]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(PromptTooLong.of(error)?.maximumTokens).toBe(200000);
    const outage = turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
    turn.heard({ type: 'failed', job: 'job', id: 'inc.2', error: { message: 'overloaded', provider: { kind: 'outage', status: 529 } } });
    expect(await outage.catch((e: ProviderError) => [e.kind, e.status])).toEqual(['outage', 529]);
    const other = turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
    turn.heard({ type: 'failed', job: 'job', id: 'inc.3', error: { message: 'disk full' } });
    expect(await other.catch((e: Error) => [e.constructor, e.message])).toEqual([WorkerFailure, 'worker w1: disk full']);
    const garbage = turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
    turn.heard(result('inc.4', { content: 'not blocks' }));
    expect(await garbage.catch((e: Error) => e.message)).toBe('worker w1 sent an answer that is not a Messages API response');
    const badTool = turn.tool(use('grep'), true, new AbortController().signal);
    turn.heard(result('inc.5', { content: 42 }));
    expect(await badTool.catch((e: Error) => e.message)).toBe('worker w1 sent a result of grep that is not a tool result');
    const aborted = turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
    turn.heard({ type: 'failed', job: 'job', id: 'inc.6', error: { message: 'aborted', aborted: true } });
    expect(await aborted.catch((e: unknown) => e)).toBeInstanceOf(CallAborted);
  });

  it('cancelled: the worker is told to abort the operation, which fails at once; ended: the worker is told it is done and the job taken back', async () => {
    const { c, told, log } = carrier();
    const turn = new RemoteTurn('job', JOB, c);
    expect(await turn.call(REQUEST, AbortSignal.abort(), {}, 'anthropic').catch((e: unknown) => e)).toBeInstanceOf(CallAborted);
    expect(log).toEqual([]);
    const control = new AbortController();
    const call = turn.call(REQUEST, control.signal, {}, 'anthropic');
    turn.attached('w1', 't1');
    await flush();
    control.abort();
    expect(await call.catch((e: unknown) => e)).toBeInstanceOf(CallAborted);
    await flush();
    expect(told.at(-1)).toEqual({ token: 't1', message: { type: 'abort', id: 'inc.1' } });
    turn.heard(result('inc.1', ANSWER));
    const left = turn.tool(use('run_command'), false, new AbortController().signal);
    await turn.end();
    expect(await left.catch((e: unknown) => e)).toBeInstanceOf(CallAborted);
    expect(told.at(-1)).toEqual({ token: 't1', message: { type: 'done' } });
    expect(log).toEqual(['enqueue', 'dequeue']);
    await turn.end();
    expect(log).toEqual(['enqueue', 'dequeue']);
    expect(await turn.call(REQUEST, new AbortController().signal, {}, 'anthropic').catch((e: unknown) => e)).toBeInstanceOf(CallAborted);
    // A turn that never needed a worker queued nothing, and takes nothing back but its place.
    const { c: c2, told: told2, log: log2 } = carrier();
    await new RemoteTurn('job', JOB, c2).end();
    expect([told2, log2]).toEqual([[], ['dequeue']]);
  });

  it('a Redis gone: what waits fails with the reason, and what is asked after fails at once', async () => {
    const { c } = carrier();
    const turn = new RemoteTurn('job', JOB, c);
    const waiting = turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
    const gone = new WorkerFailure("the workers' Redis has not answered");
    turn.fail(gone);
    expect(await waiting.catch((e: unknown) => e)).toBe(gone);
    const lost = new RemoteTurn('job', JOB, { ...c, lost: gone });
    expect(await lost.tool(use('grep'), true, new AbortController().signal).catch((e: unknown) => e)).toBe(gone);
  });

  it('an operation not yet sent is aborted without a word to any worker; a settled one leaves no listener on the signal', async () => {
    const { c, told } = carrier();
    const turn = new RemoteTurn('job', JOB, c);
    const control = new AbortController();
    const unsent = turn.call(REQUEST, control.signal, {}, 'anthropic');
    expect(getEventListeners(control.signal, 'abort')).toHaveLength(1);
    control.abort();
    expect(await unsent.catch((e: unknown) => e)).toBeInstanceOf(CallAborted);
    turn.attached('w1', 't1');
    await flush();
    expect(told).toEqual([]);
    const signal = new AbortController().signal;
    const sent = turn.tool(use('grep'), true, signal);
    turn.heard(result('inc.2', { content: 'found', isError: true }));
    expect(await sent).toEqual({ content: 'found', isError: true });
    const failed = turn.tool(use('grep'), true, signal);
    turn.heard({ type: 'failed', job: 'job', id: 'inc.3', error: { message: 'x' } });
    await failed.catch(() => {});
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    const odd = turn.tool(use('grep'), true, signal);
    turn.heard(result('inc.4', { content: 'found', isError: 'yes' }));
    expect(await odd.catch((e: Error) => e.message)).toBe('worker w1 sent a result of grep that is not a tool result');
    for (const [n, value] of [
      [5, null],
      [6, 'found'],
    ] as const) {
      const bare = turn.tool(use('grep'), true, signal);
      turn.heard(result(`inc.${n}`, value));
      expect(await bare.catch((e: Error) => e.message)).toBe('worker w1 sent a result of grep that is not a tool result');
    }
  });

  it('the same attachment said twice sends nothing twice; an attachment after the end sends nothing; a job that cannot be queued fails what waits', async () => {
    const { c, told } = carrier();
    const turn = new RemoteTurn('job', JOB, c);
    const call = turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
    turn.attached('w1', 't1');
    turn.attached('w1', 't1');
    await flush();
    expect(ops(told)).toEqual([['t1', 'call', 'inc.1']]);
    await turn.end();
    await call.catch(() => {});
    turn.attached('w2', 't2');
    await flush();
    expect(told.map((t) => t.token)).toEqual(['t1', 't1']);
    const failing = new RemoteTurn('job', JOB, { ...c, enqueue: () => Promise.reject(new Error("READONLY You can't write against a read only replica")) });
    const error = await failing.call(REQUEST, new AbortController().signal, {}, 'anthropic').catch((e: Error) => e);
    expect([error.constructor, error.message]).toEqual([WorkerFailure, "the workers' Redis failed: READONLY You can't write against a read only replica"]);
  });

  it('two operations before a worker: one job; their age is known; a word that cannot be sent fails the operation; a call with no listeners takes retries silently', async () => {
    const { c, log } = carrier();
    const turn = new RemoteTurn('job', JOB, c);
    expect([turn.waitingSince(), turn.hasPendingSince(Date.now())]).toEqual([undefined, false]);
    const before = Date.now();
    const first = turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
    const second = turn.tool(use('grep'), true, new AbortController().signal);
    await flush();
    expect(log).toEqual(['enqueue']);
    expect(turn.waitingSince()).toBeGreaterThanOrEqual(before);
    expect(turn.hasPendingSince(before - 1)).toBe(false);
    expect(turn.hasPendingSince(Date.now())).toBe(true);
    turn.heard({ type: 'retry', job: 'job', id: 'inc.1', error: 'overloaded', waitMs: 1 });
    turn.heard({ type: 'waiting', job: 'job', id: 'inc.1', reason: 'requests', waitMs: 1 });
    turn.heard({ type: 'paced', job: 'job', id: 'inc.1', waitedMs: 1, reason: 'requests' });
    turn.close();
    expect(await first.catch((e: unknown) => e)).toBeInstanceOf(CallAborted);
    expect(await second.catch((e: unknown) => e)).toBeInstanceOf(CallAborted);
    await flush();
    expect(log).toEqual(['enqueue', 'dequeue']);
    const mute = new RemoteTurn('job', JOB, { ...c, tell: () => Promise.reject(new Error('connection reset')) });
    const unsendable = mute.call(REQUEST, new AbortController().signal, {}, 'anthropic');
    mute.attached('w1', 't1');
    expect(await unsendable.catch((e: Error) => e.message)).toBe("the workers' Redis failed: connection reset");
  });
});
