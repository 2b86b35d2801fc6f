import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic, type Reply } from '../fake-anthropic/server.js';
import { channelOf, runWorkflow } from '../helpers/run-workflow.js';

const VOTE = `
name: vote
agents:
  lead: { role: manager }
  a: { role: worker }
  b: { role: worker }
  c: { role: worker }
kickoff: Decide the verdict.
outputs:
  verdict: $<< proposals.verdict.winner >>
  tally: $<< json(proposals.verdict.tally) >>
  outcome: $<< proposals.verdict.status >>
`;

let server: FakeAnthropic;
afterEach(() => server?.close());

const quiet: Reply = { text: '' };

describe('conclave run: proposals', () => {
  it('is decided by the votes of three agents through the real tools, and the run waits for it', async () => {
    server = await startFakeAnthropic({
      lead: [
        {
          tools: [
            {
              name: 'propose',
              input: { id: 'verdict', question: 'Approve the change?', options: ['approve', 'reject'], voters: ['a', 'b', 'c'], rule: 'unanimous' },
            },
          ],
        },
        { text: 'Proposal open.' },
        quiet,
        quiet,
      ],
      a: [{ tools: [{ name: 'vote', input: { proposal: 'verdict', option: 'approve', reason: 'tests pass' } }] }, quiet, quiet],
      b: [{ tools: [{ name: 'vote', input: { proposal: 'verdict', option: 'approve', reason: 'fine' } }] }, quiet, quiet],
      // c first answers without voting; with nothing else left to do, the run reminds it instead of ending.
      c: [{ text: 'Still reading.' }, { tools: [{ name: 'vote', input: { proposal: 'verdict', option: 'approve' } }] }, quiet, quiet],
    });
    const run = await runWorkflow(server, VOTE);
    expect(run.code).toBe(0);
    expect(run.json.outputs).toEqual({ verdict: 'approve', tally: '{"approve":3,"reject":0}', outcome: 'decided' });
    const texts = channelOf(run).map(([sender, to, text]) => `${sender}→${to.join(',')}: ${text.split('\n')[0]}`);
    expect(texts).toContain('system→c: Proposal "verdict" is still waiting for your vote: Approve the change? Use the vote tool.');
    expect(texts.at(-1)).toBe('system→lead,a,b,c: Proposal "verdict" is decided: "approve" (votes: "approve" 3, "reject" 0; rule: unanimous).');
    const reminder = texts.findIndex((t) => t.includes('still waiting'));
    const decided = texts.findIndex((t) => t.includes('is decided'));
    expect(reminder).toBeLessThan(decided);
    expect(lastUserText(server.of('a')[1]!)).toMatch(/"status": "open"/);
  });

  it('returns a rejected vote to the model as a tool error', async () => {
    server = await startFakeAnthropic({
      lead: [{ tools: [{ name: 'propose', input: { id: 'verdict', question: 'Ok?', options: ['yes', 'no'], voters: ['a'] } }] }, quiet, quiet],
      a: [
        { tools: [{ name: 'vote', input: { proposal: 'verdict', option: 'maybe' } }] },
        { tools: [{ name: 'vote', input: { proposal: 'verdict', option: 'yes' } }] },
        quiet,
        quiet,
      ],
      b: [],
      c: [],
    });
    const run = await runWorkflow(server, VOTE);
    expect(run.code).toBe(0);
    const toolResult = server.of('a')[1]!.body.messages.at(-1)!.content as { type: string; is_error?: boolean; content: string }[];
    expect(toolResult[0]).toMatchObject({
      type: 'tool_result',
      is_error: true,
      content: '"maybe" is not an option of proposal "verdict"; the options are "yes", "no"',
    });
    expect(run.json.outputs.verdict).toBe('yes');
  });
});
