import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic, type Reply, type RecordedRequest } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY, type WorkflowRun } from '../helpers/run-workflow.js';
import { readEvents } from '../helpers/session.js';

/** A lead that sends its helper off twice, then completes on its third turn; both need the feature input. */
const PAIR = (limits: string) => `
name: pair
inputs:
  feature: { type: string, required: true, description: What to build }
  token: { type: string, secret: true }
limits: ${limits}
defaults: { max_tokens: 4096 }
agents:
  lead: { role: manager, system: "Build $<< inputs.feature >>." }
  helper: { role: worker }
kickoff: Start on $<< inputs.feature >>.
outputs:
  summary: $<< result.summary >>
`;

// $0.022 a call at Sonnet 5.5's prices; a call's worst case (4,096 tokens out) is about $0.045.
const USAGE = { input_tokens: 1_000, output_tokens: 2_000 };
const script = (helperDelayMs = 0) => ({
  lead: (r: RecordedRequest): Reply =>
    /^\[Turn 3 of/.test(lastUserText(r))
      ? { tools: [{ name: 'complete', input: { status: 'success', summary: 'built it' } }], usage: USAGE }
      : { text: '@helper do the next part', usage: USAGE },
  helper: (): Reply => ({ text: 'done', usage: USAGE, delayMs: helperDelayMs }),
});

let servers: FakeAnthropic[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});
async function server(helperDelayMs = 0): Promise<FakeAnthropic> {
  const s = await startFakeAnthropic(script(helperDelayMs));
  servers.push(s);
  return s;
}

function sessionOf(run: WorkflowRun): string {
  return join(run.dir, String((run.json as { session: string }).session));
}

/** Resumes with the given flags against a fresh server; only `-i token=…` (a secret) is given. */
async function resume(run: WorkflowRun, flags: string[]) {
  const fresh = await server();
  const result = await conclave(['resume', sessionOf(run), '--json', '-i', 'token=tok_9f8e7d6c5b4a', ...flags], {
    cwd: run.dir,
    env: { ANTHROPIC_BASE_URL: fresh.url, ANTHROPIC_API_KEY: TEST_API_KEY },
  });
  return { ...result, json: JSON.parse(result.stdout || '{}'), server: fresh };
}

/** Every model call a session recorded, as agent/turn/step. */
function recordedCalls(file: string): string[] {
  return readEvents(file, { effective: true })
    .filter((e) => e.type === 'model_call')
    .map((e) => `${e.agent}/${e.turn}/${e.step}`);
}

describe('a run stopped by a limit, resumed with a larger one', () => {
  it.each([
    ['max_turns', '{ max_turns: 4 }', ['--max-turns', '10'], 0],
    ['budget_usd', '{ budget_usd: 0.1 }', ['--budget-usd', '1'], 0],
    ['timeout', '{ timeout: 2s }', ['--timeout', '1m'], 30_000],
  ] as const)('%s: goes on to completion, sending no recorded call again', async (limit, limits, flags, helperDelayMs) => {
    const first = await server(helperDelayMs);
    const stopped = await runWorkflow(first, PAIR(limits), ['-i', 'feature=search', '-i', 'token=tok_9f8e7d6c5b4a']);
    expect(stopped.code, stopped.stderr).toBe(3);
    expect(stopped.json.reason).toMatch(new RegExp(`^limit reached: ${limit} `));
    const file = sessionOf(stopped);
    const before = recordedCalls(file);
    expect(before.length).toBeGreaterThan(0);

    const resumed = await resume(stopped, [...flags]);
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    expect(resumed.json).toMatchObject({ status: 'success', outputs: { summary: 'built it' } });
    // The new server saw only calls the session had no answer for.
    const after = recordedCalls(file);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(resumed.server.requests).toHaveLength(after.length - before.length);
    // The recorded inputs came back without -i feature=…, and the prompt the lead saw holds them.
    expect(JSON.stringify(resumed.server.of('lead').at(-1)!.body.system)).toContain('Build search.');
    // The new limit is an event of the session, after the resumed event.
    const events = readEvents(file);
    const changed = events.find((e) => e.type === 'limits_changed')!;
    expect(events[events.indexOf(changed) - 1]!.type).toBe('resumed');
    expect(changed.changed).toEqual([{ max_turns: 'maxTurns', budget_usd: 'budgetUsd', timeout: 'timeoutMs' }[limit]]);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('keeps the recorded limit when no flag raises it, and says which flag does', async () => {
    const stopped = await runWorkflow(await server(), PAIR('{ max_turns: 4 }'), ['-i', 'feature=search', '-i', 'token=tok_9f8e7d6c5b4a', '--max-turns', '3']);
    expect(stopped.code).toBe(3);
    expect(stopped.json.reason).toBe('limit reached: max_turns (3 turns for the team)');
    const again = await resume(stopped, []);
    expect(again.code).toBe(3);
    expect(again.json.reason).toBe('limit reached: max_turns (3 turns for the team)');
    expect(again.server.requests).toHaveLength(0);
    const text = await conclave(['resume', sessionOf(stopped), '-i', 'token=x-secret'], {
      cwd: stopped.dir,
      env: { ANTHROPIC_API_KEY: TEST_API_KEY, ANTHROPIC_BASE_URL: again.server.url },
    });
    expect(text.stdout).toContain(`to continue: conclave resume ${sessionOf(stopped)} --max-turns <a larger value>`);
  });

  it('a resume that raises one limit and then another records both, and a third resume replays them', async () => {
    const stopped = await runWorkflow(await server(), PAIR('{ max_turns: 2 }'), ['-i', 'feature=search', '-i', 'token=tok_9f8e7d6c5b4a']);
    expect(stopped.code).toBe(3);
    const second = await resume(stopped, ['--max-turns', '4']);
    expect(second.json.reason).toBe('limit reached: max_turns (4 turns for the team)');
    const third = await resume(stopped, ['--max-turns', '9']);
    expect(third.code, third.stderr).toBe(0);
    expect(third.server.requests).toHaveLength(1);
    const changes = readEvents(sessionOf(stopped), { effective: true }).filter((e) => e.type === 'limits_changed');
    expect(changes.map((e) => (e.limits as { maxTurns: number }).maxTurns)).toEqual([4, 9]);
  });

  it('refuses limit flags that are not values', async () => {
    const dir = (await runWorkflow(await server(), PAIR('{ max_turns: 2 }'), ['-i', 'feature=x', '-i', 'token=tok_9f8e7d6c5b4a'])).dir;
    for (const [flag, value, message] of [
      ['--max-turns', '0', '--max-turns must be a whole number of turns, at least 1; got "0"'],
      ['--max-turns-per-agent', '2.5', '--max-turns-per-agent must be a whole number of turns, at least 1; got "2.5"'],
      ['--budget-usd', '-1', '--budget-usd must be a number of dollars above 0; got "-1"'],
      ['--timeout', '600h', '--timeout must be at most 596h (the longest a timer can wait); got "600h"'],
      ['--timeout', '0ms', '--timeout must be at least 1ms; got "0ms"'],
    ]) {
      const r = await conclave(['run', 'workflow.yml', '-i', 'feature=x', flag!, value!], { cwd: dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });
      expect(r.code, flag).toBe(2);
      expect(r.stderr).toBe(`conclave: ${message}\n`);
    }
  });
});

describe('the budget through the CLI', () => {
  it.each([1, 2, 3, 4])('a fan-out of random size, concurrency and prices spends at most its budget (case %i)', async (n) => {
    let state = 0x9e3779b9 * n;
    const rand = () => (state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 4294967296;
    const workers = 8 + Math.floor(rand() * 33);
    const concurrency = 1 + Math.floor(rand() * 64);
    const price = { input: 1 + rand() * 10, output: 5 + rand() * 50 };
    const budget = 0.05 + rand() * 0.5;
    const names = Array.from({ length: workers }, (_, i) => `w${i}`);
    const s = await startFakeAnthropic({
      lead: (r) =>
        /^\[Turn 1 of/.test(lastUserText(r)) ? { text: '@all go' } : { tools: [{ name: 'complete', input: { status: 'success', summary: 'ok' } }] },
      ...Object.fromEntries(
        names.map((w) => [
          w,
          () => ({
            text: 'done',
            delayMs: Math.floor(rand() * 20),
            usage: { input_tokens: 200 + Math.floor(rand() * 500), output_tokens: Math.floor(rand() * 1024) },
          }),
        ]),
      ),
    });
    servers.push(s);
    const workflow = [
      'name: fan',
      `limits: { budget_usd: ${budget}, concurrency: ${concurrency} }`,
      `pricing: { claude-sonnet-5-5: { input: ${price.input}, output: ${price.output} } }`,
      'defaults: { max_tokens: 1024 }',
      'agents:',
      '  lead: { role: manager }',
      ...names.map((w) => `  ${w}: { role: worker }`),
      'kickoff: Go.',
    ].join('\n');
    const run = await runWorkflow(s, workflow);
    expect([0, 3]).toContain(run.code);
    const spent = (run.json as unknown as { usage: { cost_usd: number } }).usage.cost_usd;
    const recorded = run.events.filter((e) => e.type === 'model_call').reduce((sum, e) => sum + Number(e.cost_usd), 0);
    const context = `${workers} workers, concurrency ${concurrency}, budget ${budget}: ${run.json.reason}`;
    expect(spent, context).toBeLessThanOrEqual(budget);
    expect(recorded, context).toBeLessThanOrEqual(budget + 1e-9);
    expect(s.requests.length).toBe(run.events.filter((e) => e.type === 'model_call').length);
  });
});
