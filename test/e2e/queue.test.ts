import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

let server: FakeAnthropic;
afterEach(() => server?.close());
const all = (r: { body: { messages: unknown[] } }) => JSON.stringify(r.body.messages);
const replayOf = (dir: string, session: unknown) =>
  conclave(['run', 'workflow.yml', '--replay', String(session), '--json'], { cwd: dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });

describe('queue modes', () => {
  const FAN = (queue: string) => `
name: fan
agents:
  lead: { role: manager, queue: ${queue} }
  a: { role: worker }
  b: { role: worker }
kickoff: Start.
`;
  const fanScript = () => ({
    lead: (r: { body: { messages: unknown[] } }) => (all(r).includes('from @a') || all(r).includes('from @b') ? { text: 'noted' } : { text: '@a @b go' }),
    a: [{ text: 'a done' }],
    b: [{ text: 'b done' }],
  });

  it('collect (the default): the answers that arrived together come in one turn; followup: one turn each', async () => {
    server = await startFakeAnthropic(fanScript());
    const collect = await runWorkflow(server, FAN('collect'));
    expect(collect.code, collect.stderr).toBe(0);
    const turns = (run: typeof collect) =>
      run.events.filter((e) => e.type === 'turn_started' && e.agent === 'lead').map((e) => (e.messages as number[]).length);
    expect(turns(collect)).toEqual([1, 2]);
    await server.close();
    server = await startFakeAnthropic(fanScript());
    const followup = await runWorkflow(server, FAN('followup'));
    expect(followup.code, followup.stderr).toBe(0);
    expect(turns(followup)).toEqual([1, 1, 1]);
    expect((await replayOf(followup.dir, followup.json.session)).code).toBe(0);
  });

  const STEER = (queue: string) => `
name: steer
agents:
  lead: { role: manager, queue: ${queue}, tools: [run_command] }
  a: { role: worker }
kickoff: "@lead @a start"
`;
  const steerScript = () => ({
    lead: (r: { body: { messages: unknown[] } }) => {
      if (all(r).includes('"tool_result"')) return { text: all(r).includes('found the bug') ? 'Steered: a found it.' : 'Nothing new.' };
      if (all(r).includes('found the bug')) return { text: 'noted later' };
      return { tools: [{ name: 'run_command', input: { command: 'sleep 1' } }] };
    },
    a: [{ text: 'I found the bug' }],
  });

  it('steer: a message that arrives while a tool runs joins the next call of the same turn, never the running tool', async () => {
    server = await startFakeAnthropic(steerScript());
    const run = await runWorkflow(server, STEER('steer'));
    expect(run.code, run.stderr).toBe(0);
    const [, second] = server.of('lead');
    // The tool's result, then @a's message, in the user message of the turn's second call.
    const last = JSON.stringify(second!.body.messages.at(-1));
    expect(last.indexOf('"tool_result"')).toBeGreaterThan(-1);
    expect(last.indexOf('[from @a]')).toBeGreaterThan(last.indexOf('"tool_result"'));
    expect(run.events.filter((e) => e.type === 'steered').map((e) => [e.agent, e.step])).toEqual([['lead', 2]]);
    // Handled in that turn: the lead takes no second turn for it.
    expect(run.events.filter((e) => e.type === 'turn_started' && e.agent === 'lead')).toHaveLength(1);
    expect((await replayOf(run.dir, run.json.session)).code).toBe(0);
    await server.close();
    // collect, the same run: the message waits for the next turn.
    server = await startFakeAnthropic(steerScript());
    const collected = await runWorkflow(server, STEER('collect'));
    expect(JSON.stringify(server.of('lead')[1]!.body.messages.at(-1))).not.toContain('[from @a]');
    expect(collected.events.filter((e) => e.type === 'turn_started' && e.agent === 'lead')).toHaveLength(2);
  });

  it('interrupt: a message that arrives during a model call abandons it (its prompt counted as paid) and the call is made again with it', async () => {
    server = await startFakeAnthropic({
      lead: (r) => (all(r).includes('found the bug') ? { text: 'Interrupted: a found it.' } : { text: 'slow answer', delayMs: 15_000 }),
      a: [{ text: 'I found the bug' }],
    });
    const run = await runWorkflow(server, STEER('interrupt'));
    expect(run.code, run.stderr).toBe(0);
    expect(server.of('lead')).toHaveLength(2);
    // The call again with the message, long before the slow answer would have come (on any machine).
    const [first, again] = server.of('lead');
    expect(again!.receivedAt - first!.receivedAt).toBeLessThan(10_000);
    const interrupted = run.events.filter((e) => e.type === 'call_interrupted');
    expect(interrupted.map((e) => [e.agent, e.step])).toEqual([['lead', 1]]);
    expect(interrupted[0]!.cost_usd).toBeGreaterThan(0);
    expect(run.events.filter((e) => e.type === 'steered').map((e) => [e.agent, e.step])).toEqual([['lead', 2]]);
    expect(JSON.stringify(server.of('lead')[1]!.body.messages.at(-1))).toContain('[from @a]');
    expect(run.events.filter((e) => e.type === 'turn_started' && e.agent === 'lead')).toHaveLength(1);
    // Counted: the run's cost holds the abandoned prompt.
    const calls = run.events.filter((e) => e.type === 'model_call').reduce((sum, e) => sum + Number(e.cost_usd), 0);
    expect((run.json.usage as { cost_usd: number }).cost_usd).toBeCloseTo(calls + Number(interrupted[0]!.cost_usd), 5);
    const replay = await replayOf(run.dir, run.json.session);
    expect(replay.code, replay.stdout.slice(0, 300)).toBe(0);
  });

  it('interrupt: a message that arrives while the call is made again after "prompt is too long" interrupts it like any call; the turn goes on and ends', async () => {
    let refused = false;
    server = await startFakeAnthropic({
      lead: (r) => {
        const sent = all(r);
        if (lastUserText(r).includes('Write a summary of your work so far')) return { text: 'Summary: a answered first.' };
        if (sent.includes('[from @b]')) return { text: 'Both in: done.' };
        if (sent.includes('a first')) {
          if (!refused) {
            refused = true;
            return { error: { status: 400, type: 'invalid_request_error', message: 'prompt is too long: 300000 tokens > 200000 maximum' } };
          }
          return { text: 'slow answer', delayMs: 6000 };
        }
        return { text: '@a @b go' };
      },
      a: [{ text: '@lead a first' }],
      b: [{ text: '@lead b second', delayMs: 2000 }],
    });
    const workflow =
      'name: retried\nagents:\n  lead: { role: manager, queue: interrupt, wake: each }\n  a: { role: worker }\n  b: { role: worker }\nkickoff: "@lead start"\n';
    const run = await runWorkflow(server, workflow);
    expect(run.code, run.stderr).toBe(0);
    expect(run.events.filter((e) => e.type === 'context_compacted' && e.agent === 'lead')).toHaveLength(1);
    expect(run.events.filter((e) => e.type === 'call_interrupted' && e.agent === 'lead')).toHaveLength(1);
    expect(run.events.filter((e) => e.type === 'turn_failed')).toEqual([]);
    const turns = (type: string) => run.events.filter((e) => e.type === type && e.agent === 'lead').length;
    expect(turns('turn_ended')).toBe(turns('turn_started'));
    expect(
      run.events.filter((e) => e.type === 'message' && (e.message as { sender: string }).sender === 'lead').map((e) => (e.message as { text: string }).text),
    ).toContain('Both in: done.');
    expect((await replayOf(run.dir, run.json.session)).code).toBe(0);
  });
});
