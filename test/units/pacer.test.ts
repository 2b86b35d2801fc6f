import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { modelClass, Pacer, type Admission, type CallNeed, type WaitReason } from '../../src/provider/rates/pacer.js';
import { CallAborted } from '../../src/provider/provider-errors.js';
import { rateReadings } from '../../src/provider/rates/rate-headers.js';
import { localLimiters, type LimitSize } from '../../src/provider/rates/rate-limiters.js';
import { limitStep } from '../../src/provider/rates/limit-share.js';

const NEED: CallNeed = { requests: 1, input_tokens: 100, output_tokens: 50 };
const SONNET = 'claude-sonnet-5-5';

/** Headers as the API sends them for the requests limit; `resetInMs` from now, to the millisecond. */
function limitHeaders(limit: number, remaining: number, resetInMs: number, extra: Record<string, string> = {}): Headers {
  return new Headers({
    'anthropic-ratelimit-requests-limit': String(limit),
    'anthropic-ratelimit-requests-remaining': String(remaining),
    'anthropic-ratelimit-requests-reset': new Date(Date.now() + resetInMs).toISOString(),
    ...extra,
  });
}

/** Whether `promise` settles within `ms` of the test's clock (fake: a loaded machine cannot make a call late). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await vi.advanceTimersByTimeAsync(ms);
  return settled;
}

/** Lets `ms` of the test's clock pass. */
const pass = (ms: number) => vi.advanceTimersByTimeAsync(ms);

const never = new AbortController().signal;

describe('the pacer', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('holds a call past a limit given per minute, says why, and lets an aborted wait go', async () => {
    const pacer = new Pacer((modelClass) => (modelClass === 'sonnet' ? { requests: 2 } : {}), localLimiters);
    await pacer.admit(SONNET, NEED, never);
    await pacer.admit(SONNET, NEED, never);
    const waits: WaitReason[] = [];
    const stop = new AbortController();
    const third = pacer.admit(SONNET, NEED, stop.signal, (reason) => waits.push(reason));
    expect(await settlesWithin(third, 100)).toBe(false);
    expect(waits).toEqual(['requests']);
    stop.abort();
    await expect(third).rejects.toBeInstanceOf(CallAborted);
    // Another model class has limits of its own.
    expect(await settlesWithin(pacer.admit('claude-haiku-4-5', NEED, never), 50)).toBe(true);
  });

  it('an aborted call behind the head of the queue leaves at once, not when the head goes', async () => {
    const pacer = new Pacer(() => ({ requests: 2 }), localLimiters);
    await pacer.admit(SONNET, NEED, never);
    await pacer.admit(SONNET, NEED, never);
    const head = pacer.admit(SONNET, NEED, never);
    const stop = new AbortController();
    const behind = pacer.admit(SONNET, NEED, stop.signal);
    stop.abort();
    expect(await settlesWithin(behind, 50), 'refused at once').toBe(true);
    await expect(behind).rejects.toBeInstanceOf(CallAborted);
    expect(await settlesWithin(head, 20), 'the head still waits for its limit').toBe(false);
  });

  it('a request answered with an error (5xx as 429) gives its points back: the retry is not held for them', async () => {
    const pacer = new Pacer(() => ({ requests: 2 }), localLimiters);
    const first = await pacer.admit(SONNET, NEED, never);
    pacer.observe(first, { headers: new Headers(), status: 529 });
    await pass(20);
    expect(await settlesWithin(pacer.admit(SONNET, NEED, never), 50)).toBe(true);
    expect(await settlesWithin(pacer.admit(SONNET, NEED, never), 50), 'the refused request took nothing').toBe(true);
  });

  it("leaves no listener on a call's signal once the call is let through or refused: a signal may outlive many calls", async () => {
    const pacer = new Pacer((modelClass) => (modelClass === 'sonnet' ? { requests: 50 } : {}), localLimiters);
    const agent = new AbortController();
    for (let i = 0; i < 50; i++) await pacer.admit(SONNET, NEED, agent.signal);
    expect(getEventListeners(agent.signal, 'abort')).toHaveLength(0);
    const held = pacer.admit(SONNET, NEED, agent.signal);
    expect(await settlesWithin(held, 50)).toBe(false);
    expect(getEventListeners(agent.signal, 'abort')).toHaveLength(1);
    agent.abort();
    await expect(held).rejects.toBeInstanceOf(CallAborted);
    expect(getEventListeners(agent.signal, 'abort')).toHaveLength(0);
  });

  it("waits as long as the server's bucket, refilled since its last word, needs to hold the call", async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    const first = await pacer.admit(SONNET, NEED, never);
    // Empty, full again in 1 s: one request every 100 ms.
    pacer.observe(first, { headers: limitHeaders(10, 0, 1_000), status: 200 });
    const waiting = pacer.admit(SONNET, NEED, never);
    expect(await settlesWithin(waiting, 90)).toBe(false);
    expect(await settlesWithin(waiting, 20)).toBe(true);
    const next = await waiting;
    expect(next).toMatchObject({ reason: 'requests' });
    expect(next.waitedMs).toBeGreaterThanOrEqual(90);
  });

  it("honours a refusal's retry-after", async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    const first = await pacer.admit(SONNET, NEED, never);
    pacer.observe(first, { headers: new Headers({ 'retry-after-ms': '200' }), status: 429 });
    const waiting = pacer.admit(SONNET, NEED, never);
    expect(await settlesWithin(waiting, 190)).toBe(false);
    expect(await settlesWithin(waiting, 20)).toBe(true);
    expect((await waiting).reason).toBe('retry_after');
  });

  it('lets the first call go alone until its answer says something of the limits', async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    const first = await pacer.admit(SONNET, NEED, never);
    const second = pacer.admit(SONNET, NEED, never);
    expect(await settlesWithin(second, 100)).toBe(false);
    // An answer without rate headers (a proxy, another cloud): nothing more is held.
    pacer.observe(first, { headers: new Headers(), status: 200 });
    expect(await settlesWithin(second, 50)).toBe(true);
    expect(await settlesWithin(pacer.admit(SONNET, NEED, never), 50)).toBe(true);
  });

  it('counts the calls sent before the answer it reads that are still unanswered: the server may have taken them after', async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    const probe = await pacer.admit(SONNET, NEED, never);
    pacer.observe(probe, { headers: limitHeaders(10, 9, 6_000), status: 200 });
    const sent: Admission[] = [];
    for (let i = 0; i < 3; i++) sent.push(await pacer.admit(SONNET, NEED, never));
    // The last of the three is answered first and says 2 are left: the two before it may not be counted there.
    pacer.observe(sent[2]!, { headers: limitHeaders(10, 2, 48_000), status: 200 });
    expect(await settlesWithin(pacer.admit(SONNET, NEED, never), 100), 'two unanswered take the two left').toBe(false);
  });

  it('reads the headers of each limit, and leaves out what is missing or not a number', () => {
    const now = Date.parse('2026-11-23T12:00:00Z');
    const readings = rateReadings(
      new Headers({
        'anthropic-ratelimit-input-tokens-limit': '30000',
        'anthropic-ratelimit-input-tokens-remaining': '29000',
        'anthropic-ratelimit-input-tokens-reset': '2026-11-23T12:00:02Z',
        'anthropic-ratelimit-output-tokens-limit': 'lots',
        'anthropic-ratelimit-output-tokens-remaining': '5',
      }),
      now,
    );
    expect(readings).toEqual({ input_tokens: { limit: 30000, remaining: 29000, resetAt: now + 2000 } });
    expect(modelClass('claude-opus-4-7')).toBe('opus');
    expect(modelClass('my-proxy-model')).toBe('my-proxy-model');
  });

  it("counts its own calls since the server's last word", async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    const probe = await pacer.admit(SONNET, NEED, never);
    // 3 left, refilling one a minute: three calls go, the fourth waits.
    pacer.observe(probe, { headers: limitHeaders(10, 3, 420_000), status: 200 });
    for (let i = 0; i < 3; i++) expect(await settlesWithin(pacer.admit(SONNET, NEED, never), 20), `call ${i + 1}`).toBe(true);
    const waits: WaitReason[] = [];
    expect(
      await settlesWithin(
        pacer.admit(SONNET, NEED, never, (r) => waits.push(r)),
        100,
      ),
    ).toBe(false);
    expect(waits).toEqual(['requests']);
  });

  it('learns the refill rate from a reset given to the millisecond, and takes a minute from one given to the second', async () => {
    const precise = new Pacer(() => ({}), localLimiters);
    const first = await precise.admit(SONNET, NEED, never);
    // Empty, and full again in 2 s: a request every 200 ms.
    precise.observe(first, { headers: limitHeaders(10, 0, 2_000), status: 200 });
    const second = precise.admit(SONNET, NEED, never);
    expect(await settlesWithin(second, 190)).toBe(false);
    expect(await settlesWithin(second, 20)).toBe(true);

    const coarse = new Pacer(() => ({}), localLimiters);
    const other = await coarse.admit(SONNET, NEED, never);
    const reset = new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    coarse.observe(other, {
      headers: new Headers({
        'anthropic-ratelimit-requests-limit': '10',
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': reset,
      }),
      status: 200,
    });
    // A minute's window: one request every 6 s.
    expect(await settlesWithin(coarse.admit(SONNET, NEED, never), 700)).toBe(false);
  });

  it('waits for a word seen late as its own reset says, not as fast as a window learned from an earlier late word', async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    const first = await pacer.admit(SONNET, NEED, never);
    // The server's bucket refills in 1.5 s; its words come 100 ms after they were written, so the
    // first one (2 of 3 left, full 500 ms after it was written) reads as a 1.2 s window.
    pacer.observe(first, { headers: limitHeaders(3, 2, 400), status: 200 });
    const second = await pacer.admit(SONNET, NEED, never);
    const third = await pacer.admit(SONNET, NEED, never);
    pacer.observe(second, { headers: limitHeaders(3, 1, 900), status: 200 });
    // Empty, full 1.5 s after it was written: a request's worth is there 500 ms after that, 400 ms
    // after it was seen. The word's own line says 1.4 s / 3 = 467 ms; the 1.2 s window, 400 ms.
    pacer.observe(third, { headers: limitHeaders(3, 0, 1_400), status: 200 });
    const next = pacer.admit(SONNET, NEED, never);
    expect(await settlesWithin(next, 440), 'the learned window alone would let it go at 400 ms').toBe(false);
    expect(await settlesWithin(next, 400)).toBe(true);
  });

  it('a bucket whose words come after their resets stays a bucket: a reset already past is kept as it was, not taken as now', async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    // 12 per 5 s: a point comes back every 417 ms. Every answer is seen a second after its request went.
    const first = await pacer.admit(SONNET, NEED, never);
    await pass(1_000);
    pacer.observe(first, { headers: limitHeaders(12, 11, 417 - 1_000), status: 200 });
    const burst = [];
    for (let i = 0; i < 12; i++) burst.push(await pacer.admit(SONNET, NEED, never));
    await pass(1_000);
    // Two past resets, 417 ms apart: taken as now, they looked like one window's, and a window of a second let all through.
    for (const [k, call] of burst.entries()) pacer.observe(call, { headers: limitHeaders(12, 11 - k, (k + 1) * 417 - 1_000), status: 200 });
    const next = Array.from({ length: 6 }, () => pacer.admit(SONNET, NEED, never));
    expect(await settlesWithin(next[1]!, 5), 'what refilled since the burst went: two').toBe(true);
    expect(await settlesWithin(next[5]!, 1_300), 'the sixth waits for the bucket').toBe(false);
    expect(await settlesWithin(next[5]!, 400)).toBe(true);
  });

  it('learns a window from when its request left, not when the answer was seen: a word a second late reads no shorter', async () => {
    const made: string[] = [];
    const store = async () => ({
      shared: true,
      early: async () => {},
      limiter: (key: string, size: LimitSize) => {
        made.push(`${key} ${size.points} per ${size.ms} ms, ${size.window ? 'a window' : 'a bucket'}`);
        return { take: async () => 0, giveBack: async () => {} };
      },
    });
    const pacer = new Pacer(() => ({}), store);
    // 10 per 5 s. The server writes its word when the request arrives, and it is seen a second later.
    const first = await pacer.admit(SONNET, NEED, never);
    const written = Date.now();
    await pass(1_000);
    /** What the server wrote at `at`, with `remaining` left: full again 500 ms a request later. */
    const word = (at: number, remaining: number) => limitHeaders(10, remaining, at + (10 - remaining) * 500 - Date.now());
    pacer.observe(first, { headers: word(written, 9), status: 200 });
    // Shared, one call goes alone until a second reading tells a bucket (its reset moves) from a window.
    const second = await pacer.admit(SONNET, NEED, never);
    const secondSent = Date.now();
    await pass(1_000);
    pacer.observe(second, { headers: word(secondSent, 8), status: 200 });
    const calls = [];
    for (let i = 0; i < 4; i++) calls.push(await pacer.admit(SONNET, NEED, never));
    const sent = Date.now();
    await pass(1_000);
    // The last of them is the fifth in the server's bucket: the reading that says most (5 used) is the nearest.
    pacer.observe(calls[3]!, { headers: word(sent, 5), status: 200 });
    await pacer.admit(SONNET, NEED, never);
    // Shared, the store hands out 10 per 5 s as a bucket (learned from the word seen late: 3 per 1 s).
    const [, points, ms, shape] = /^sonnet:requests (\d+) per (\d+) ms, (.*)$/.exec(made.at(-1)!)!;
    expect([points, shape]).toEqual(['10', 'a bucket']);
    expect(Number(ms)).toBeGreaterThanOrEqual(5_000);
    expect(Number(ms)).toBeLessThan(5_200);
  });

  it('keeps given limits in the limiters, and, shared, every limit at its size and shape; what went before a limit was known is noted at once', async () => {
    const made: string[] = [];
    const store = (shared: boolean) => async () => ({
      shared,
      early: async (key: string, n: number) => void made.push(`early ${key} ${n}`),
      limiter: (key: string, size: LimitSize) => {
        made.push(`${key} ${size.points} per ${size.ms} ms, ${size.window ? 'a window' : 'a bucket'}`);
        return { take: async () => 0, giveBack: async () => {} };
      },
    });
    const local = new Pacer(() => ({ requests: 50 }), store(false));
    await local.admit(SONNET, NEED, never);
    expect([...new Set(made)]).toEqual(['sonnet:requests 50 per 60000 ms, a bucket']);
    made.length = 0;
    const shared = new Pacer(() => ({}), store(true));
    const probe = await shared.admit(SONNET, NEED, never);
    await pass(10);
    expect(made, 'the first call, before anything is known, is noted for whoever learns the limit').toContain('early sonnet:requests 1');
    made.length = 0;
    // Learned: 10 per 5 s (a request refills in 500 ms).
    shared.observe(probe, { headers: limitHeaders(10, 9, 500), status: 200 });
    // One reading cannot tell a bucket from a window: the next call goes alone, the store not yet given a window.
    const shape = await shared.admit(SONNET, NEED, never);
    await pass(10);
    expect(
      made.filter((m) => !m.startsWith('early')),
      'no limiter sized yet',
    ).toEqual([]);
    shared.observe(shape, { headers: limitHeaders(10, 8, 1_000), status: 200 });
    await shared.admit(SONNET, NEED, never);
    expect(
      made.some((m) => /^sonnet:requests 10 per 50\d\d ms, a bucket$/.test(m)),
      made.join('; '),
    ).toBe(true);
  });

  it('holds for a second after a refusal that says not how long; a call whose signal is aborted is refused at once', async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    const first = await pacer.admit(SONNET, NEED, never);
    pacer.observe(first, { headers: new Headers(), status: 429 });
    expect(await settlesWithin(pacer.admit(SONNET, NEED, never), 500)).toBe(false);
    const stopped = new AbortController();
    stopped.abort();
    await expect(pacer.admit(SONNET, NEED, stopped.signal)).rejects.toBeInstanceOf(CallAborted);
  });

  it('waits a second at most for the first call to be answered', async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    await pacer.admit(SONNET, NEED, never);
    const second = pacer.admit(SONNET, NEED, never);
    expect(await settlesWithin(second, 990)).toBe(false);
    expect(await settlesWithin(second, 20)).toBe(true);
  });

  it('an older word that arrives last still counts every call let through after its request (issue 66: a sliding window refused twice)', async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    const resetAt = Date.now() + 5_000;
    const word = (remaining: number) => ({ headers: limitHeaders(10, remaining, resetAt - Date.now()), status: 200 });
    const first = await pacer.admit(SONNET, NEED, never);
    pacer.observe(first, word(9));
    // Nine calls go on the word's 9 left; their answers come back out of order: the last first, the first last.
    const calls: Admission[] = [];
    for (let i = 0; i < 9; i++) calls.push(await pacer.admit(SONNET, NEED, never));
    pacer.observe(calls[8]!, word(0));
    for (let i = 7; i >= 2; i--) pacer.observe(calls[i]!, word(8 - i));
    // The first's word was written when the server had taken two: it is older than the calls after it, which it must count.
    pacer.observe(calls[0]!, word(8));
    expect(await settlesWithin(pacer.admit(SONNET, NEED, never), 1_000), 'nothing is left until the window resets').toBe(false);
  });

  it('gives the limiters back what a call took beyond what it used, and all of it when the call was refused', async () => {
    const given: string[] = [];
    const store = async () => ({
      shared: false,
      early: async () => {},
      limiter: (key: string) => ({ take: async () => 0, giveBack: async (n: number) => void given.push(`${key} ${n}`) }),
    });
    const pacer = new Pacer(() => ({ requests: 100, input_tokens: 100_000, output_tokens: 100_000 }), store);
    const answered = await pacer.admit(SONNET, { requests: 1, input_tokens: 500, output_tokens: 4096 }, never);
    pacer.settle(answered, { input_tokens: 120, cache_creation_input_tokens: 30, output_tokens: 96 });
    await pass(10);
    expect(given.sort()).toEqual(['sonnet:input_tokens 350', 'sonnet:output_tokens 4000']);
    given.length = 0;
    const refused = await pacer.admit(SONNET, { requests: 1, input_tokens: 500, output_tokens: 4096 }, never);
    pacer.observe(refused, { headers: new Headers({ 'retry-after-ms': '1' }), status: 429 });
    await pass(10);
    expect(given.sort()).toEqual(['sonnet:input_tokens 500', 'sonnet:output_tokens 4096', 'sonnet:requests 1']);
  });

  it("takes a hostile answer for what it can be: a retry-after of a day holds a minute, a reset in the year 3000 a minute's rate", async () => {
    const pacer = new Pacer(() => ({}), localLimiters);
    const first = await pacer.admit(SONNET, NEED, never);
    pacer.observe(first, { headers: new Headers({ 'retry-after': '86400' }), status: 429 });
    const second = pacer.admit(SONNET, NEED, never);
    await vi.advanceTimersByTimeAsync(59_000);
    expect(await Promise.race([second.then(() => 'admitted'), Promise.resolve('waiting')])).toBe('waiting');
    await vi.advanceTimersByTimeAsync(2_000);
    const admitted = await second;
    expect(admitted.reason).toBe('retry_after');
    pacer.observe(admitted, {
      headers: new Headers({
        'anthropic-ratelimit-requests-limit': '60',
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': '3000-01-01T00:00:00.000Z',
      }),
      status: 200,
    });
    // Learned as a minute's window (the longest there is): one request a second. The word's request left a second
    // ago, and the server took it (and wrote its word) then: one has come back since.
    const third = await pacer.admit(SONNET, NEED, never);
    expect(third.reason).toBeUndefined();
    const fourth = pacer.admit(SONNET, NEED, never);
    await vi.advanceTimersByTimeAsync(900);
    expect(await Promise.race([fourth.then(() => 'admitted'), Promise.resolve('waiting')])).toBe('waiting');
    await vi.advanceTimersByTimeAsync(200);
    expect((await fourth).reason).toBe('requests');
  });

  it('hands out a limit as the server keeps it: no stretch of time gets more than a bucket or a window lets through, and nothing that fits waits', () => {
    let seed = 56;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (const window of [false, true]) {
      for (const [points, ms] of [
        [12, 5_000],
        [3, 1_500],
        [50, 60_000],
      ] as const) {
        let state: unknown;
        let now = 0;
        const went: [number, number][] = [];
        for (let i = 0; i < 400; i++) {
          now += Math.floor(random() * (ms / points) * 2);
          const wanted = 1 + Math.floor(random() * 2);
          const step = limitStep(state, { points, ms, window }, 'take', wanted, now);
          state = step.state;
          if (step.waitMs === 0) went.push([now, wanted]);
          else expect(limitStep(state, { points, ms, window }, 'take', wanted, now + step.waitMs).waitMs, 'it fits when told').toBe(0);
        }
        // Any stretch from one take to a later one: a window's `ms` holds `points`; a bucket's holds `points` and what refills.
        for (let i = 0; i < went.length; i++) {
          let sum = 0;
          for (let j = i; j < went.length && (window ? went[j]![0] - went[i]![0] < ms : true); j++) {
            sum += went[j]![1];
            const allowed = window ? points : points + ((went[j]![0] - went[i]![0]) * points) / ms;
            expect(sum, `${points} per ${ms} ms ${window ? 'window' : 'bucket'}`).toBeLessThanOrEqual(allowed + 1e-9);
          }
        }
        expect(went.length, 'and the limit is used').toBeGreaterThan(100);
      }
    }
  });
});
