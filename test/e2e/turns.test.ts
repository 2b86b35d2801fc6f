import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic, type RecordedRequest } from '../fake-anthropic/server.js';
import { channelOf, runWorkflow } from '../helpers/run-workflow.js';

const SOLO = `
name: solo
agents:
  lead: { role: manager, tools: [list_files] }
  helper: { role: worker }
kickoff: Start.
`;

let server: FakeAnthropic;
afterEach(() => server?.close());

const toolResults = (request: RecordedRequest) =>
  (request.body.messages.at(-1)!.content as { type: string; content: string; is_error?: boolean }[]).filter((b) => b.type === 'tool_result');

describe('one turn', () => {
  it('stops the tool loop at 25 model calls and posts the reply', async () => {
    server = await startFakeAnthropic({ lead: () => ({ text: 'still working', tools: [{ name: 'list_files', input: {} }] }) });
    const run = await runWorkflow(server, SOLO);
    expect(run.code).toBe(0);
    expect(server.of('lead')).toHaveLength(25);
    expect(channelOf(run)[1]).toEqual(['lead', [], 'still working']);
  });

  it('answers channel_history and an unknown tool through tool results', async () => {
    server = await startFakeAnthropic({
      lead: [
        { text: '@helper hello' },
        {
          tools: [
            { name: 'channel_history', input: { last: 2 } },
            { name: 'shell', input: { command: 'ls' } },
          ],
        },
        { text: '' },
      ],
      helper: [{ text: 'hi back' }],
    });
    const run = await runWorkflow(server, SOLO);
    expect(run.code).toBe(0);
    const [history, unknown] = toolResults(server.of('lead')[2]!);
    expect(history!.content).toBe('[#2 from @lead]\n@helper hello\n\n[#3 from @helper]\nhi back');
    expect(unknown).toMatchObject({
      is_error: true,
      content: 'There is no tool "shell". Your tools: propose, vote, cancel_proposal, channel_history, complete, list_files.',
    });
  });

  it('marks prompt-cache breakpoints on the system prompt, the last tool and the last message', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'ok' }] });
    await runWorkflow(server, SOLO);
    const body = server.of('lead')[0]!.body as unknown as {
      system: { cache_control?: unknown }[];
      tools: { name: string; cache_control?: unknown }[];
      messages: { content: { cache_control?: unknown }[] }[];
    };
    const ephemeral = { type: 'ephemeral' };
    expect(body.system.at(-1)!.cache_control).toEqual(ephemeral);
    expect(body.tools.map((t) => t.cache_control ?? null)).toEqual([null, null, null, null, null, ephemeral]);
    expect(body.messages.at(-1)!.content.at(-1)!.cache_control).toEqual(ephemeral);
  });
});
