import { afterEach, describe, expect, it } from 'vitest';
import { startSharedBatches, type SharedBatches } from '../../src/cli/test/shared-batches.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';

/**
 * The repeats' one batch (src/cli/test/shared-batches.ts) from source, against the fake API: runs that
 * ask together share one batch upstream, each sees its own batch id and only its own results
 * under its own ids, a cancel reaches the batch only when every run has cancelled, and any
 * other request passes through.
 */
let upstream: FakeAnthropic | undefined;
let shared: SharedBatches | undefined;
afterEach(async () => {
  await shared?.close();
  await upstream?.close();
  shared = upstream = undefined;
});

const headers = { 'x-api-key': 'sk-ant-test-0123456789abcdef', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
const params = (agent: string) => ({
  model: 'claude-sonnet-5-5',
  max_tokens: 64,
  system: `You are @${agent}, a tester.`,
  messages: [{ role: 'user', content: 'go' }],
});
const create = (url: string, ids: string[], agent: string) =>
  fetch(`${url}/v1/messages/batches`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ requests: ids.map((custom_id) => ({ custom_id, params: params(agent) })) }),
  });
const json = async (r: Response) => (await r.json()) as Record<string, unknown>;

describe('one batch for the repeats of a case', () => {
  it('gathers the runs that ask together into one batch, and gives each its own id and only its own results', async () => {
    upstream = await startFakeAnthropic({ a: () => ({ text: 'from a' }), b: () => ({ text: 'from b' }) }, { batches: { endsAfterMs: 50 } });
    shared = await startSharedBatches(upstream.url, 2, 10_000);
    const [one, two] = await Promise.all([create(shared.url, ['same', 'only-a'], 'a'), create(shared.url, ['same'], 'b')]);
    const [first, second] = [await json(one), await json(two)];
    expect(upstream.batches).toHaveLength(1);
    expect(upstream.batches[0]!.requests.map((r) => r.custom_id)).toEqual(['r0m0i0', 'r0m0i1', 'r0m1i0']);
    expect(shared.made).toEqual([{ id: upstream.batches[0]!.id, members: 2, requests: 3 }]);
    expect(first.id).toBe(`${upstream.batches[0]!.id}_m0`);
    expect(second.id).toBe(`${upstream.batches[0]!.id}_m1`);
    await new Promise((r) => setTimeout(r, 100));
    const status = await json(await fetch(`${shared.url}/v1/messages/batches/${String(second.id)}`, { headers }));
    expect(status).toMatchObject({ id: second.id, processing_status: 'ended', results_url: `${shared.url}/v1/messages/batches/${String(second.id)}/results` });
    const lines = (await (await fetch(String(status.results_url), { headers })).text()).trim().split('\n');
    expect(lines.map((l) => JSON.parse(l) as { custom_id: string; result: { message: { content: { text: string }[] } } })).toEqual([
      {
        custom_id: 'same',
        result: expect.objectContaining({ type: 'succeeded', message: expect.objectContaining({ content: [expect.objectContaining({ text: 'from b' })] }) }),
      },
    ]);
    const mine = (await (await fetch(`${shared.url}/v1/messages/batches/${String(first.id)}/results`, { headers })).text()).trim().split('\n');
    expect(mine.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id)).toEqual(['same', 'only-a']);
  });

  it('kept members: a server started later answers a run under the id it recorded, with only its own results; kept entries that are not members are dropped', async () => {
    upstream = await startFakeAnthropic({ a: () => ({ text: 'from a' }), b: () => ({ text: 'from b' }) }, { batches: { endsAfterMs: 50 } });
    let kept: unknown = [];
    const store = { load: () => kept, save: (members: readonly unknown[]) => (kept = JSON.parse(JSON.stringify(members))) };
    shared = await startSharedBatches(upstream.url, 2, 10_000, store);
    const [, two] = (await Promise.all([create(shared.url, ['x'], 'a'), create(shared.url, ['x'], 'b')]).then((rs) => Promise.all(rs.map(json)))) as {
      id: string;
    }[];
    await shared.close();
    expect(kept).toEqual([
      { virtual: `${upstream.batches[0]!.id}_m0`, real: upstream.batches[0]!.id, ids: [['r0m0i0', 'x']], cancelled: false },
      { virtual: `${upstream.batches[0]!.id}_m1`, real: upstream.batches[0]!.id, ids: [['r0m1i0', 'x']], cancelled: false },
    ]);
    kept = [...(kept as unknown[]), { virtual: 'forged', real: 'msgbatch_other', ids: [['a', 1]], cancelled: false }, 'not one', null];
    await new Promise((r) => setTimeout(r, 100));
    shared = await startSharedBatches(upstream.url, 2, 10_000, store);
    const lines = (await (await fetch(`${shared.url}/v1/messages/batches/${two!.id}/results`, { headers })).text()).trim().split('\n');
    expect(lines.map((l) => JSON.parse(l) as { custom_id: string; result: { message: { content: { text: string }[] } } })).toEqual([
      { custom_id: 'x', result: expect.objectContaining({ message: expect.objectContaining({ content: [expect.objectContaining({ text: 'from b' })] }) }) },
    ]);
    // The forged entry was not taken: its id is no member, and the request goes upstream as it came (the API knows no such batch).
    const forged = await fetch(`${shared.url}/v1/messages/batches/forged/results`, { headers });
    expect(forged.status).not.toBe(200);
  });

  it('a run alone is not held: its batch goes once the gathering time has passed', async () => {
    upstream = await startFakeAnthropic({ a: () => ({ text: 'x' }) }, { batches: { endsAfterMs: 50 } });
    shared = await startSharedBatches(upstream.url, 3, 50);
    const made = await json(await create(shared.url, ['one'], 'a'));
    expect(made.id).toBe(`${upstream.batches[0]!.id}_m0`);
    expect(upstream.batches[0]!.requests).toHaveLength(1);
  });

  it("cancels the batch upstream only when every run that shares it has cancelled; says the API's refusal to every run", async () => {
    upstream = await startFakeAnthropic({ a: () => ({ text: 'x' }) }, { batches: { endsAfterMs: 60_000 } });
    shared = await startSharedBatches(upstream.url, 2, 10_000);
    const [one, two] = (await Promise.all([create(shared.url, ['1'], 'a'), create(shared.url, ['2'], 'a')]).then((rs) => Promise.all(rs.map(json)))) as {
      id: string;
    }[];
    const cancel = (id: string) => fetch(`${shared!.url}/v1/messages/batches/${id}/cancel`, { method: 'POST', headers }).then(json);
    expect(await cancel(one!.id)).toMatchObject({ id: one!.id, processing_status: 'canceling' });
    expect(upstream.batches[0]!.canceledAt).toBeUndefined();
    await cancel(two!.id);
    expect(upstream.batches[0]!.canceledAt).toBeDefined();

    await upstream.close();
    upstream = await startFakeAnthropic({}, { batches: { failWith: { status: 400, type: 'invalid_request_error' } } });
    await shared.close();
    shared = await startSharedBatches(upstream.url, 2, 10_000);
    const refused = await Promise.all([create(shared.url, ['1'], 'a'), create(shared.url, ['2'], 'a')]);
    expect(refused.map((r) => r.status)).toEqual([400, 400]);
  });

  it('passes any other request upstream as it came, a stream as a stream', async () => {
    upstream = await startFakeAnthropic({ a: () => ({ text: 'streamed through' }) });
    shared = await startSharedBatches(upstream.url, 2);
    const answer = await fetch(`${shared.url}/v1/messages`, { method: 'POST', headers, body: JSON.stringify({ ...params('a'), stream: true }) });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toContain('text/event-stream');
    expect(await answer.text()).toContain('streamed through');
    expect(upstream.requests).toHaveLength(1);
    const unknown = await fetch(`${shared.url}/v1/messages/batches/nope`, { headers });
    expect(unknown.status).toBe(404);
  });

  it("refuses a request without the command's secret path (403) and a malformed batch (400) at once, without stalling the runs that ask together", async () => {
    upstream = await startFakeAnthropic({ a: () => ({ text: 'x' }), b: () => ({ text: 'y' }) }, { batches: { endsAfterMs: 50 } });
    shared = await startSharedBatches(upstream.url, 2, 10_000);
    const origin = new URL(shared.url).origin;
    const outsider = await fetch(`${origin}/v1/messages/batches`, { method: 'POST', headers, body: JSON.stringify({ requests: [] }) });
    expect(outsider.status).toBe(403);
    const guessed = await fetch(`${origin}/${'0'.repeat(48)}/v1/messages/batches`, { method: 'POST', headers, body: '{}' });
    expect(guessed.status).toBe(403);
    for (const body of ['{"requests": 5}', 'not json', '{"requests": [{"custom_id": 1}]}', 'null']) {
      const malformed = await fetch(`${shared.url}/v1/messages/batches`, { method: 'POST', headers, body });
      expect(malformed.status, body).toBe(400);
    }
    const [one, two] = await Promise.all([create(shared.url, ['x'], 'a'), create(shared.url, ['y'], 'b')]);
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(upstream.batches).toHaveLength(1);
    expect(upstream.batches[0]!.requests).toHaveLength(2);
  });
});
