import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { BIN } from '../helpers/cli.js';
import { channelOf, runWorkflow, TEST_API_KEY, PAIR } from '../helpers/run-workflow.js';

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('conclave run against a failing provider', () => {
  it('retries 429, 529 and 500 responses, honouring retry-after, and succeeds', async () => {
    server = await startFakeAnthropic({
      lead: [
        { error: { status: 429, type: 'rate_limit_error', retryAfterMs: 20 } },
        { error: { status: 529, type: 'overloaded_error', retryAfterSeconds: 1 } },
        { error: { status: 500, type: 'api_error' } },
        { text: 'Done after three retries.' },
      ],
    });
    const run = await runWorkflow(server, PAIR());
    expect(run.code).toBe(0);
    expect(channelOf(run)[1]).toEqual(['lead', [], 'Done after three retries.']);
    expect(server.of('lead').map((r) => r.headers['x-stainless-retry-count'])).toEqual(['0', '1', '2', '3']);
    const [, second, third] = server.of('lead');
    expect(third!.receivedAt - second!.receivedAt).toBeGreaterThanOrEqual(1000);
  });

  it('retries an error event in the middle of a stream', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: 'partial', midStreamError: { type: 'overloaded_error', message: 'Overloaded' } }, { text: 'whole answer' }],
    });
    const run = await runWorkflow(server, PAIR());
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/@lead retrying in \d\.\d s: overloaded_error Overloaded/);
    expect(channelOf(run)[1]).toEqual(['lead', [], 'whole answer']);
  });

  it('ends with exit 4 naming the agent when the provider keeps failing', async () => {
    server = await startFakeAnthropic({ lead: () => ({ error: { status: 529, type: 'overloaded_error', message: 'Overloaded', retryAfterMs: 5 } }) });
    const run = await runWorkflow(server, PAIR());
    expect(run.code).toBe(4);
    expect(run.json).toMatchObject({ status: 'provider_error', exit_code: 4, reason: '@lead failed: 529 overloaded_error Overloaded' });
    expect(server.of('lead')).toHaveLength(5);
  });

  it('ends with exit 4 at once when the API key is refused', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'never' }] });
    const run = await runWorkflow(server, PAIR(), [], { env: { ANTHROPIC_API_KEY: 'sk-wrong' } });
    expect(run.code).toBe(4);
    expect(run.json.reason).toBe('@lead failed: 401 authentication_error invalid x-api-key');
    expect(server.requests).toHaveLength(1);
  });

  it('stops a hung provider at limits.timeout with exit 3', async () => {
    server = await startFakeAnthropic({ lead: [{ hang: true }] });
    const started = Date.now();
    const run = await runWorkflow(server, PAIR('limits: { timeout: 2s }'));
    expect(run.code).toBe(3);
    expect(run.json).toMatchObject({ status: 'limit', reason: 'limit reached: timeout (2s)' });
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('conclave run: limits', () => {
  it('stops two agents that keep mentioning each other at max_turns, with exit 3', async () => {
    server = await startFakeAnthropic({
      lead: () => ({ text: '@helper once more' }),
      helper: () => ({ text: '@lead once more' }),
    });
    const run = await runWorkflow(server, PAIR('limits: { max_turns: 6 }'));
    expect(run.code).toBe(3);
    expect(run.json).toMatchObject({ status: 'limit', reason: 'limit reached: max_turns (6 turns for the team)' });
    expect(server.requests).toHaveLength(6);
  });

  it('stops an agent at max_turns_per_agent', async () => {
    server = await startFakeAnthropic({
      lead: () => ({ text: '@helper once more' }),
      helper: () => ({ text: '@lead once more' }),
    });
    const run = await runWorkflow(server, PAIR('limits: { max_turns_per_agent: 2 }'));
    expect(run.code).toBe(3);
    expect(run.json.reason).toBe('limit reached: max_turns_per_agent (2) for @lead, who still has messages to handle');
  });

  it('stops before a call that could take spend past the budget', async () => {
    server = await startFakeAnthropic({
      lead: () => ({ text: '@helper go', usage: { input_tokens: 10_000, output_tokens: 1_000 } }),
      helper: () => ({ text: '@lead back', usage: { input_tokens: 10_000, output_tokens: 1_000 } }),
    });
    // each call costs 10,000 × $2/M + 1,000 × $10/M = $0.03
    const run = await runWorkflow(server, PAIR('limits: { budget_usd: 0.1 }'));
    expect(run.code).toBe(3);
    // A third call's worst case (its input plus 4,096 tokens of output, ~$0.046) would pass $0.10.
    expect(run.json.reason).toMatch(/^limit reached: budget_usd \(spent \$0\.06 of \$0\.10; the next call could cost up to \$0\.04\d+\)$/);
    expect(server.requests).toHaveLength(2);
  });
});

describe('conclave run: signals', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s aborts the in-flight request and exits %d', async (signal, code) => {
    server = await startFakeAnthropic({ lead: [{ hang: true }] });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-signal-'));
    writeFileSync(join(dir, 'workflow.yml'), PAIR());
    const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--json'], {
      cwd: dir,
      env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    let stdout = '';
    child.stdout.on('data', (c) => (stdout += c));
    while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 20));
    child.kill(signal);
    const exit = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(exit).toBe(code);
    expect(JSON.parse(stdout)).toMatchObject({ status: 'interrupted', reason: `interrupted by ${signal}` });
  });
});
