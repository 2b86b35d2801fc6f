import { describe, expect, it } from 'vitest';
import type { SessionEvent, SessionHeader } from '../../src/session/format.js';
import { spansOf } from '../../src/trace/spans.js';
import { timelineOf } from '../../src/session/timeline.js';

const header = { type: 'header', format: 1, run_id: 'run-1', conclave_version: '0.1.0', workflow: { path: 'w.yml', sha256: 'x' }, inputs: {}, session: 's', started_at: '2026-11-23T10:00:00.000Z' } as SessionHeader;
const T0 = Date.parse(header.started_at);
let seq = 0;
const at = (ms: number, e: object) => ({ seq: ++seq, at_ms: T0 + ms, ...e }) as unknown as SessionEvent;
const call = (ms: number, agent: string, turn: number, step: number, extra: object = {}) =>
  at(ms, { type: 'model_call', agent, turn, step, request: step === 1 ? { model: 'claude-haiku-4-5' } : {}, request_sha256: 'h', response: { id: `msg_${step}`, model: 'claude-haiku-4-5', content: [], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } }, cost_usd: 0.01, ...extra });

describe('spans from a session', () => {
  it('nest a turn under the run and a call under its turn, the call from the turn\'s previous step to its answer', () => {
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
    expect(c1!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 10, 'gen_ai.response.finish_reasons': ['end_turn'], 'gen_ai.provider.name': 'anthropic' });
    expect(c1!.attributes['gen_ai.input.messages']).toBeUndefined();
    // The same session gives the same ids; another run, others.
    expect(spansOf(header, []).at(-1)!.spanId).toBe(workflow!.spanId);
    expect(spansOf({ ...header, run_id: 'run-2' }, []).at(-1)!.traceId).not.toBe(workflow!.traceId);
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
    const old = [{ seq: 1, type: 'turn_started', agent: 'a', turn: 1, through: 0, messages: [] }, { seq: 2, type: 'turn_ended', agent: 'a', turn: 1, elapsed_ms: 5 }] as unknown as SessionEvent[];
    const [turn] = spansOf(header, old);
    expect([turn!.startMs, turn!.endMs]).toEqual([T0, T0]);
    expect(timelineOf(old)).toEqual([]);
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
