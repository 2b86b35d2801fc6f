import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastToolResult, lastUserText, startFakeAnthropic, type FakeAnthropic, type RecordedRequest, type Reply } from '../fake-anthropic/server.js';
import { BIN, conclave } from '../helpers/cli.js';
import { channelOf, runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

let servers: FakeAnthropic[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});
async function serve(script: Parameters<typeof startFakeAnthropic>[0]): Promise<FakeAnthropic> {
  const s = await startFakeAnthropic(script);
  servers.push(s);
  return s;
}

const TEAM = `
name: thinkers
defaults: { thinking: adaptive, effort: medium }
agents:
  lead: { role: manager, effort: high }
  w: { role: worker, tools: [list_files, read_file], effort: low, thinking_display: omitted }
kickoff: Look at the files.
outputs:
  summary: $<< result.summary >>
`;

/** Every answer thinks, and carries a redacted thinking block: a tool loop of three calls for @w. */
const thinkingScript = (delayMs = 0) => ({
  lead: (r: RecordedRequest): Reply =>
    !lastUserText(r).includes('notes say')
      ? { thinking: 'Delegate.', redactedThinking: true, text: '@w list the files, then read notes.txt' }
      : {
          thinking: 'Done.',
          redactedThinking: true,
          tools: [{ name: 'complete', input: { status: 'success', summary: lastUserText(r).split('\n').at(-1)! } }],
        },
  w: (r: RecordedRequest): Reply => {
    const tool = lastToolResult(r);
    if (tool === undefined) return { thinking: 'List first.', redactedThinking: true, tools: [{ name: 'list_files', input: {} }], delayMs };
    if (tool === 'list_files')
      return { thinking: 'Now read it.', redactedThinking: true, tools: [{ name: 'read_file', input: { path: 'notes.txt' } }], delayMs };
    return { thinking: 'Report.', redactedThinking: true, text: 'notes say: ship it', delayMs };
  },
});

/** The thinking blocks of every assistant message a request sent back. */
function thinkingSentBack(r: RecordedRequest): string[] {
  return r.body.messages.flatMap((m) =>
    m.role === 'assistant' && typeof m.content !== 'string' ? m.content.filter((b) => b.type.includes('thinking')).map((b) => b.type) : [],
  );
}

describe('current models as they answer: thinking blocks', () => {
  it('a tool loop with thinking and redacted_thinking in every answer completes, each block sent back unchanged', async () => {
    const server = await serve(thinkingScript());
    const run = await runWorkflow(server, TEAM, [], { files: { 'notes.txt': 'ship it' } });
    expect(run.code, run.stderr + run.json.reason).toBe(0);
    expect(run.json.outputs.summary).toBe('notes say: ship it');
    // The test server refuses (400) any tool-loop request whose thinking blocks were dropped or changed.
    const [, second, third] = server.of('w');
    expect(thinkingSentBack(second!)).toEqual(['thinking', 'redacted_thinking']);
    expect(thinkingSentBack(third!)).toEqual(['thinking', 'redacted_thinking', 'thinking', 'redacted_thinking']);
    // The session keeps every block of every answer.
    const calls = run.events.filter((e) => e.type === 'model_call');
    for (const call of calls)
      expect((call.response as { content: { type: string }[] }).content.slice(0, 2).map((b) => b.type)).toEqual(['thinking', 'redacted_thinking']);

    const replay = await conclave(
      ['run', 'workflow.yml', '--replay', join(run.dir, String((run.json as { session?: string }).session)), '--json', '--session', 'replay.jsonl'],
      {
        cwd: run.dir,
        env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: '' },
      },
    );
    expect(replay.code, replay.stdout).toBe(0);
  });

  it('kill -9 in the middle of the tool loop, then resume: the recorded blocks go back unchanged', async () => {
    const first = await serve(thinkingScript(400));
    const dir = mkdtempSync(join(tmpdir(), 'conclave-think-'));
    writeFileSync(join(dir, 'workflow.yml'), TEAM);
    writeFileSync(join(dir, 'notes.txt'), 'ship it');
    const env = { ANTHROPIC_BASE_URL: first.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--quiet'], { cwd: dir, env: { ...process.env, ...env }, stdio: 'ignore' });
    const closed = new Promise((resolve) => child.on('close', resolve));
    const sessions = join(dir, '.conclave', 'sessions');
    const file = () => join(sessions, readdirSync(sessions).find((f) => f.endsWith('.jsonl'))!);
    // Once @w's first tool result is recorded, while its second call is in flight:
    while (
      !(
        existsSync(sessions) &&
        readdirSync(sessions).some((f) => f.endsWith('.jsonl')) &&
        readFileSync(file(), 'utf8').includes('"type":"tool_result","agent":"w"')
      )
    )
      await new Promise((r) => setTimeout(r, 10));
    child.kill('SIGKILL');
    await closed;

    const second = await serve(thinkingScript());
    const resumed = await conclave(['resume', file(), '--json'], { cwd: dir, env: { ANTHROPIC_BASE_URL: second.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).outputs.summary).toBe('notes say: ship it');
    // The resumed run's first request continues @w's tool loop with the recorded thinking blocks.
    expect(thinkingSentBack(second.of('w')[0]!)).toEqual(['thinking', 'redacted_thinking']);
    expect(second.of('lead')).toHaveLength(1);
  });
});

describe('current models as they answer: effort and thinking settings', () => {
  it('sends each agent its own effort and thinking, as the API expects them', async () => {
    const server = await serve(thinkingScript());
    const run = await runWorkflow(server, TEAM, [], { files: { 'notes.txt': 'ship it' } });
    expect(run.code).toBe(0);
    for (const r of server.of('lead')) expect(r.body).toMatchObject({ output_config: { effort: 'high' }, thinking: { type: 'adaptive' } });
    for (const r of server.of('w')) expect(r.body).toMatchObject({ output_config: { effort: 'low' }, thinking: { type: 'adaptive', display: 'omitted' } });
    expect(server.of('lead')[0]!.body.thinking).toEqual({ type: 'adaptive' });
    // Room for thinking: the default max_tokens of a model that thinks is 16,000.
    expect(server.requests.every((r) => r.body.max_tokens === 16_000)).toBe(true);
  });

  it('sends a fixed thinking budget, or thinking off, and refuses a setting that is not one', async () => {
    const server = await serve({ lead: [{ text: 'ok' }] });
    const run = await runWorkflow(
      server,
      'name: t\ndefaults: { model: claude-sonnet-4-5, thinking: 2048, max_tokens: 8000 }\nagents:\n  lead: { role: manager }\nkickoff: hi\n',
    );
    expect(run.code).toBe(0);
    expect(server.requests[0]!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    const offServer = await serve({ lead: [{ text: 'ok' }] });
    const off = await runWorkflow(offServer, 'name: t\nagents:\n  lead: { role: manager, thinking: off }\nkickoff: hi\n');
    expect(off.code).toBe(0);
    expect(offServer.requests[0]!.body.thinking).toEqual({ type: 'disabled' });
    const bad = await runWorkflow(offServer, 'name: t\nagents:\n  lead: { role: manager, thinking: 500, effort: extreme }\nkickoff: hi\n');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('workflow.yml:3:36: agents.lead.thinking must be');
    expect(bad.stderr).toContain('workflow.yml:3:49: agents.lead.effort must be');
    expect(offServer.requests).toHaveLength(1);
  });
});

/** A lead that sends @w off once and completes with what @w answered. */
const PAIR = `
name: pair
defaults: { max_tokens: 1000 }
agents:
  lead: { role: manager }
  w: { role: worker, tools: [write_file] }
kickoff: Go.
outputs:
  summary: $<< result.summary >>
`;
const lead = (r: RecordedRequest): Reply =>
  r.call === 1
    ? { text: '@w write it up' }
    : { tools: [{ name: 'complete', input: { status: 'success', summary: lastUserText(r).split('\n').slice(2).join('\n') } }] };

describe('current models as they answer: stop reasons', () => {
  it('max_tokens: the turn goes on until the answer is finished, and the whole answer is posted', async () => {
    const server = await serve({ lead, w: [{ text: 'The first half,', stopReason: 'max_tokens' }, { text: 'and the second half.' }] });
    const run = await runWorkflow(server, PAIR);
    expect(run.code, run.json.reason).toBe(0);
    expect(channelOf(run)[2]).toEqual(['w', ['lead'], 'The first half,\nand the second half.']);
    expect(lastUserText(server.of('w')[1]!)).toContain('[Your answer was cut off at the limit of 1000 output tokens. Go on from where it stopped');
    const calls = run.events.filter((e) => e.type === 'model_call' && e.agent === 'w');
    expect(calls.map((e) => [e.turn, e.step, (e.response as { stop_reason: string }).stop_reason])).toEqual([
      [1, 1, 'max_tokens'],
      [1, 2, 'end_turn'],
    ]);
    expect(run.stderr).toContain('@w answer cut off at max_tokens: continuing');
  });

  it('max_tokens in the middle of a tool call: the cut call is not run, and the model is told', async () => {
    const server = await serve({
      lead,
      w: [
        {
          text: 'Writing.',
          tools: [{ name: 'write_file', input: { path: 'out.txt', content: 'x'.repeat(200) } }],
          stopReason: 'max_tokens',
          cutLastTool: true,
        },
        { text: 'I will keep it short.' },
      ],
    });
    const run = await runWorkflow(server, PAIR);
    expect(run.code, run.json.reason).toBe(0);
    expect(existsSync(join(run.dir, 'out.txt'))).toBe(false);
    expect(run.events.filter((e) => e.type === 'tool_call')).toHaveLength(1); // complete, not write_file
    const retold = server.of('w')[1]!;
    expect(lastUserText(retold)).toContain('Your call of write_file was cut off too and was not run');
    // The cut call is not sent back either: the API would want its result.
    expect(JSON.stringify(retold.body.messages)).not.toContain('"name":"write_file"');
    expect(run.stderr).toContain('@w answer cut off at max_tokens: continuing (its call of write_file was cut off and not run)');
  });

  it('max_tokens again and again: after 3 continuations the answer is posted as it stands', async () => {
    const cut = (text: string): Reply => ({ text, stopReason: 'max_tokens' });
    const server = await serve({ lead, w: [cut('one'), cut('two'), cut('three'), cut('four')] });
    const run = await runWorkflow(server, PAIR);
    expect(run.code).toBe(0);
    expect(server.of('w')).toHaveLength(4);
    expect(channelOf(run)[2]![2]).toBe('one\ntwo\nthree\nfour');
  });

  it('pause_turn: the paused answer is sent back as it is, and the turn goes on', async () => {
    const server = await serve({ lead, w: [{ thinking: 'Searching.', text: 'Searching…', stopReason: 'pause_turn' }, { text: 'found it.' }] });
    const run = await runWorkflow(server, PAIR);
    expect(run.code, run.json.reason).toBe(0);
    const resumedCall = server.of('w')[1]!;
    expect(resumedCall.body.messages.at(-1)).toMatchObject({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Searching.' },
        { type: 'text', text: 'Searching…' },
      ],
    });
    expect(channelOf(run)[2]).toEqual(['w', ['lead'], 'Searching…\nfound it.']);
    expect(run.stderr).toContain('@w answer paused by the API: continuing');
  });

  it('refusal by a worker: nothing is posted for it, and its manager is told', async () => {
    const server = await serve({ lead, w: [{ text: '', stopReason: 'refusal' }] });
    const run = await runWorkflow(server, PAIR);
    expect(run.code, run.json.reason).toBe(0);
    const channel = channelOf(run);
    expect(channel.filter(([sender]) => sender === 'w')).toEqual([]);
    expect(channel[2]).toEqual([
      'system',
      ['lead'],
      "@w's model claude-sonnet-5-5 declined to answer (stop reason refusal) in its turn 1: it posted nothing. Rephrase the request, or give the work to another agent.",
    ]);
    expect(run.stderr).toContain('@w declined to answer (refusal): nothing posted');
    expect(run.events.find((e) => e.type === 'turn_ended' && e.agent === 'w')).toBeDefined();
  });

  it('refusal by the lead: the run ends with failure', async () => {
    const server = await serve({ lead: [{ stopReason: 'refusal' }] });
    const run = await runWorkflow(server, PAIR);
    expect(run.code).toBe(1);
    expect(run.json).toMatchObject({
      status: 'failure',
      reason:
        "@lead's model claude-sonnet-5-5 declined to answer (stop reason refusal) in its turn 1, so the run cannot go on; name another model in the " +
        "agent's fallbacks: to have the API answer with it",
    });
  });

  it('model_context_window_exceeded with nothing earlier to compact: the turn fails saying so, and the session can be resumed', async () => {
    const server = await serve({ lead, w: [{ stopReason: 'model_context_window_exceeded' }] });
    const run = await runWorkflow(server, PAIR);
    expect(run.code).toBe(1);
    expect(run.json.reason).toBe(
      "@w failed: the conversation no longer fits claude-sonnet-5-5's context window, and nothing earlier is left to compact (stop reason model_context_window_exceeded)",
    );
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.events.at(-2)).toMatchObject({ type: 'turn_failed', agent: 'w' });
  });
});
