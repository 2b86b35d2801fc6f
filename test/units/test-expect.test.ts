import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CaseRun, RunJson } from '../../src/cli/test/test-case-run.js';
import { checkCase } from '../../src/cli/test/test-expect.js';
import type { Expectation, TestCase } from '../../src/cli/test/expectations.js';
import type { SessionEvent } from '../../src/session/format.js';
import { HEADER } from '../helpers/session-header.js';
import { loadWorkflow } from '../../src/workflow/load.js';

/** A workflow loaded from a file of its own, as `conclave test` loads a case's. */
async function loadedWorkflow(name: string, text: string) {
  const file = join(mkdtempSync(join(tmpdir(), 'conclave-expect-wf-')), name);
  writeFileSync(file, text);
  const { workflow, diagnostics } = await loadWorkflow(file);
  if (!workflow) throw new Error(diagnostics.map((d) => d.message).join('; '));
  return workflow;
}

/** conclave test's checks (src/cli/test/test-expect.ts) from source: each expectation against a run's result and events. */
const at = { line: 7, col: 9 };
const result: RunJson = {
  status: 'success',
  reason: '@lead completed the run',
  outputs: { verdict: 'request-changes', summary: 'Use a parameterised query.' },
  usage: { cost_usd: 0.05 },
  proposals: [
    { id: 'verdict', status: 'decided', winner: 'request-changes' },
    { id: 'open', status: 'no_decision', winner: null },
  ],
  session: 's.jsonl',
};
let seq = 0;
const call = (agent: string, tool: string, input: unknown, id = `t${++seq}`): SessionEvent =>
  ({ seq: ++seq, type: 'tool_call', agent, turn: 1, tool, tool_use_id: id, input }) as SessionEvent;
const toolResult = (id: string, isError: boolean): SessionEvent =>
  ({ seq: ++seq, type: 'tool_result', agent: 'a', turn: 1, tool: 'write_file', tool_use_id: id, content: 'x', is_error: isError }) as SessionEvent;
const message = (sender: string, recipients: string[], text: string): SessionEvent =>
  ({ seq: ++seq, type: 'message', message: { id: seq, kind: 'agent', sender, recipients, text } }) as SessionEvent;
const events: SessionEvent[] = [
  call('security', 'grep', { pattern: 'query\\(', path: 'src' }),
  call('style', 'read_file', { path: 'a.ts' }),
  call('security', 'vote', { proposal: 'verdict', option: 'request-changes', reason: 'r' }),
  message('lead', ['security', 'style'], 'please look'),
  message('security', ['lead'], 'src/users.js:2 is an injection'),
  call('writer', 'write_file', { path: './out/ok.md', content: 'written' }, 'w1'),
  toolResult('w1', false),
  call('writer', 'write_file', { path: 'out/refused.md', content: 'never' }, 'w2'),
  toolResult('w2', true),
  { seq: ++seq, type: 'document_opened', document: { name: 'plan', owner: 'lead', mode: 'edit', text: 'v1' } } as SessionEvent,
  { seq: ++seq, type: 'document_changed', document: 'plan', version: 2, author: 'lead', text: 'v2 final', why: '', edit: null } as SessionEvent,
];
const run = (over: Partial<CaseRun> = {}): CaseRun => ({
  code: 0,
  result,
  events,
  header: HEADER,
  stderr: '',
  session: 's',
  scratch: 'x',
  wallMs: 1,
  ...over,
});
const context = {
  recording: [] as SessionEvent[],
  documentFiles: { plan: './PLAN.md' },
  workflow: await loadedWorkflow('w.yml', 'name: w\nkickoff: go\nagents:\n  lead: { role: manager, model: claude-opus-5 }\n'),
};
const testCase = (...expect: Expectation[]): TestCase => ({ name: 'c', at: { line: 3, col: 5 }, inputs: {}, expect });
const check = (e: Expectation, r = run()) => checkCase(testCase(e), r, context);

describe('the expectations of a case', () => {
  it('status, outputs (exact, contains, matches) and cost: hold, or say what the run did, at their place', () => {
    expect(check({ kind: 'status', at, status: 'success' })).toEqual([]);
    expect(check({ kind: 'status', at, status: 'failure' })).toEqual([
      { expectation: 'status', line: 7, column: 9, message: 'expected status failure, got success: @lead completed the run' },
    ]);
    expect(check({ kind: 'output', at, name: 'verdict', match: { equals: 'request-changes' } })).toEqual([]);
    expect(check({ kind: 'output', at, name: 'verdict', match: { equals: 'request' } })[0]!.message).toBe(
      'output "verdict" is "request-changes", not "request"',
    );
    expect(check({ kind: 'output', at, name: 'summary', match: { contains: 'parameterised' } })).toEqual([]);
    expect(check({ kind: 'output', at, name: 'summary', match: { contains: 'prepared' } })[0]!.message).toBe(
      'output "summary" is "Use a parameterised query.", not one containing "prepared"',
    );
    expect(check({ kind: 'output', at, name: 'summary', match: { matches: /^Use a/u } })).toEqual([]);
    expect(check({ kind: 'output', at, name: 'summary', match: { matches: /^use/u } })[0]!.message).toBe(
      'output "summary" is "Use a parameterised query.", not one matching /^use/u',
    );
    expect(check({ kind: 'output', at, name: 'nope', match: { equals: 'x' } })[0]!.message).toBe(
      'the run gave no output "nope" (it gave "verdict", "summary")',
    );
    expect(check({ kind: 'output', at, name: 'x', match: { equals: 'x' } }, run({ result: { ...result, outputs: {} } }))[0]!.message).toBe(
      'the run gave no output "x" (it gave none)',
    );
    expect(check({ kind: 'cost', at, maxUsd: 0.05 })).toEqual([]);
    expect(check({ kind: 'cost', at, maxUsd: 0.049 })[0]!.message).toBe('the run cost $0.0500, over the $0.049 expected at most');
  });

  it('proposals: the winner, a proposal with none, one never opened', () => {
    expect(check({ kind: 'proposal', at, id: 'verdict', winner: 'request-changes' })).toEqual([]);
    expect(check({ kind: 'proposal', at, id: 'verdict', winner: 'approve' })[0]!.message).toBe(
      'proposal "verdict": expected "approve" to win, but "request-changes" won',
    );
    expect(check({ kind: 'proposal', at, id: 'open', winner: 'yes' })[0]!.message).toBe(
      'proposal "open": expected "yes" to win, but it ended no_decision with no winner',
    );
    expect(check({ kind: 'proposal', at, id: 'other', winner: 'yes' })[0]!.message).toBe('no proposal "other" was opened (opened: verdict, open)');
    expect(check({ kind: 'proposal', at, id: 'x', winner: 'y' }, run({ result: { ...result, proposals: [] } }))[0]!.message).toBe(
      'no proposal "x" was opened (opened: none)',
    );
  });

  it('tools: in order for each agent, matched on name, agent and part of the input', () => {
    const tool = (name: string, agent?: string, input?: Record<string, unknown>) => ({ at, name, ...(agent ? { agent } : {}), ...(input ? { input } : {}) });
    const ok = (...calls: ReturnType<typeof tool>[]) => check({ kind: 'tools', at, calls });
    expect(ok(tool('grep', 'security', { pattern: 'query\\(' }), tool('vote', 'security', { option: 'request-changes' }))).toEqual([]);
    // Each agent's order is its own; calls naming no agent keep the team's order.
    expect(ok(tool('read_file', 'style'), tool('grep', 'security'))).toEqual([]);
    expect(ok(tool('grep'), tool('read_file'), tool('vote'))).toEqual([]);
    const swapped = ok(tool('vote', 'security'), tool('grep', 'security'));
    expect(swapped).toEqual([
      {
        expectation: 'tools',
        line: 7,
        column: 9,
        message: 'no call of grep by @security (it came before the call listed above it); @security called: grep, vote',
      },
    ]);
    expect(ok(tool('grep', 'security', { pattern: 'eval' }))[0]!.message).toBe(
      'no call of grep by @security with input {"pattern":"eval"}; @security called: grep, vote',
    );
    expect(ok(tool('grep', 'style'))[0]!.message).toBe('no call of grep by @style; @style called: read_file');
    expect(ok(tool('grep', 'nobody'))[0]!.message).toBe('no call of grep by @nobody; @nobody called: none');
    expect(ok(tool('annotate'))[0]!.message).toMatch(/^no call of annotate; the team called: grep, read_file, vote, write_file, write_file$/);
    // A nested part of the input, and a value of another type, are compared as they are.
    expect(ok(tool('vote', undefined, { proposal: 'verdict' }))).toEqual([]);
    expect(ok(tool('grep', undefined, { path: ['src'] }))).toHaveLength(1);
    // Part of the input with one key of two wrong does not hold.
    expect(ok(tool('grep', 'security', { pattern: 'query\\(', path: 'lib' }))).toHaveLength(1);
    // The same call written twice needs two calls: @writer made two write_file, @security one grep.
    expect(ok(tool('write_file', 'writer'), tool('write_file', 'writer'))).toEqual([]);
    expect(ok(tool('grep', 'security'), tool('grep', 'security'))[0]!.message).toBe(
      'no call of grep by @security (it came before the call listed above it); @security called: grep, vote',
    );
    expect(ok(tool('write_file', 'writer', { path: 'out/refused.md' }), tool('write_file', 'writer', { path: 'out/refused.md' }))).toHaveLength(1);
  });

  it('not_tools: a matching call is named with its agent, input and turn', () => {
    expect(check({ kind: 'not_tool', at, call: { at, name: 'run_command' } })).toEqual([]);
    expect(check({ kind: 'not_tool', at, call: { at, name: 'grep', agent: 'style' } })).toEqual([]);
    expect(check({ kind: 'not_tool', at, call: { at, name: 'grep', agent: 'security' } })[0]!.message).toBe(
      '@security called grep "{\\"pattern\\":\\"query\\\\\\\\(\\",\\"path\\":\\"src\\"}" in turn 1',
    );
  });

  it('messages: from, to and contains, each one alone or together', () => {
    const m = (message: { from?: string; to?: string; contains?: string }) => check({ kind: 'message', at, message: { at, ...message } });
    expect(m({ from: 'lead', to: 'style' })).toEqual([]);
    expect(m({ to: 'lead', contains: 'injection' })).toEqual([]);
    expect(m({ contains: 'please' })).toEqual([]);
    expect(m({ from: 'style' })[0]!.message).toBe('no message from @style (0 messages from @style in the run)');
    expect(m({ from: 'security', to: 'style' })[0]!.message).toBe('no message from @security to @style (1 message from @security in the run)');
    expect(m({ contains: 'nothing' })[0]!.message).toBe('no message containing "nothing" (2 messages in the run)');
    // To an agent that only sent it: @security wrote the injection message, to @lead.
    expect(m({ to: 'security', contains: 'injection' })).toHaveLength(1);
    expect(m({ from: 'lead', contains: 'injection' })).toHaveLength(1);
  });

  it('not_messages, votes, and the counts: calls, turns, tokens, wall_s', () => {
    const usage = { input_tokens: 100, output_tokens: 20, cache_creation_input_tokens: 5, cache_read_input_tokens: 1000 };
    const sized: SessionEvent[] = [
      ...events,
      { seq: ++seq, type: 'turn_started', agent: 'lead', turn: 1, through: 0, messages: [] } as SessionEvent,
      {
        seq: ++seq,
        type: 'model_call',
        agent: 'lead',
        turn: 1,
        step: 1,
        request: {},
        cost_usd: 0,
        response: { content: [], stop_reason: 'end_turn', usage },
      } as unknown as SessionEvent,
      {
        seq: ++seq,
        type: 'model_call',
        agent: 'lead',
        turn: 1,
        step: 2,
        request: {},
        cost_usd: 0,
        response: { content: [], stop_reason: 'end_turn' },
      } as unknown as SessionEvent,
      { seq: ++seq, type: 'turn_ended', agent: 'lead', turn: 1, elapsed_ms: 2500 } as SessionEvent,
      { seq: ++seq, type: 'turn_started', agent: 'security', turn: 1, through: 0, messages: [] } as SessionEvent,
      { seq: ++seq, type: 'turn_ended', agent: 'security', turn: 1, elapsed_ms: 4250 } as SessionEvent,
      { seq: ++seq, type: 'vote', proposal: 'verdict', voter: 'security', option: 'request-changes', reason: 'r' } as SessionEvent,
      { seq: ++seq, type: 'vote', proposal: 'verdict', voter: '@octocat', option: 'approve', reason: 'ok' } as SessionEvent,
    ];
    const c = (e: Expectation) => check(e, run({ events: sized }));
    expect(c({ kind: 'not_message', at, message: { at, from: 'style' } })).toEqual([]);
    expect(c({ kind: 'not_message', at, message: { at, from: 'security', contains: 'injection' } })).toEqual([
      { expectation: 'not_messages', line: 7, column: 9, message: '@security wrote to @lead: "src/users.js:2 is an injection"' },
    ]);
    expect(c({ kind: 'not_message', at, message: { at, to: 'security' } })[0]!.message).toBe('@lead wrote to @security, @style: "please look"');
    expect(c({ kind: 'vote', at, voter: 'security', option: 'request-changes' })).toEqual([]);
    expect(c({ kind: 'vote', at, voter: '@security', option: 'request-changes' })).toEqual([]);
    expect(c({ kind: 'vote', at, voter: '@octocat', option: 'approve' })).toEqual([]);
    expect(c({ kind: 'vote', at, voter: 'octocat', option: 'approve' })).toEqual([]);
    expect(c({ kind: 'vote', at, voter: 'security', option: 'approve' })).toEqual([
      { expectation: 'votes.security', line: 7, column: 9, message: '@security did not vote "approve" (it voted "request-changes" on verdict)' },
    ]);
    expect(c({ kind: 'vote', at, voter: 'style', option: 'approve' })[0]!.message).toBe('@style did not vote "approve" (it cast no vote)');
    // Two calls, two turns, 1,125 tokens (a call without usage counts none), 4.25 s to the last turn's end.
    expect(c({ kind: 'count', at, what: 'calls', max: 2, min: 2 })).toEqual([]);
    expect(c({ kind: 'count', at, what: 'calls', max: 1 })).toEqual([
      { expectation: 'calls', line: 7, column: 9, message: 'the run took 2 calls, over the 1 expected at most' },
    ]);
    expect(c({ kind: 'count', at, what: 'calls', min: 3 })[0]!.message).toBe('the run took 2 calls, under the 3 expected at least');
    expect(c({ kind: 'count', at, what: 'turns', max: 2 })).toEqual([]);
    expect(c({ kind: 'count', at, what: 'turns', max: 1 })[0]!.message).toBe('the run took 2 turns, over the 1 expected at most');
    expect(c({ kind: 'count', at, what: 'tokens', max: 1125, min: 1125 })).toEqual([]);
    expect(c({ kind: 'count', at, what: 'tokens', max: 1124 })[0]!.message).toBe('the run took 1,125 tokens, over the 1124 expected at most');
    expect(c({ kind: 'count', at, what: 'wall_s', max: 4.25 })).toEqual([]);
    expect(c({ kind: 'count', at, what: 'wall_s', max: 4 })[0]!.message).toBe('the run took 4.3 s, over the 4 expected at most');
    expect(c({ kind: 'count', at, what: 'wall_s', min: 5 })[0]!.message).toBe('the run took 4.3 s, under the 5 expected at least');
  });

  it('files: from the session offline (write_file that succeeded, documents to their write_to), from the workspace live', () => {
    const f = (path: string, match: { equals: string } | { contains: string }, r = run()) => check({ kind: 'file', at, path, match }, r);
    expect(f('out/ok.md', { equals: 'written' })).toEqual([]);
    expect(f('out/refused.md', { equals: 'never' })[0]!.message).toBe('the run wrote no file out/refused.md');
    expect(f('PLAN.md', { equals: 'v2 final' })).toEqual([]);
    expect(f('PLAN.md', { contains: 'v1' })[0]!.message).toBe('PLAN.md holds "v2 final", not one containing "v1"');
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-expect-'));
    mkdirSync(join(workspace, 'out'));
    writeFileSync(join(workspace, 'out', 'ok.md'), 'on disk');
    expect(f('out/ok.md', { equals: 'on disk' }, run({ workspace }))).toEqual([]);
    expect(f('PLAN.md', { equals: 'v2 final' }, run({ workspace }))[0]!.message).toBe('the run wrote no file PLAN.md');
  });

  it('a run with no result, and a run that is not the recorded one, fail the case once at its name', async () => {
    const all = testCase({ kind: 'status', at, status: 'success' });
    expect(checkCase(all, run({ result: undefined, broken: 'the run took longer than 120 s and was stopped' }), context)).toEqual([
      { expectation: 'run', line: 3, column: 5, message: 'the run gave no result: the run took longer than 120 s and was stopped' },
    ]);
    expect(checkCase(all, run({ result: undefined, stderr: 'a\nb\nconclave: the workflow is invalid\n', code: 2 }), context)[0]!.message).toBe(
      'the run gave no result: a b conclave: the workflow is invalid',
    );
    expect(checkCase(all, run({ result: undefined, code: 2 }), context)[0]!.message).toBe('the run gave no result: conclave exited with 2');
    const recording = [{ seq: 6, type: 'model_call', agent: 'lead', turn: 2, step: 3 } as unknown as SessionEvent];
    const workflow = await loadedWorkflow(
      'lead.yml',
      'name: t\ninputs:\n  tone: { type: string }\nkickoff: go\nagents:\n  lead:\n    role: manager\n    model: claude-opus-5\n    system: |\n      Be brief.\n      Be $<< inputs.tone >> to all.\n',
    );
    const diverged = (path: string, recorded: unknown, now: unknown, event = 6) => ({
      ...result,
      status: 'error',
      reason: 'the run differs from the session at …',
      divergence: { event, path, recorded, now },
    });
    const prompt = checkCase(
      all,
      run({ result: diverged('request.system', 'You are @lead.\nBe brief.\nBe kind to all.', 'You are @lead.\nBe brief.\nBe stern to all.') }),
      {
        ...context,
        recording,
        recordingFile: 'rec.jsonl',
        workflow,
      },
    );
    // The failure stands at the workflow line that changed, with a diff and the command that shows the call.
    expect(prompt).toEqual([
      {
        expectation: 'recording',
        file: workflow.file,
        line: 11,
        column: 7,
        message: [
          "the workflow changed: @lead's model call 3 of turn 2 differs from the recording at system",
          '--- recorded system',
          '+++ now system',
          '@@ -1,3 +1,3 @@',
          ' You are @lead.',
          ' Be brief.',
          '-Be kind to all.',
          '+Be stern to all.',
          'see the recorded call: conclave show rec.jsonl --event 6',
        ].join('\n'),
      },
    ]);
    const model = checkCase(all, run({ result: diverged('request.model', 'claude-sonnet-5-5', 'claude-opus-5') }), { ...context, recording, workflow });
    expect(model[0]).toMatchObject({ file: workflow.file, line: 8, column: 5 });
    // Where the change cannot be found in the workflow, the failure stands at the case.
    const other = checkCase(all, run({ result: diverged('message.text', 'x', 'y', 9) }), { ...context, recording, recordingFile: 'rec.jsonl', workflow });
    expect(other[0]).toMatchObject({ line: 3, column: 5 });
    expect(other[0]!.file).toBeUndefined();
    expect(other[0]!.message).toMatch(/^the run differs from the recording at event #9 \(the end of the recording\): message\.text\n--- recorded/);
    expect(other[0]!.message).toContain('see the recorded event: conclave show rec.jsonl --event 9');
    const ended = {
      ...result,
      status: 'error',
      reason: 'the run differs from the session at event #7 (x): the run ended (success) before it reached this recorded event',
    };
    expect(checkCase(all, run({ result: ended }), context)[0]).toMatchObject({
      expectation: 'recording',
      message: expect.stringMatching(/^the run differs from the recording at event #7/),
    });
    const stalled = { ...result, status: 'error', reason: 'the recording cannot answer the run: it waits for …' };
    expect(checkCase(all, run({ result: stalled }), context)[0]).toMatchObject({ expectation: 'recording', message: stalled.reason });
    // A provider error fails the case once: at its status expectation, or at its name when it has none.
    const outage = { ...result, status: 'provider_error', reason: 'Overloaded', outputs: {} };
    const withOutput = testCase({ kind: 'status', at, status: 'success' }, { kind: 'output', at, name: 'verdict', match: { equals: 'x' } });
    expect(checkCase(withOutput, run({ result: outage }), context)).toEqual([
      { expectation: 'status', line: 7, column: 9, message: 'expected status success, got provider_error: Overloaded' },
    ]);
    expect(checkCase(testCase({ kind: 'cost', at, maxUsd: 1 }), run({ result: outage }), context)).toEqual([
      { expectation: 'run', line: 3, column: 5, message: 'the run stopped on a provider_error: Overloaded' },
    ]);
    // An error of another kind is the run's status: the expectations say it.
    expect(checkCase(all, run({ result: { ...result, status: 'error', reason: 'boom' } }), context)[0]!.message).toBe(
      'expected status success, got error: boom',
    );
  });
});
