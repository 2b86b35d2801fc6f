import { describe, expect, it } from 'vitest';
import type { SessionEvent, SessionHeader } from '../../src/session/format.js';
import { spansOf } from '../../src/trace/spans.js';
import { timelineOf } from '../../src/session/timeline.js';

const header = {
  type: 'header',
  format: 1,
  run_id: 'run-1',
  conclave_version: '0.1.0',
  workflow: { path: 'w.yml', sha256: 'x' },
  inputs: {},
  session: 's',
  started_at: '2026-11-23T10:00:00.000Z',
} as SessionHeader;
const T0 = Date.parse(header.started_at);
let seq = 0;
const at = (ms: number, e: object) => ({ seq: ++seq, at_ms: T0 + ms, ...e }) as unknown as SessionEvent;
const call = (ms: number, agent: string, turn: number, step: number, extra: object = {}) =>
  at(ms, {
    type: 'model_call',
    agent,
    turn,
    step,
    request: step === 1 ? { model: 'claude-haiku-4-5' } : {},
    request_sha256: 'h',
    response: { id: `msg_${step}`, model: 'claude-haiku-4-5', content: [], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } },
    cost_usd: 0.01,
    ...extra,
  });

describe('spans from a session', () => {
  it("nest a turn under the run and a call under its turn, the call from the turn's previous step to its answer", () => {
    const spans = spansOf(header, [
      at(1, { type: 'run_started', workflow: 'w', limits: {} }),
      at(10, { type: 'turn_started', agent: 'a', turn: 1, through: 1, messages: [1] }),
      at(30, { type: 'rate_waited', agent: 'a', turn: 1, step: 1, waited_ms: 12, reason: 'requests' }),
      call(50, 'a', 1, 1),
      at(55, { type: 'tool_call', agent: 'a', turn: 1, tool: 'grep', tool_use_id: 't1', input: { pattern: 'x' } }),
      at(70, { type: 'tool_result', agent: 'a', turn: 1, tool: 'grep', tool_use_id: 't1', content: 'oops\nmore', is_error: true }),
      call(90, 'a', 1, 2),
      at(95, { type: 'turn_ended', agent: 'a', turn: 1, elapsed_ms: 85 }),
      at(99, { type: 'run_ended', status: 'success', exit_code: 0, reason: 'done', summary: '', outputs: {} }),
    ]);
    const [c1, tool, c2, turn, workflow] = spans;
    expect(spans.map((s) => s.name)).toEqual(['chat claude-haiku-4-5', 'execute_tool grep', 'chat claude-haiku-4-5', 'invoke_agent a', 'invoke_workflow w']);
    expect([c1!.startMs - T0, c1!.endMs - T0, c1!.attributes['conclave.rate_waited_ms']]).toEqual([10, 50, 12]);
    expect([c2!.startMs - T0, c2!.endMs - T0]).toEqual([70, 90]);
    expect(tool).toMatchObject({ parentSpanId: turn!.spanId, status: { code: 'error', message: 'oops' }, attributes: { 'error.type': 'tool_error' } });
    expect(turn!.parentSpanId).toBe(workflow!.spanId);
    expect(workflow).toMatchObject({ startMs: T0, endMs: T0 + 99, status: { code: 'ok' } });
    expect(c1!.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.response.finish_reasons': ['end_turn'],
      'gen_ai.provider.name': 'anthropic',
    });
    expect(c1!.attributes['gen_ai.input.messages']).toBeUndefined();
    // The same session gives the same ids; another run, others.
    expect(spansOf(header, []).at(-1)!.spanId).toBe(workflow!.spanId);
    expect(spansOf({ ...header, run_id: 'run-2' }, []).at(-1)!.traceId).not.toBe(workflow!.traceId);
  });

  it('a tool_use id a model uses twice gives two spans with ids of their own', () => {
    const spans = spansOf(header, [
      at(1, { type: 'run_started', workflow: 'w', limits: {} }),
      at(10, { type: 'turn_started', agent: 'a', turn: 1, through: 1, messages: [1] }),
      call(20, 'a', 1, 1),
      at(25, { type: 'tool_call', agent: 'a', turn: 1, tool: 'grep', tool_use_id: 'same', input: {} }),
      at(30, { type: 'tool_result', agent: 'a', turn: 1, tool: 'grep', tool_use_id: 'same', content: 'x', is_error: false }),
      call(40, 'a', 1, 2),
      at(45, { type: 'tool_call', agent: 'a', turn: 1, tool: 'grep', tool_use_id: 'same', input: {} }),
      at(50, { type: 'tool_result', agent: 'a', turn: 1, tool: 'grep', tool_use_id: 'same', content: 'y', is_error: false }),
      at(60, { type: 'turn_ended', agent: 'a', turn: 1, elapsed_ms: 50 }),
    ]);
    const tools = spans.filter((s) => s.name === 'execute_tool grep');
    expect(tools).toHaveLength(2);
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
  });

  it('end what a crash left open at the last time seen, as not finished; a failed call is an error', () => {
    const spans = spansOf(header, [
      at(10, { type: 'turn_started', agent: 'a', turn: 1, through: 1, messages: [] }),
      at(20, { type: 'call_failed', agent: 'a', turn: 1, step: 1, error: '529 overloaded', kind: 'outage', status: 529 }),
      at(40, { type: 'tool_call', agent: 'a', turn: 1, tool: 'grep', tool_use_id: 't2', input: {} }),
    ]);
    expect(spans.map((s) => [s.name, s.endMs - T0, s.status.code, s.attributes['error.type'] ?? null])).toEqual([
      ['chat unknown', 20, 'error', 'outage'],
      ['invoke_agent a', 40, 'error', null],
      ['execute_tool grep', 40, 'error', null],
      ['invoke_workflow', 40, 'unset', null],
    ]);
  });

  it('take the latest time for the events of a file from before at_ms', () => {
    const old = [
      { seq: 1, type: 'turn_started', agent: 'a', turn: 1, through: 0, messages: [] },
      { seq: 2, type: 'turn_ended', agent: 'a', turn: 1, elapsed_ms: 5 },
    ] as unknown as SessionEvent[];
    const [turn] = spansOf(header, old);
    expect([turn!.startMs, turn!.endMs]).toEqual([T0, T0]);
    expect(timelineOf(old)).toEqual([]);
  });
});

describe('every kind of span', () => {
  it('spawned agents, compactions, proposals and votes, failed turns and calls, content, a failed run', () => {
    seq = 0;
    const spans = spansOf(
      header,
      [
        at(1, { type: 'run_started', workflow: 'w', limits: {} }),
        at(2, { type: 'turn_started', agent: 'lead', turn: 1, through: 0, messages: [1, 2] }),
        call(3, 'lead', 1, 1, { provider: 'bedrock', cached: true, request: { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'go' }] } }),
        at(4, { type: 'agent_spawned', agent: 'r-1', template: 'r', role: 'worker', parent: 'lead', depth: 1 }),
        at(5, { type: 'tool_call', agent: 'lead', turn: 1, tool: 'read_file', tool_use_id: 'tu', input: { path: 'a' } }),
        at(6, { type: 'tool_result', agent: 'lead', turn: 1, tool: 'read_file', tool_use_id: 'tu', content: 'text of a', is_error: false }),
        at(7, {
          type: 'context_compacted',
          agent: 'lead',
          turn: 1,
          reason: 'threshold',
          tokens_before: 900,
          tokens_after: 300,
          cleared: 2,
          summary: null,
          left_out: 0,
        }),
        at(8, {
          type: 'proposal_opened',
          proposal: {
            id: 'p',
            proposer: 'lead',
            question: 'Q?',
            options: ['a', 'b'],
            voters: ['r-1'],
            rule: 'majority',
            quorum: 1,
            deadline_turns: null,
            opened_at_turn: 1,
          },
        }),
        at(9, { type: 'turn_ended', agent: 'lead', turn: 1, elapsed_ms: 7 }),
        at(10, { type: 'turn_started', agent: 'r-1', turn: 1, through: 0, messages: [3] }),
        at(11, { type: 'call_interrupted', agent: 'r-1', turn: 1, step: 1, cost_usd: 0.002 }),
        at(12, { type: 'context_exceeded', agent: 'r-1', turn: 1, step: 2, error: 'prompt is too long\nmore' }),
        at(13, { type: 'vote', proposal: 'p', voter: 'r-1', option: 'a', reason: 'r' }),
        at(14, { type: 'proposal_closed', proposal: 'p', status: 'decided', winner: 'a', reason: null }),
        at(15, { type: 'turn_failed', agent: 'r-1', turn: 1, error: 'boom\nstack' }),
        at(16, {
          type: 'run_ended',
          status: 'failure',
          exit_code: 1,
          reason: 'it broke\nhere',
          summary: '',
          outputs: {},
          usage: { calls: 2, usage: {}, costUsd: 0.5 },
        }),
      ],
      { content: true },
    );
    const named = Object.fromEntries(spans.map((s) => [s.name + (s.name.startsWith('chat') ? ` ${s.attributes['error.type'] ?? 'ok'}` : ''), s]));
    const workflow = named['invoke_workflow w']!;
    const lead = named['invoke_agent lead']!;
    const reviewer = named['invoke_agent r-1']!;
    expect(Object.keys(named).sort()).toEqual([
      'chat claude-haiku-4-5 ok',
      'chat unknown context_exceeded',
      'chat unknown interrupted',
      'execute_tool read_file',
      'invoke_agent lead',
      'invoke_agent r-1',
      'invoke_workflow w',
      'proposal p',
    ]);
    expect(workflow).toMatchObject({
      kind: 'internal',
      status: { code: 'error', message: 'it broke' },
      attributes: {
        'gen_ai.operation.name': 'invoke_workflow',
        'gen_ai.agent.name': 'w',
        'conclave.status': 'failure',
        'conclave.exit_code': 1,
        'conclave.cost_usd': 0.5,
        'error.type': 'failure',
      },
    });
    expect(lead).toMatchObject({
      parentSpanId: workflow.spanId,
      attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'lead', 'conclave.turn': 1, 'conclave.messages': 2 },
    });
    expect(lead.events.map((e) => [e.name, e.atMs - T0, e.attributes])).toEqual([
      ['agent_spawned', 4, { 'gen_ai.agent.name': 'r-1', 'conclave.template': 'r' }],
      ['context_compacted', 7, { 'conclave.reason': 'threshold', 'conclave.tokens_before': 900, 'conclave.tokens_after': 300, 'conclave.cleared': 2 }],
    ]);
    expect(reviewer).toMatchObject({ parentSpanId: lead.spanId, status: { code: 'error', message: 'boom' }, attributes: { 'error.type': 'turn_failed' } });
    expect(named['chat claude-haiku-4-5 ok']).toMatchObject({
      kind: 'client',
      parentSpanId: lead.spanId,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'aws.bedrock',
        'gen_ai.response.model': 'claude-haiku-4-5',
        'gen_ai.response.id': 'msg_1',
        'gen_ai.usage.output_tokens': 2,
        'gen_ai.usage.cache_read.input_tokens': 0,
        'gen_ai.usage.cache_creation.input_tokens': 0,
        'conclave.cached': true,
        'gen_ai.input.messages': '[{"role":"user","content":"go"}]',
        'gen_ai.output.messages': '[{"role":"assistant","content":[]}]',
      },
    });
    expect(named['chat unknown interrupted']).toMatchObject({
      parentSpanId: reviewer.spanId,
      status: { code: 'error', message: 'abandoned for a message that arrived' },
      attributes: { 'conclave.cost_usd': 0.002 },
    });
    expect(named['chat unknown context_exceeded']).toMatchObject({
      status: { code: 'error', message: 'prompt is too long' },
      startMs: T0 + 11,
      endMs: T0 + 12,
    });
    expect(named['execute_tool read_file']).toMatchObject({
      parentSpanId: lead.spanId,
      status: { code: 'unset' },
      attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.call.arguments': '{"path":"a"}', 'gen_ai.tool.call.result': 'text of a' },
    });
    expect(named['proposal p']).toMatchObject({
      parentSpanId: workflow.spanId,
      startMs: T0 + 8,
      endMs: T0 + 14,
      attributes: {
        'conclave.proposal.question': 'Q?',
        'conclave.proposal.options': ['a', 'b'],
        'conclave.proposal.status': 'decided',
        'conclave.proposal.winner': 'a',
      },
    });
    expect(named['proposal p']!.events.map((e) => [e.name, e.attributes])).toEqual([['vote', { 'gen_ai.agent.name': 'r-1', 'conclave.option': 'a' }]]);
    // Ids: 16 and 32 hex digits, all different, the same for the same session.
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
    expect(spans.every((s) => /^[0-9a-f]{16}$/.test(s.spanId) && /^[0-9a-f]{32}$/.test(s.traceId))).toBe(true);
  });

  it('cuts a long first line of an error to 300 characters', () => {
    seq = 0;
    const [turn] = spansOf(header, [
      at(1, { type: 'turn_started', agent: 'a', turn: 1, through: 0, messages: [] }),
      at(2, { type: 'turn_failed', agent: 'a', turn: 1, error: 'x'.repeat(400) }),
    ]);
    expect(turn!.status.message).toBe(`${'x'.repeat(299)}…`);
  });
});

describe('the timeline', () => {
  it('has a bar per turn and per wait, in the order agents first worked; a failed turn marked', () => {
    seq = 0;
    expect(
      timelineOf([
        at(10, { type: 'turn_started', agent: 'b', turn: 1 }),
        at(20, { type: 'turn_started', agent: 'a', turn: 1 }),
        at(25, { type: 'rate_waited', agent: 'a', turn: 1, step: 1, waited_ms: 4, reason: 'input_tokens' }),
        at(30, { type: 'turn_ended', agent: 'b', turn: 1 }),
        at(40, { type: 'turn_failed', agent: 'a', turn: 1, error: 'x' }),
      ]).map((r) => [r.agent, r.bars.map((b) => `${b.label} ${b.kind} ${b.startMs - T0}-${b.endMs - T0}`)]),
    ).toEqual([
      ['b', ['turn 1 turn 10-30']],
      ['a', ['turn 1 failed 20-40', 'wait input tokens wait 21-25']],
    ]);
  });
});
