import { Interrupted, RunStopped } from '../../src/abort-reasons.js';
import { CallInterrupted } from '../../src/provider/provider-errors.js';
import { describe, expect, it } from 'vitest';
import { Accounting } from '../../src/engine/ceilings/accounting.js';
import { CacheWarming } from '../../src/engine/prompt-cache/cache-warming.js';
import { Journal } from '../../src/engine/replay/journal.js';
import { ModelCalls } from '../../src/engine/calls/model-calls.js';
import { Reservations } from '../../src/engine/ceilings/reservation.js';
import type { CallListeners, ModelRequest, ModelResponse } from '../../src/provider/client.js';
import { resolveLimits } from '../../src/workflow/limits.js';

const LONG = 'x'.repeat(40_000); // 10,000 tokens at 4 characters each: cacheable
const context = { type: 'text' as const, text: LONG, cache_control: { type: 'ephemeral' as const } };
const tools = [{ name: 't', input_schema: { type: 'object' as const } }];
const request = (agent: string): ModelRequest => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 100,
  system: [context, { type: 'text', text: `You are @${agent}` }],
  tools,
  messages: [{ role: 'user', content: 'go' }],
});
const answer = (id: string): ModelResponse =>
  ({
    id,
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [{ type: 'text', text: 'ok' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  }) as unknown as ModelResponse;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function calls(
  callModel: (request: ModelRequest, signal: AbortSignal, listeners: CallListeners) => Promise<ModelResponse>,
  lines: { type: string }[] = [],
  signal = new AbortController().signal,
): ModelCalls {
  const journal = new Journal({ write: (event) => lines.push(event), sync() {}, lineOf: (event) => JSON.stringify(event) });
  const limits = resolveLimits();
  return new ModelCalls({
    journal,
    accounting: new Accounting(() => limits),
    callModel,
    liveCalls: true,
    signal,
    progress() {},
    reservations: new Reservations(),
    warming: new CacheWarming('5m'),
  });
}

describe('ModelCalls and warm first', () => {
  it('a call that answered without telling when it streamed (made by a worker) still leaves its prefix written: later calls wait for nobody', async () => {
    const started = new Map<string, number>();
    const model = calls(async (req) => {
      const agent = String((req.system as { text: string }[])[1]!.text.slice(9));
      started.set(agent, Date.now());
      await sleep(agent === 'b' ? 400 : 10);
      return answer(agent); // never calls onStreaming, as a worker's call does not
    });
    await model.call('a', 1, 1, request('a'));
    const b = model.call('b', 1, 1, request('b'));
    const c = model.call('c', 1, 1, request('c'));
    await Promise.all([b, c]);
    // Written by a's answer: c goes with b, not after b's 400 ms (the bug: b elected a new writer).
    expect(started.get('c')! - started.get('b')!).toBeLessThan(200);
  });

  it('a prefix nobody wrote: the second call waits for the first, the writer', async () => {
    const started = new Map<string, number>();
    const model = calls(async (req, _signal, listeners) => {
      const agent = String((req.system as { text: string }[])[1]!.text.slice(9));
      started.set(agent, Date.now());
      await sleep(300);
      listeners.onStreaming?.();
      return answer(agent);
    });
    await Promise.all([model.call('a', 1, 1, request('a')), model.call('b', 1, 1, request('b'))]);
    expect(started.get('b')! - started.get('a')!).toBeGreaterThanOrEqual(250);
  });

  it('a call interrupted by a message is recorded as interrupted even when the run stops before it settles: the reason says what happened', async () => {
    const lines: { type: string }[] = [];
    const run = new AbortController();
    const interrupt = new AbortController();
    const model = calls(
      (_req, signal, listeners) =>
        new Promise((_resolve, reject) => {
          listeners.onSent?.();
          // Settles a moment after its signal fired, as a stream does: by then the run stopped too.
          signal.addEventListener('abort', () => setTimeout(() => reject(signal.reason), 20), { once: true });
        }),
      lines,
      run.signal,
    );
    const made = model.call('a', 1, 1, request('a'), run.signal, { interrupt: interrupt.signal });
    await sleep(20);
    interrupt.abort(new Interrupted(7));
    run.abort(new RunStopped('a limit'));
    await expect(made).rejects.toBeInstanceOf(CallInterrupted);
    const types = lines.map((event) => event.type);
    expect(types).toContain('call_interrupted');
    expect(types).not.toContain('call_abandoned');
  });

  it('a call the run stops is given up as aborted, and its prompt counted as paid', async () => {
    const lines: { type: string }[] = [];
    const run = new AbortController();
    const model = calls(
      (_req, signal, listeners) =>
        new Promise((_resolve, reject) => {
          listeners.onSent?.();
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
      lines,
      run.signal,
    );
    const made = model.call('a', 1, 1, request('a'), run.signal, { interrupt: new AbortController().signal });
    await sleep(20);
    run.abort(new RunStopped('a limit'));
    await expect(made).rejects.toBeInstanceOf(RunStopped);
    const types = lines.map((event) => event.type);
    expect(types).not.toContain('call_interrupted');
    expect(types.some((t) => t.includes('abandon'))).toBe(true);
  });
});
