import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { Provider } from '../../src/provider/client.js';
import { connect } from '../../src/provider/connect.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

describe("a call's retry after a stream broke off", () => {
  let server: FakeAnthropic | undefined;
  afterEach(() => server?.close());

  it("waits on the agent's signal and leaves no listener on it: the signal outlives every call of the agent", async () => {
    server = await startFakeAnthropic({
      a: [
        { text: 'partial', midStreamError: { type: 'overloaded_error', message: 'Overloaded' } },
        { text: 'partial', midStreamError: { type: 'overloaded_error', message: 'Overloaded' } },
        { text: 'whole answer' },
      ],
    });
    // The SDK reads its base URL from the environment when the client is made.
    const base = process.env.ANTHROPIC_BASE_URL;
    process.env.ANTHROPIC_BASE_URL = server.url;
    const connections = [await connect('anthropic', { ANTHROPIC_API_KEY: TEST_API_KEY })];
    const provider = new Provider({ connections, maxRetries: 2, requestTimeoutMs: 30_000 });
    if (base === undefined) delete process.env.ANTHROPIC_BASE_URL;
    else process.env.ANTHROPIC_BASE_URL = base;
    const agent = new AbortController();
    const retries: number[] = [];
    const request = { model: 'claude-sonnet-5-5', max_tokens: 100, system: 'You are @a, a checker.', messages: [{ role: 'user' as const, content: 'go' }] };
    const answer = await provider.call(request, agent.signal, { onRetry: (_error, _ms, attempt) => retries.push(attempt) });
    expect(answer.content).toEqual([expect.objectContaining({ type: 'text', text: 'whole answer' })]);
    expect(retries).toEqual([1, 2]);
    expect(getEventListeners(agent.signal, 'abort')).toHaveLength(0);
  }, 20_000);
});
