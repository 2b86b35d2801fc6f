import { describe, expect, it } from 'vitest';
import {
  answeredBy,
  betasOf,
  COMPACTION_BETA,
  countedOf,
  FALLBACK_DEFAULT_BETA,
  FALLBACK_LIST_BETA,
  FAST_MODE_BETA,
  refusalDetails,
  speedOf,
  TASK_BUDGET_BETA,
} from '../../src/provider/api-controls.js';
import type { ModelRequest, ModelResponse } from '../../src/provider/messages.js';
import { MIN_TASK_BUDGET, TaskBudgets } from '../../src/engine/calls/task-budget.js';
import { Accounting } from '../../src/engine/ceilings/accounting.js';
import type { Limits } from '../../src/workflow/limits.js';

const base = { model: 'claude-fable-5', max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
const req = (extra: Record<string, unknown> = {}) => ({ ...base, ...extra }) as unknown as ModelRequest;
const res = (extra: Record<string, unknown>) =>
  ({ content: [], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 }, ...extra }) as unknown as ModelResponse;

describe('the beta headers a request needs', () => {
  it('none for a plain request; each control its own, in a fixed order', () => {
    expect(betasOf(req())).toEqual([]);
    expect(betasOf(req({ fallbacks: [{ model: 'claude-opus-5' }] }))).toEqual([FALLBACK_LIST_BETA]);
    expect(betasOf(req({ fallbacks: 'default' }))).toEqual([FALLBACK_DEFAULT_BETA]);
    expect(betasOf(req({ output_config: { effort: 'high' } }))).toEqual([]);
    expect(betasOf(req({ output_config: { task_budget: { type: 'tokens', total: 20_000 } } }))).toEqual([TASK_BUDGET_BETA]);
    expect(betasOf(req({ compaction: { type: 'summarize' } }))).toEqual([COMPACTION_BETA]);
    expect(betasOf(req({ speed: 'standard' }))).toEqual([]);
    expect(betasOf(req({ speed: 'fast' }))).toEqual([FAST_MODE_BETA]);
    expect(
      betasOf(req({ speed: 'fast', compaction: { type: 'summarize' }, fallbacks: 'default', output_config: { task_budget: { type: 'tokens', total: 1 } } })),
    ).toEqual([FALLBACK_DEFAULT_BETA, TASK_BUDGET_BETA, COMPACTION_BETA, FAST_MODE_BETA]);
  });

  it('a token count is sent without the controls, its effort kept', () => {
    const counted = countedOf(
      req({
        fallbacks: 'default',
        speed: 'fast',
        compaction: { type: 'summarize' },
        output_config: { effort: 'low', task_budget: { type: 'tokens', total: 1 } },
      }),
    );
    expect(counted).toEqual({ ...base, output_config: { effort: 'low' } });
    expect(countedOf(req({ output_config: { task_budget: { type: 'tokens', total: 1 } } }))).toEqual(base);
    const plain = req({ output_config: { effort: 'high' } });
    expect(countedOf(plain)).toEqual(plain);
  });
});

describe('what an answer says of the controls', () => {
  it('the model a fallback answered with: only when the request named fallbacks and another model answered', () => {
    expect(answeredBy(req({ fallbacks: [{ model: 'claude-opus-5' }] }), res({ model: 'claude-opus-5' }))).toBe('claude-opus-5');
    expect(answeredBy(req({ fallbacks: 'default' }), res({ model: 'claude-opus-5' }))).toBe('claude-opus-5');
    expect(answeredBy(req({ fallbacks: 'default' }), res({ model: 'claude-fable-5' }))).toBeUndefined();
    // Without fallbacks, a cloud's own name of the model is no fallback.
    expect(answeredBy(req(), res({ model: 'anthropic.claude-fable-5' }))).toBeUndefined();
    for (const hostile of [undefined, null, 7, '', { name: 'x' }]) expect(answeredBy(req({ fallbacks: 'default' }), res({ model: hostile }))).toBeUndefined();
  });

  it("a refusal's category and recommended model; anything not a short name on one line is none", () => {
    const of = (details: unknown) => refusalDetails(res({ stop_reason: 'refusal', stop_details: details }));
    expect(of({ type: 'refusal', category: 'cyber', recommended_model: 'claude-opus-5' })).toEqual({ category: 'cyber', recommended: 'claude-opus-5' });
    expect(of({ category: null, recommended_model: null })).toEqual({ category: null, recommended: null });
    expect(of(undefined)).toEqual({ category: null, recommended: null });
    expect(of(null)).toEqual({ category: null, recommended: null });
    expect(of('cyber')).toEqual({ category: null, recommended: null });
    expect(of({ category: 'a\nb', recommended_model: 'x'.repeat(101) })).toEqual({ category: null, recommended: null });
    expect(of({ category: 12, recommended_model: ['claude'] })).toEqual({ category: null, recommended: null });
  });

  it('the speed a call ran at: fast only when its usage says so', () => {
    expect(speedOf(res({ usage: { input_tokens: 1, output_tokens: 1, speed: 'fast' } }))).toBe('fast');
    expect(speedOf(res({ usage: { input_tokens: 1, output_tokens: 1, speed: 'standard' } }))).toBe('standard');
    expect(speedOf(res({ usage: { input_tokens: 1, output_tokens: 1 } }))).toBe('standard');
    expect(speedOf(res({ usage: undefined }))).toBe('standard');
  });
});

describe('task budgets', () => {
  it("a live call is told what is left, the total the most ever told (at least the API's least); nothing when no limit is finite", () => {
    let left: number | undefined = 50_000;
    const budgets = new TaskBudgets(() => left);
    const told = (agent: string) => (budgets.told(agent, req({ output_config: { effort: 'low' } })) as { output_config?: unknown }).output_config;
    expect(told('a')).toEqual({ effort: 'low', task_budget: { type: 'tokens', total: 50_000, remaining: 50_000 } });
    left = 30_000;
    expect(told('a')).toEqual({ effort: 'low', task_budget: { type: 'tokens', total: 50_000, remaining: 30_000 } });
    // Another agent has its own total.
    expect(told('b')).toEqual({ effort: 'low', task_budget: { type: 'tokens', total: 30_000, remaining: 30_000 } });
    left = 5;
    expect(told('c')).toEqual({ effort: 'low', task_budget: { type: 'tokens', total: MIN_TASK_BUDGET, remaining: 5 } });
    left = undefined;
    expect(told('a')).toEqual({ effort: 'low' });
  });

  it('a recorded call is told what it was told; a recording with no budget is told what is left now, so that a replay names the change', () => {
    const budgets = new TaskBudgets(() => 10);
    const recorded = (budget: unknown) => ({ output_config: { task_budget: budget } });
    const as = (budget: unknown) => (budgets.asRecorded('a', req(), recorded(budget)) as { output_config?: unknown }).output_config;
    // Nothing left, and all of it left, are budgets too.
    expect(as({ type: 'tokens', total: 30_000, remaining: 0 })).toEqual({ task_budget: { type: 'tokens', total: 30_000, remaining: 0 } });
    expect(as({ type: 'tokens', total: 50_000, remaining: 50_000 })).toEqual({ task_budget: { type: 'tokens', total: 50_000, remaining: 50_000 } });
    expect(as({ type: 'tokens', total: 90_000, remaining: 70_000 })).toEqual({ task_budget: { type: 'tokens', total: 90_000, remaining: 70_000 } });
    // The recorded total carries on to the live calls after it.
    expect((budgets.told('a', req()) as { output_config?: unknown }).output_config).toEqual({ task_budget: { type: 'tokens', total: 90_000, remaining: 10 } });
    for (const hostile of [
      undefined,
      null,
      'auto',
      { type: 'usd', total: 1, remaining: 1 },
      { type: 'tokens', total: -1, remaining: 0 },
      { type: 'tokens', total: 10, remaining: -1 },
      { type: 'tokens', total: 10, remaining: 11 },
      { type: 'tokens', total: 1.5, remaining: 1 },
      { type: 'tokens', total: 10 },
    ])
      expect(as(hostile)).toEqual({ task_budget: { type: 'tokens', total: 90_000, remaining: 10 } });
    expect((budgets.asRecorded('b', req(), null) as { output_config?: unknown }).output_config).toEqual({
      task_budget: { type: 'tokens', total: MIN_TASK_BUDGET, remaining: 10 },
    });
    expect((budgets.asRecorded('c', req(), {}) as { output_config?: unknown }).output_config).toEqual({
      task_budget: { type: 'tokens', total: MIN_TASK_BUDGET, remaining: 10 },
    });
  });

  it("what the run's limits leave, in tokens at the model's output price", () => {
    let limits = { budgetUsd: 2, maxTokensTotal: 1_000_000 } as Limits;
    const accounting = new Accounting(() => limits);
    // $2 at Opus 5's $25 a million output tokens.
    expect(accounting.tokensLeft('claude-opus-5')).toBe(80_000);
    accounting.record('a', 'claude-opus-5', { input_tokens: 0, output_tokens: 40_000, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }, true);
    expect(accounting.tokensLeft('claude-opus-5')).toBe(40_000);
    limits = { budgetUsd: 100, maxTokensTotal: 45_000 } as Limits;
    expect(accounting.tokensLeft('claude-opus-5')).toBe(5_000);
    limits = { budgetUsd: 0.5, maxTokensTotal: 1_000_000 } as Limits;
    expect(accounting.tokensLeft('claude-opus-5')).toBe(0);
    limits = { budgetUsd: Number.POSITIVE_INFINITY, maxTokensTotal: Number.POSITIVE_INFINITY } as Limits;
    expect(accounting.tokensLeft('claude-opus-5')).toBeUndefined();
  });
});
