import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CacheWarming, WARM_RELEASE_MS } from '../../src/engine/prompt-cache/cache-warming.js';
import type { ModelRequest } from '../../src/provider/client.js';

const LONG = 'x'.repeat(40_000); // 10,000 tokens at 4 characters each
const context = { type: 'text' as const, text: LONG, cache_control: { type: 'ephemeral' as const } };
const tools = [{ name: 't', input_schema: { type: 'object' as const } }];
const requestOf = (first = context, model = 'claude-sonnet-4-5', withTools = tools): ModelRequest => ({
  model,
  max_tokens: 100,
  system: [first, { type: 'text', text: 'You are @a' }],
  tools: withTools,
  messages: [{ role: 'user', content: 'go' }],
});

/** Whether the promise settled by now. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

let clock = 0;
beforeEach(() => {
  vi.useFakeTimers();
  clock = 1_000_000;
});
afterEach(() => vi.useRealTimers());

const signal = () => new AbortController().signal;

describe('warm first', () => {
  it('the first call goes at once; the others wait until its answer starts streaming, then go', async () => {
    const warming = new CacheWarming('5m', () => clock);
    const first = await warming.before(requestOf(), 'anthropic', signal());
    const second = warming.before(requestOf(), 'anthropic', signal());
    const third = warming.before(requestOf(), 'anthropic', signal());
    expect(await settled(second)).toBe(false);
    first.streaming();
    expect(await settled(second)).toBe(true);
    expect(await settled(third)).toBe(true);
    // Written: a later call goes at once, and is no writer others wait for.
    await warming.before(requestOf(), 'anthropic', signal());
    expect(await settled(warming.before(requestOf(), 'anthropic', signal()))).toBe(true);
  });

  it('released after WARM_RELEASE_MS whatever happens, and at once when the writer fails; the next call then writes', async () => {
    const warming = new CacheWarming('5m', () => clock);
    const first = await warming.before(requestOf(), 'anthropic', signal());
    const waiting = warming.before(requestOf(), 'anthropic', signal());
    await vi.advanceTimersByTimeAsync(WARM_RELEASE_MS - 10);
    expect(await settled(waiting)).toBe(false);
    await vi.advanceTimersByTimeAsync(10);
    expect(await settled(waiting)).toBe(true);
    const late = warming.before(requestOf(), 'anthropic', signal());
    expect(await settled(late)).toBe(false);
    first.done(); // failed before streaming
    expect(await settled(late)).toBe(true);
    // Nobody wrote it: the next call is the writer again, and one after it waits.
    const writer = await warming.before(requestOf(), 'anthropic', signal());
    expect(await settled(warming.before(requestOf(), 'anthropic', signal()))).toBe(false);
    writer.done();
  });

  it('an aborted wait ends at once; a written prefix is taken as gone near the end of its ttl (5 minutes, or an hour)', async () => {
    for (const [ttl, ms] of [
      ['5m', 5 * 60_000],
      ['1h', 60 * 60_000],
    ] as const) {
      const warming = new CacheWarming(ttl, () => clock);
      const first = await warming.before(requestOf(), 'anthropic', signal());
      const controller = new AbortController();
      const aborted = warming.before(requestOf(), 'anthropic', controller.signal);
      controller.abort();
      expect(await settled(aborted)).toBe(true);
      first.streaming();
      clock += ms - 60_000;
      expect(await settled(warming.before(requestOf(), 'anthropic', signal()))).toBe(true);
      clock += 60_000;
      const writer = await warming.before(requestOf(), 'anthropic', signal());
      expect(await settled(warming.before(requestOf(), 'anthropic', signal())), ttl).toBe(false);
      writer.done();
    }
  });

  it('prefixes differ by tools, first block, model and provider; one shorter than the model caches is never waited for', async () => {
    const warming = new CacheWarming('5m', () => clock);
    const writer = await warming.before(requestOf(), 'anthropic', signal());
    const other = { ...context };
    for (const [request, provider] of [
      [requestOf(other), 'anthropic'],
      [requestOf(context, 'claude-haiku-4-5'), 'anthropic'],
      [requestOf(context, 'claude-sonnet-4-5', [{ name: 'u', input_schema: { type: 'object' as const } }]), 'anthropic'],
      [requestOf(), 'bedrock'],
    ] as const) {
      const own = await warming.before(request, provider, signal());
      own.done();
    }
    // Claude Haiku 4.5 caches from 4,096 tokens; 2,000 are too few for it, enough for Sonnet 4.5 (1,024).
    const short = { ...context, text: 'y'.repeat(8_000) };
    const shortWriter = await warming.before(requestOf(short), 'anthropic', signal());
    expect(await settled(warming.before(requestOf(short), 'anthropic', signal()))).toBe(false);
    shortWriter.done();
    const haiku = { ...context, text: 'z'.repeat(8_000) };
    await warming.before(requestOf(haiku, 'claude-haiku-4-5'), 'anthropic', signal());
    expect(await settled(warming.before(requestOf(haiku, 'claude-haiku-4-5'), 'anthropic', signal()))).toBe(true);
    writer.done();
  });

  it('a reader that streams keeps the prefix warm; exactly at the end of its time a call writes it again', async () => {
    const warming = new CacheWarming('5m', () => clock);
    const writer = await warming.before(requestOf(), 'anthropic', signal());
    writer.streaming();
    const warmFor = 5 * 60_000 - 30_000;
    clock += warmFor - 1_000;
    const reader = await warming.before(requestOf(), 'anthropic', signal());
    reader.streaming(); // read: the API keeps it 5 minutes more
    clock += 2_000;
    expect(await settled(warming.before(requestOf(), 'anthropic', signal()))).toBe(true);
    clock += warmFor - 2_000; // exactly the reader's time since it streamed
    const again = await warming.before(requestOf(), 'anthropic', signal());
    expect(await settled(warming.before(requestOf(), 'anthropic', signal()))).toBe(false);
    again.done();
  });

  it("a late word from an earlier writer (its retry streaming again, its end) does not let go of a later writer's waiters", async () => {
    const warming = new CacheWarming('5m', () => clock);
    const first = await warming.before(requestOf(), 'anthropic', signal());
    first.streaming();
    clock += 5 * 60_000;
    const second = await warming.before(requestOf(), 'anthropic', signal());
    first.streaming();
    first.done();
    expect(await settled(warming.before(requestOf(), 'anthropic', signal()))).toBe(false);
    second.done();
  });

  it('a request without a system prompt is never held; the tools count toward the minimum; a wait leaves no listener on the signal', async () => {
    const warming = new CacheWarming('5m', () => clock);
    const bare: ModelRequest = { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] };
    await warming.before(bare, 'anthropic', signal());
    expect(await settled(warming.before(bare, 'anthropic', signal()))).toBe(true);
    // 500 tokens of text and ~2,000 of tools: past Sonnet 4.5's 1,024 only together.
    const small = { ...context, text: 'w'.repeat(2_000) };
    const manyTools = [{ name: 't', description: 'd'.repeat(8_000), input_schema: { type: 'object' as const } }];
    const writer = await warming.before(requestOf(small, 'claude-sonnet-4-5', manyTools), 'anthropic', signal());
    const waiting = signal();
    const waiter = warming.before(requestOf(small, 'claude-sonnet-4-5', manyTools), 'anthropic', waiting);
    expect(await settled(waiter)).toBe(false);
    writer.streaming();
    expect(await settled(waiter)).toBe(true);
    expect(getEventListeners(waiting, 'abort')).toHaveLength(0);
    // Exactly the minimum (1,024 tokens, no tools) is cacheable.
    const exact: ModelRequest = { ...bare, system: [{ type: 'text', text: 'v'.repeat(4_096) }] };
    const exactWriter = await warming.before(exact, 'anthropic', signal());
    expect(await settled(warming.before(exact, 'anthropic', signal()))).toBe(false);
    exactWriter.done();
  });
});
