import { type AbortReason, Cancelled, Parked, RunStopped } from '../../src/abort-reasons.js';
import { describe, expect, it } from 'vitest';
import { BatchCalls } from '../../src/engine/batches/batch-calls.js';
import { formatDuration, parts } from '../../src/engine/batches/batch-limits.js';
import { batchesOf } from '../../src/engine/batches/batch-setup.js';
import { Journal } from '../../src/engine/replay/journal.js';
import type { RunOptions } from '../../src/engine/run-options.js';
import { LimitReached } from '../../src/engine/ending.js';
import type { BatchApi, BatchResult } from '../../src/provider/batch-api.js';
import type { ModelRequest, ModelResponse } from '../../src/provider/client.js';
import { CallAborted, ProviderError } from '../../src/provider/provider-errors.js';

const request = (n: number): ModelRequest => ({ model: 'claude-sonnet-5-5', max_tokens: 10, messages: [{ role: 'user', content: `call ${n}` }] });
const message = (text: string) => ({ type: 'message', content: [{ type: 'text', text }], stop_reason: 'end_turn' }) as unknown as ModelResponse;

/** An in-memory Message Batches API: each batch ends after `polls` retrievals; `results` decides each answer. */
function fakeApi(options: { polls?: number; result?: (customId: string, attempt: number) => BatchResult; createdAt?: string } = {}) {
  const log: string[] = [];
  const batches = new Map<string, { ids: string[]; polls: number }>();
  const attempts = new Map<string, number>();
  const api: BatchApi = {
    create: async ({ requests }) => {
      const id = `b${batches.size + 1}`;
      batches.set(id, { ids: requests.map((r) => r.custom_id), polls: 0 });
      for (const r of requests) attempts.set(r.custom_id, (attempts.get(r.custom_id) ?? 0) + 1);
      log.push(`create ${id} ${requests.map((r) => r.custom_id).join(',')}`);
      return { id };
    },
    retrieve: async (id) => {
      const batch = batches.get(id)!;
      batch.polls++;
      log.push(`retrieve ${id}`);
      return { id, processing_status: batch.polls > (options.polls ?? 1) ? 'ended' : 'in_progress', created_at: options.createdAt ?? new Date().toISOString() };
    },
    results: async (id) =>
      (async function* () {
        for (const customId of batches.get(id)!.ids) {
          yield {
            custom_id: customId,
            result: options.result?.(customId, attempts.get(customId)!) ?? { type: 'succeeded', message: message(`answer ${customId}`) },
          };
        }
      })(),
    cancel: async (id) => (log.push(`cancel ${id}`), {}),
  };
  return { api, log, batches };
}

const fast = { gatherMs: 5, pollMs: 5, pollMaxMs: 20 };
const signal = () => new AbortController().signal;

describe('batched calls', () => {
  it('calls ready together go in one batch, noted before anything waits for it; each gets its own answer', async () => {
    const { api, log } = fakeApi();
    const notes: unknown[] = [];
    const calls = new BatchCalls({ api, note: (e) => (notes.push(e), log.push('note')), submitted: () => undefined, ...fast });
    const answers = await Promise.all([1, 2, 3].map((n) => calls.call(`id${n}`, request(n), signal())));
    expect(answers.map((a) => [(a.response.content[0] as { text: string }).text, a.batch])).toEqual([
      ['answer id1', 'b1'],
      ['answer id2', 'b1'],
      ['answer id3', 'b1'],
    ]);
    // The intent first, then the batch, noted before anything waits for it.
    expect(log.slice(0, 4)).toEqual(['note', 'create b1 id1,id2,id3', 'note', 'retrieve b1']);
    expect(notes).toEqual([
      { type: 'batch_creating', custom_ids: ['id1', 'id2', 'id3'] },
      { type: 'batch_submitted', batch_id: 'b1', custom_ids: ['id1', 'id2', 'id3'] },
    ]);
  });

  it('a call a recorded run already submitted polls that batch, submitting nothing', async () => {
    const { api, log, batches } = fakeApi();
    batches.set('old', { ids: ['id1'], polls: 0 });
    const calls = new BatchCalls({ api, note: () => {}, submitted: (id) => (id === 'id1' ? 'old' : undefined), ...fast });
    const answer = await calls.call('id1', request(1), signal());
    expect(answer.batch).toBe('old');
    expect(log.filter((l) => l.startsWith('create'))).toEqual([]);
  });

  it('an errored or expired request is sent again once, in a batch of its own; twice, it fails with its kind', async () => {
    const { api, log } = fakeApi({
      result: (id, attempt) =>
        id === 'bad'
          ? { type: 'errored', error: { type: 'error', error: { type: 'invalid_request_error', message: `no ${attempt}` } } }
          : id === 'late' && attempt === 1
            ? { type: 'expired' }
            : { type: 'succeeded', message: message(`answer ${id}`) },
    });
    const calls = new BatchCalls({ api, note: () => {}, submitted: () => undefined, ...fast });
    const [late, bad] = await Promise.allSettled([calls.call('late', request(1), signal()), calls.call('bad', request(2), signal())]);
    expect(late).toMatchObject({ status: 'fulfilled', value: { batch: 'b2' } });
    expect(bad.status).toBe('rejected');
    const error = (bad as PromiseRejectedResult).reason as ProviderError;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.kind).toBe('request');
    expect(error.message).toBe('a batched call failed twice: invalid_request_error: no 2');
    expect(log.filter((l) => l.startsWith('create'))).toEqual(['create b1 late,bad', 'create b2 late,bad']);
  });

  it('polls while it is processing, telling the run each time; a call given up leaves; the last one gone cancels the batch, unless the run parks', async () => {
    // What becomes of the batch is read from why the calls were given up (src/abort-reasons.ts).
    const stops: [string, () => AbortReason, boolean][] = [
      ['the run stopped', () => new RunStopped('a limit'), false],
      ['an agent cancelled', () => new Cancelled('@lead'), false],
      ['the run parked', () => new Parked('parked'), true],
      ['Ctrl-C', () => new RunStopped('interrupted', true), true],
    ];
    for (const [what, why, kept] of stops) {
      const { api, log } = fakeApi({ polls: 1_000 });
      let told = 0;
      const calls = new BatchCalls({ api, note: () => {}, submitted: () => undefined, ...fast, onChange: () => told++ });
      const first = new AbortController();
      const second = new AbortController();
      const made = [calls.call('a', request(1), first.signal), calls.call('b', request(2), second.signal)];
      while (told < 2) await new Promise((r) => setTimeout(r, 5));
      expect(calls.waitingCalls).toBe(2);
      expect(calls.waitedFor).toEqual(['b1']);
      first.abort(why());
      await expect(made[0]).rejects.toBeInstanceOf(CallAborted);
      expect(calls.waitingCalls).toBe(1);
      expect(log).not.toContain('cancel b1');
      second.abort(why());
      await expect(made[1]).rejects.toBeInstanceOf(CallAborted);
      expect(log.includes('cancel b1'), what).toBe(!kept);
      expect(calls.waitingCalls).toBe(0);
    }
  });

  it('a batch not ended within the wait timeout stops the calls at that limit; a create that fails fails its calls', async () => {
    const { api } = fakeApi({ polls: 1_000, createdAt: new Date(Date.now() - 3_600_000).toISOString() });
    const calls = new BatchCalls({ api, note: () => {}, submitted: () => undefined, ...fast, waitTimeoutMs: 60_000 });
    const limited = await calls.call('a', request(1), signal()).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(LimitReached);
    expect((limited as LimitReached).message).toBe('limit reached: wait_timeout (message batch b1 has not ended 1 min after it was submitted)');
    const broken = new BatchCalls({
      api: { ...api, create: () => Promise.reject(new ProviderError('overloaded', 'outage', 529)) },
      note: () => {},
      submitted: () => undefined,
      ...fast,
    });
    await expect(broken.call('a', request(1), signal())).rejects.toThrow('overloaded');
    const aborted = new AbortController();
    aborted.abort();
    await expect(broken.call('a', request(1), aborted.signal)).rejects.toBeInstanceOf(CallAborted);
  });

  it('tells the run each step of a batch: submitted, still processing, answered, with how many calls', async () => {
    const { api } = fakeApi({ polls: 2 });
    const events: unknown[] = [];
    const calls = new BatchCalls({ api, note: () => {}, submitted: () => undefined, ...fast, progress: (e) => events.push(e) });
    await Promise.all([calls.call('a', request(1), signal()), calls.call('b', request(2), signal())]);
    expect(events).toEqual([
      { type: 'batch', batch: 'b1', requests: 2, state: 'submitted' },
      { type: 'batch', batch: 'b1', requests: 2, state: 'waiting' },
      { type: 'batch', batch: 'b1', requests: 2, state: 'waiting' },
      { type: 'batch', batch: 'b1', requests: 2, state: 'ended' },
    ]);
  });

  it('says why a request failed twice: no result, an error without words, expired, cancelled; an outage unless the API refused the request', async () => {
    const cases: [BatchResult | undefined, string][] = [
      [undefined, 'message batch b2 has no result for the request'],
      [{ type: 'errored', error: { type: 'error' } }, 'error: the request failed in message batch'],
      [{ type: 'expired' }, 'the request expired in message batch b2'],
      [{ type: 'canceled' }, 'the request was cancelled in message batch b2'],
    ];
    for (const [result, why] of cases) {
      const { api } = fakeApi({ result: () => result as BatchResult });
      const calls = new BatchCalls({
        api: { ...api, results: result ? api.results : async () => (async function* () {})() },
        note: () => {},
        submitted: () => undefined,
        ...fast,
      });
      const error = (await calls.call('x', request(1), signal()).catch((e: unknown) => e)) as ProviderError;
      expect(error.message).toBe(`a batched call failed twice: ${why}`);
      expect(error.kind).toBe('outage');
    }
  });

  it('calls a recorded run put in one batch wait on one poll of it', async () => {
    const { api, log, batches } = fakeApi();
    batches.set('old', { ids: ['a', 'b'], polls: 0 });
    const calls = new BatchCalls({ api, note: () => {}, submitted: () => 'old', ...fast });
    const answers = await Promise.all([calls.call('a', request(1), signal()), calls.call('b', request(2), signal())]);
    expect(answers.map((a) => a.batch)).toEqual(['old', 'old']);
    expect(log.filter((l) => l === 'retrieve old')).toHaveLength(2); // one poll loop: in progress, then ended
  });

  it('splits a batch at the API limits: so many requests, so many bytes', () => {
    const many = Array.from({ length: 5 }, (_, i) => ({ request: request(i) }));
    expect(parts(many, 2).map((p) => p.length)).toEqual([2, 2, 1]);
    const size = Buffer.byteLength(JSON.stringify(request(1))) + 100;
    expect(parts(many, 100, size * 2).map((p) => p.length)).toEqual([2, 2, 1]);
    expect(parts(many, 100, size * 2 - 1).map((p) => p.length)).toEqual([1, 1, 1, 1, 1]);
    expect(parts([], 2)).toEqual([]);
    // At the API's own limit: three requests of 90 MB each are 270 MB, over 256 MB: two batches.
    const big = (i: number) => ({ request: { ...request(i), system: 'x'.repeat(90 * 1024 * 1024) } });
    expect(parts([big(1), big(2), big(3)]).map((p) => p.length)).toEqual([2, 1]);
    expect(formatDuration(7_200_000)).toBe('2 h');
    expect(formatDuration(120_000)).toBe('2 min');
    expect(formatDuration(1_500)).toBe('1.5 s');
  });

  it("the run's batches: none without the API; the recorded submissions and the workflow's wait_timeout with it", async () => {
    const journal = new Journal({ write: () => {}, sync: () => {}, lineOf: (e) => JSON.stringify(e) }, [
      { seq: 1, type: 'batch_submitted', batch_id: 'old', custom_ids: ['a'] },
    ] as never);
    const options = (api?: BatchApi) =>
      ({
        answers: { batches: api },
        recording: { journal },
        progress: () => {},
        workflow: { spec: { limits: { wait_timeout: '2m' } } },
      }) as unknown as RunOptions;
    expect(batchesOf(options(), () => {})).toEqual({});
    const { api, log, batches: known } = fakeApi({ polls: 1_000, createdAt: new Date(Date.now() - 180_000).toISOString() });
    known.set('old', { ids: ['a'], polls: 0 });
    const { batches } = batchesOf(options(api), () => {});
    const error = await batches!.call('a', request(1), signal()).catch((e: unknown) => e);
    expect((error as Error).message).toBe('limit reached: wait_timeout (message batch old has not ended 2 min after it was submitted)');
    expect(log).toEqual(['retrieve old']);
  });

  it('a batch the API no longer knows (404) is submitted again once; a second 404 fails the call as an outage', async () => {
    const { api, log } = fakeApi();
    const gone = {
      ...api,
      retrieve: async (id: string) => (id === 'old' ? Promise.reject(new ProviderError('404 not_found_error', 'request', 404)) : api.retrieve(id)),
    };
    const calls = new BatchCalls({ api: gone, note: () => {}, submitted: () => 'old', ...fast });
    const answer = await calls.call('id1', request(1), signal());
    expect(answer.batch).toBe('b1');
    expect(log.filter((l) => l.startsWith('create'))).toEqual(['create b1 id1']);
    const never = new BatchCalls({
      api: { ...api, retrieve: async () => Promise.reject(new ProviderError('404', 'request', 404)) },
      note: () => {},
      submitted: () => 'old',
      ...fast,
    });
    const error = (await never.call('id2', request(2), signal()).catch((e: unknown) => e)) as ProviderError;
    expect(error.message).toMatch(/^a batched call failed twice: message batch b\d is gone \(the API answered 404 for it\)$/);
    expect(error.kind).toBe('outage');
  });

  it('results of any shape: read with care, sent again once, never handed on as an answer', async () => {
    for (const result of [
      0,
      'hello',
      { type: 'succeeded', message: null },
      { type: 'succeeded', message: { content: 'hi' } },
      { type: 'errored' },
      { type: 'what' },
    ]) {
      const { api } = fakeApi({ result: (_id, attempt) => (attempt === 1 ? (result as BatchResult) : { type: 'succeeded', message: message('fine') }) });
      const calls = new BatchCalls({ api, note: () => {}, submitted: () => undefined, ...fast });
      const answer = await calls.call('id1', request(1), signal());
      expect((answer.response.content[0] as { text: string }).text, JSON.stringify(result)).toBe('fine');
    }
    // Lines that are no result line at all are skipped: the request has no result, and is sent again.
    const { api } = fakeApi();
    const odd = {
      ...api,
      results: async (id: string) =>
        (async function* () {
          yield null;
          yield 'x';
          yield* await api.results(id);
        })(),
    };
    const answer = await new BatchCalls({ api: odd, note: () => {}, submitted: () => undefined, ...fast }).call('id1', request(1), signal());
    expect((answer.response.content[0] as { text: string }).text).toBe('answer id1');
  });

  it('a run stopped while its batch is created: settled() waits for the creation, which is noted and cancelled; a run that parks keeps it', async () => {
    for (const parks of [false, true]) {
      const { api, log } = fakeApi();
      let finish!: () => void;
      const slow = { ...api, create: async (body: Parameters<BatchApi['create']>[0]) => (await new Promise<void>((r) => (finish = r)), api.create(body)) };
      const notes: { type: string }[] = [];
      const calls = new BatchCalls({ api: slow, note: (e) => notes.push(e), submitted: () => undefined, ...fast });
      const controller = new AbortController();
      const call = calls.call('id1', request(1), controller.signal).catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 20));
      expect(notes.map((n) => n.type)).toEqual(['batch_creating']);
      controller.abort(parks ? new Parked('parked') : new RunStopped('a limit'));
      expect(await call).toBeInstanceOf(CallAborted);
      const settled = calls.settled(5_000);
      finish();
      await settled;
      expect(notes.map((n) => n.type)).toEqual(['batch_creating', 'batch_submitted']);
      expect(log).toEqual(parks ? ['create b1 id1'] : ['create b1 id1', 'cancel b1']);
    }
  });
});
