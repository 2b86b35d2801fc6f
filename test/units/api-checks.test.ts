import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { batchOnCloud, batchProblems, fallbackProblems, fallbacksAt, usesBatches } from '../../src/workflow/api-checks.js';
import { WorkflowSource } from '../../src/workflow/source.js';
import type { WorkflowSpec } from '../../src/workflow/types.js';
import { Journal } from '../../src/engine/replay/journal.js';
import { Accounting } from '../../src/engine/ceilings/accounting.js';
import { AnsweredCalls } from '../../src/engine/calls/answered-calls.js';
import type { Limits } from '../../src/workflow/limits.js';
import type { ModelRequest, ModelResponse } from '../../src/provider/messages.js';

/** The diagnostics of `text` as `check` gives them, each `line: message`. */
function problems(text: string, check: (source: WorkflowSource, spec: WorkflowSpec) => { line: number; message: string }[]): string[] {
  const source = new WorkflowSource('w.yml', text);
  return check(source, parse(text) as WorkflowSpec).map((d) => `${d.line}: ${d.message}`);
}

const TEAM = (extra: string) => `name: t\n${extra}\nagents:\n  lead: { role: manager }\n  w: { role: worker }\nkickoff: Go.\n`;

describe('what the API takes where calls go (workflow/api-checks.ts)', () => {
  it('fallbacks: each agent with them on a cloud, in a batch or naming its own model, at the line they are written', () => {
    expect(problems(TEAM('defaults: { fallbacks: [claude-opus-5] }'), fallbackProblems)).toEqual([]);
    expect(problems(TEAM('provider: vertex\ndefaults: { fallbacks: default }'), fallbackProblems)).toEqual([
      "3: agents.lead has fallbacks, but its provider is vertex: server-side fallback is Anthropic's API's own",
      "3: agents.w has fallbacks, but its provider is vertex: server-side fallback is Anthropic's API's own",
    ]);
    // --provider wins over the file's.
    expect(problems(TEAM('defaults: { fallbacks: default }'), (s, spec) => fallbackProblems(s, spec, 'bedrock'))).toHaveLength(2);
    const own = `name: t\nagents:\n  lead: { role: manager, model: claude-opus-5, fallbacks: [claude-opus-5] }\n  w: { role: worker, batch: true, fallbacks: default }\nkickoff: Go.\n`;
    expect(problems(own, fallbackProblems)).toEqual([
      "3: agents.lead's fallbacks name its own model claude-opus-5: a fallback is another model",
      '4: agents.w has fallbacks and batch: true: the Message Batches API does not take fallbacks; leave one of them out',
    ]);
    // The default model counts as the agent's own.
    const byDefault = `name: t\nagents:\n  lead: { role: manager, fallbacks: [claude-sonnet-5-5] }\nkickoff: Go.\n`;
    expect(problems(byDefault, fallbackProblems)).toEqual(["3: agents.lead's fallbacks name its own model claude-sonnet-5-5: a fallback is another model"]);
    const template = `name: t\nagents:\n  lead: { role: manager, spawns: [t] }\ntemplates:\n  t: { provider: foundry, fallbacks: [claude-opus-5] }\nkickoff: Go.\n`;
    expect(problems(template, fallbackProblems)).toEqual([
      "5: templates.t has fallbacks, but its provider is foundry: server-side fallback is Anthropic's API's own",
    ]);
  });

  it('where fallbacks are named first, and whether any agent batches', () => {
    const spec = (text: string) => parse(text) as WorkflowSpec;
    expect(fallbacksAt(spec(TEAM('')))).toBeUndefined();
    expect(fallbacksAt(spec(TEAM('defaults: { fallbacks: default }')))).toBe('defaults.fallbacks');
    expect(fallbacksAt(spec(`name: t\nagents:\n  lead: { role: manager }\ntemplates:\n  t: { fallbacks: default }\nkickoff: Go.\n`))).toBe(
      'templates.t.fallbacks',
    );
    expect(fallbacksAt(spec(`name: t\nagents:\n  lead: { role: manager, fallbacks: [a] }\nkickoff: Go.\n`))).toBe('agents.lead.fallbacks');
    expect(usesBatches(spec(TEAM('')))).toBe(false);
    expect(usesBatches(spec(TEAM('defaults: { batch: true }')))).toBe(true);
    expect(usesBatches(spec(`name: t\nagents:\n  lead: { role: manager, batch: true }\nkickoff: Go.\n`))).toBe(true);
    expect(usesBatches(spec(`name: t\ndefaults: { batch: true }\nagents:\n  lead: { role: manager, batch: false }\nkickoff: Go.\n`))).toBe(false);
  });

  it('batch: true on a cloud, at the line the batch setting is written', () => {
    const spec = (text: string) => parse(text) as WorkflowSpec;
    expect(batchOnCloud(spec(TEAM('defaults: { batch: true }')))).toEqual([]);
    expect(batchOnCloud(spec(TEAM('provider: bedrock\ndefaults: { batch: true }')))).toEqual([
      { path: ['defaults', 'batch'], provider: 'bedrock' },
      { path: ['defaults', 'batch'], provider: 'bedrock' },
    ]);
    expect(batchOnCloud(spec(`name: t\nagents:\n  lead: { role: manager, batch: true, provider: vertex }\nkickoff: Go.\n`), undefined)).toEqual([
      { path: ['agents', 'lead', 'batch'], provider: 'vertex' },
    ]);
    expect(batchOnCloud(spec(TEAM('defaults: { batch: true }')), 'foundry')).toHaveLength(2);
    expect(problems(TEAM('provider: bedrock\ndefaults: { batch: true }'), batchProblems)[0]).toBe(
      "3: defaults sends its calls as a message batch (batch: true), but its provider is bedrock: only Anthropic's API has the Message Batches " +
        'API here; use provider: anthropic for it, or batch: false',
    );
    expect(problems(TEAM('defaults: { batch: true }'), (s, sp) => batchProblems(s, sp, 'vertex'))[0]).toContain(
      "but --provider vertex: only Anthropic's API has the Message Batches API here; leave --provider out for this workflow, or batch: false",
    );
  });
});

describe('each answer recorded (engine/calls/answered-calls.ts)', () => {
  const request = (extra: Record<string, unknown> = {}) =>
    ({ model: 'claude-fable-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra }) as unknown as ModelRequest;
  const response = (model: string) =>
    ({
      id: 'm',
      model,
      content: [{ type: 'text', text: 'ok' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 1_000_000, output_tokens: 0 },
    }) as unknown as ModelResponse;
  const setup = () => {
    const written: Record<string, unknown>[] = [];
    const journal = new Journal({ write: (e) => void written.push(e as Record<string, unknown>), sync: () => {}, lineOf: (e) => JSON.stringify(e) }, []);
    const accounting = new Accounting(() => ({ budgetUsd: 1000, maxTokensTotal: 1e12 }) as Limits);
    return { written, accounting, answers: new AnsweredCalls(journal, accounting) };
  };

  it('a fallback answer: recorded as answered_by, priced as the model that answered, counted per agent and model', () => {
    const { written, answers } = setup();
    const fallbacks = { fallbacks: [{ model: 'claude-opus-5' }] };
    // A million input tokens: Fable 5 $10, Opus 5 $5.
    expect(answers.record('a', 1, 1, request(fallbacks), 'h', response('claude-opus-5'), false, true, 'anthropic').costUsd).toBeCloseTo(5, 9);
    expect(answers.record('a', 1, 2, request(fallbacks), 'h', response('claude-fable-5'), false, true, 'anthropic').costUsd).toBeCloseTo(10, 9);
    answers.record('b', 1, 1, request(fallbacks), 'h', response('claude-opus-5'), false, true, 'anthropic');
    answers.record('a', 2, 1, request(fallbacks), 'h', response('claude-opus-5'), false, true, 'anthropic');
    expect(written.map((e) => e.answered_by)).toEqual(['claude-opus-5', undefined, 'claude-opus-5', 'claude-opus-5']);
    expect(answers.fallbackAnswers).toEqual([
      { agent: 'a', model: 'claude-opus-5', calls: 2 },
      { agent: 'b', model: 'claude-opus-5', calls: 1 },
    ]);
    expect(answers.lastCostOf('a')).toBeCloseTo(5, 9);
    expect(answers.lastCostOf('nobody')).toBe(0);
  });

  it('a cached answer costs nothing; a batched one is half; fast mode six times; a cloud named; the last cost follows', () => {
    const { written, answers, accounting } = setup();
    expect(answers.record('a', 1, 1, request(), 'h', response('claude-fable-5'), true, false, 'anthropic').costUsd).toBe(0);
    expect(answers.lastCostOf('a')).toBe(0);
    expect(accounting.cached.calls).toBe(1);
    expect(answers.record('a', 1, 2, request(), 'h', response('claude-fable-5'), false, true, 'anthropic', 'batch-1').costUsd).toBeCloseTo(5, 9);
    const fast = { ...response('claude-fable-5'), usage: { input_tokens: 1_000_000, output_tokens: 0, speed: 'fast' } } as unknown as ModelResponse;
    expect(answers.record('a', 1, 3, request(), 'h', fast, false, true, 'bedrock').costUsd).toBeCloseTo(60, 6);
    expect(answers.lastCostOf('a')).toBeCloseTo(60, 6);
    expect(written.map((e) => [e.type, e.cached, e.batch, e.provider, e.request_sha256])).toEqual([
      ['model_call', true, undefined, undefined, 'h'],
      ['model_call', undefined, 'batch-1', undefined, 'h'],
      ['model_call', undefined, undefined, 'bedrock', 'h'],
    ]);
    expect(answers.fallbackAnswers).toEqual([]);
  });
});
