import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

/**
 * What a call given up mid-flight costs (issue 38): the API bills a prompt once its request has
 * left, whatever stops the call afterwards, so the run counts it; a call stopped before its
 * request left costs nothing. The run's reported cost, show's and the session's agree.
 */
let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const PAIR = 'name: pair\ndefaults: { max_tokens: 1024 }\nagents:\n  lead: { role: manager }\n  helper: { role: worker }\nkickoff: Start.\n';

describe('a call given up after its request left', () => {
  it("a timeout mid-stream: its prompt is counted as paid (a call_abandoned note), in the run's cost, show and the resume", async () => {
    server = await startFakeAnthropic({
      lead: (r) => (r.call === 1 ? { text: '@helper go' } : { text: 'done' }),
      helper: () => ({ text: 'slow', delayMs: 20_000 }),
    });
    const run = await runWorkflow(server, PAIR, ['--timeout', '2s']);
    expect(run.code, run.stderr).toBe(3);
    const abandoned = run.events.filter((e) => e.type === 'call_abandoned');
    expect(abandoned.map((e) => [e.agent, e.why])).toEqual([['helper', 'aborted']]);
    expect(abandoned[0]!.cost_usd as number).toBeGreaterThan(0);
    const answered = run.events.filter((e) => e.type === 'model_call').reduce((sum, e) => sum + Number(e.cost_usd), 0);
    const cost = (run.json.usage as { cost_usd: number }).cost_usd;
    expect(cost).toBeCloseTo(answered + Number(abandoned[0]!.cost_usd), 6);
    const shown = JSON.parse((await conclave(['show', '--format', 'json', String(run.json.session)], { cwd: run.dir })).stdout) as {
      total: { cost_usd: number; calls: number };
    };
    expect(shown.total.cost_usd).toBeCloseTo(cost, 6);
    // A resume counts the note again, and makes the call anew.
    await server.close();
    server = await startFakeAnthropic({ lead: () => ({ text: 'done' }), helper: () => ({ text: 'now fast' }) });
    const resumed = await conclave(['resume', String(run.json.session), '--json', '--timeout', '30s'], {
      cwd: run.dir,
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    const after = (JSON.parse(resumed.stdout) as { usage: { cost_usd: number } }).usage.cost_usd;
    expect(after).toBeGreaterThan(cost);
    expect(server.of('helper')).toHaveLength(1);
  }, 60_000);

  it('a call held back by a rate limit when the run stops costs nothing: no request left', async () => {
    server = await startFakeAnthropic({ lead: (r) => (r.call === 1 ? { text: '@helper go' } : { text: 'done' }), helper: () => ({ text: 'never asked' }) });
    const run = await runWorkflow(server, PAIR, ['--timeout', '3s', '--rate-limit', 'rpm=1']);
    expect(run.code, run.stderr).toBe(3);
    expect(server.of('helper')).toHaveLength(0);
    expect(run.events.filter((e) => e.type === 'call_abandoned')).toEqual([]);
    const answered = run.events.filter((e) => e.type === 'model_call').reduce((sum, e) => sum + Number(e.cost_usd), 0);
    expect((run.json.usage as { cost_usd: number }).cost_usd).toBeCloseTo(answered, 6);
  }, 30_000);
});
