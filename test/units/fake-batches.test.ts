import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

/** The fake's Message Batches API, through the real SDK: what issue 42's batched calls will be built on. */
let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const params = (agent: string) => ({
  model: 'claude-sonnet-5-5',
  max_tokens: 100,
  system: [{ type: 'text' as const, text: `You are @${agent}, a worker.` }],
  messages: [{ role: 'user' as const, content: 'go' }],
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the fake Message Batches API', () => {
  it('a batch is in progress until it ends, then its results say each request: succeeded, errored or expired', async () => {
    server = await startFakeAnthropic(
      {
        a: [{ text: 'a answered' }],
        b: [{ error: { status: 529, type: 'overloaded_error', message: 'busy' } }],
        c: [{ expired: true }],
      },
      { batches: { endsAfterMs: 400 } },
    );
    const client = new Anthropic({ baseURL: server.url, apiKey: TEST_API_KEY, maxRetries: 0 });
    const created = await client.messages.batches.create({
      requests: ['a', 'b', 'c'].map((agent) => ({ custom_id: `call-${agent}`, params: params(agent) })),
    });
    expect(created).toMatchObject({ type: 'message_batch', processing_status: 'in_progress', results_url: null });
    expect(created.request_counts.processing).toBe(3);
    await expect(client.messages.batches.results(created.id)).rejects.toThrow(/No batch `results_url`/);
    await sleep(500);
    const ended = await client.messages.batches.retrieve(created.id);
    expect(ended.processing_status).toBe('ended');
    expect(ended.request_counts).toMatchObject({ succeeded: 1, errored: 1, expired: 1, processing: 0 });
    const results: Record<string, unknown> = {};
    for await (const line of await client.messages.batches.results(created.id)) results[line.custom_id] = line.result;
    expect(results['call-a']).toMatchObject({ type: 'succeeded', message: { type: 'message', content: [{ type: 'text', text: 'a answered' }] } });
    expect(results['call-b']).toEqual({ type: 'errored', error: { type: 'error', error: { type: 'overloaded_error', message: 'busy' } } });
    expect(results['call-c']).toEqual({ type: 'expired' });
    expect(server.requests.map((r) => [r.agent, r.batch])).toEqual([
      ['a', created.id],
      ['b', created.id],
      ['c', created.id],
    ]);
    expect(server.batches[0]!.retrieved).toBe(3); // once by hand, twice by results()
  });

  it('a cancelled batch ends at once with every request canceled', async () => {
    server = await startFakeAnthropic({ a: [{ text: 'never told' }] }, { batches: { endsAfterMs: 60_000 } });
    const client = new Anthropic({ baseURL: server.url, apiKey: TEST_API_KEY, maxRetries: 0 });
    const { id } = await client.messages.batches.create({ requests: [{ custom_id: 'x', params: params('a') }] });
    await client.messages.batches.cancel(id);
    const lines = [];
    for await (const line of await client.messages.batches.results(id)) lines.push(line);
    expect(lines).toEqual([{ custom_id: 'x', result: { type: 'canceled' } }]);
  });

  it('refuses what the API refuses: a bad or repeated custom_id, too many requests, an unknown batch, a wrong key', async () => {
    server = await startFakeAnthropic({}, { batches: { maxRequests: 2 } });
    const client = new Anthropic({ baseURL: server.url, apiKey: TEST_API_KEY, maxRetries: 0 });
    const one = (custom_id: string) => ({ custom_id, params: params('a') });
    await expect(client.messages.batches.create({ requests: [one('has space')] })).rejects.toMatchObject({ status: 400 });
    await expect(client.messages.batches.create({ requests: [one('x'), one('x')] })).rejects.toThrow(/used twice/);
    await expect(client.messages.batches.create({ requests: [one('x'), one('y'), one('z')] })).rejects.toThrow(/at most 2 requests/);
    await expect(client.messages.batches.create({ requests: [one('a'.repeat(65))] })).rejects.toMatchObject({ status: 400 });
    await expect(client.messages.batches.retrieve('msgbatch_none')).rejects.toMatchObject({ status: 404 });
    const stranger = new Anthropic({ baseURL: server.url, apiKey: 'sk-other', maxRetries: 0 });
    await expect(stranger.messages.batches.create({ requests: [one('x')] })).rejects.toMatchObject({ status: 401 });
    expect(server.batches).toHaveLength(0);
  });
});
