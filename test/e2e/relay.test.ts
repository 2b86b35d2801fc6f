import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { channelOf, runWorkflow } from '../helpers/run-workflow.js';

const RELAY = `
name: relay
agents:
  lead:
    role: manager
    description: Asks the questions
    system: Ask @helper whatever the kickoff asks.
  helper:
    role: worker
    description: Answers arithmetic
    system: Answer briefly.
kickoff: What is 2 + 2?
outputs:
  answer: $<< agents.helper.last_message >>
  ended: $<< result.status >>
`;

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('conclave run: two agents relay a question', () => {
  it('ends idle with exit 0 and exactly the expected channel', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@helper what is 2 + 2?' }, { text: 'Thanks: the answer is 4.' }],
      helper: [{ text: '4' }],
    });
    const run = await runWorkflow(server, RELAY);
    expect(run.stderr).not.toContain('failed');
    expect(run.code).toBe(0);
    expect(run.json).toMatchObject({ status: 'idle', exit_code: 0, outputs: { answer: '4', ended: 'idle' } });
    expect(channelOf(run)).toEqual([
      ['system', ['lead'], 'What is 2 + 2?'],
      ['lead', ['helper'], '@helper what is 2 + 2?'],
      ['helper', ['lead'], '4'],
      ['lead', [], 'Thanks: the answer is 4.'],
    ]);
    expect(server.requests.map((r) => r.agent)).toEqual(['lead', 'helper', 'lead']);
  });

  it("gives each turn the agent's own history and only the new messages", async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@helper what is 2 + 2?' }, { text: 'Done.' }],
      helper: [{ text: '4' }],
    });
    await runWorkflow(server, RELAY);
    const [first, second] = server.of('lead');
    const system = second!.body.system as { text: string }[];
    expect(system[0]!.text).toMatch(/^You are @lead, the lead of the team, in "relay"/);
    expect(system[0]!.text).toContain('- @helper — worker, reports to @lead: Answers arithmetic');
    expect(system[0]!.text).toContain('Your instructions:\nAsk @helper whatever the kickoff asks.');
    expect(first!.body.messages).toHaveLength(1);
    expect(second!.body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    const newest = second!.body.messages[2]!.content as { type: string; text: string }[];
    expect(newest[0]!.text).toBe('[Turn 2 of at most 25 for you · team turns: 3 of 100]\n\n[from @helper]\n4');
    expect(second!.headers.authorization).toBe('Bearer sk-ant-test-0123456789abcdef');
  });

  it("wakes a worker's manager when the worker answers without a mention", async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@helper go' }, { text: '' }],
      helper: [{ text: 'no mention here' }],
    });
    const run = await runWorkflow(server, RELAY);
    expect(run.code).toBe(0);
    expect(channelOf(run)[2]).toEqual(['helper', ['lead'], 'no mention here']);
    expect(server.of('lead')).toHaveLength(2);
  });
});
