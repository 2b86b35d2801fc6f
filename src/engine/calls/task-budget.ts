import type { ModelRequest } from '../../provider/client.js';
import type { ControlledRequest } from '../../provider/api-controls.js';

/** The smallest task budget the API takes. */
export const MIN_TASK_BUDGET = 20_000;

type TaskBudget = { type: 'tokens'; total: number; remaining: number };

/**
 * `task_budget: auto` (docs/api-controls.md): each live call of the agent tells the model how many
 * tokens are left to it, from what the run's limits leave (engine/ceilings/accounting.ts); the
 * total is the most it was ever told. What is left depends on what the other agents spent in the
 * meantime, so a recorded call is told what it was told then: resume and replay send the same.
 */
export class TaskBudgets {
  private readonly totals = new Map<string, number>();

  /** `left(agent, request)`: the tokens the run's limits (and the agent's own budget_usd) leave it, undefined when they leave no finite number. */
  constructor(private readonly left: (agent: string, request: ModelRequest) => number | undefined) {}

  /** A live call's request, told what is left. */
  told(agent: string, request: ModelRequest): ModelRequest {
    const remaining = this.left(agent, request);
    if (remaining === undefined) return request;
    const total = Math.max(this.totals.get(agent) ?? MIN_TASK_BUDGET, remaining);
    this.totals.set(agent, total);
    return withBudget(request, { type: 'tokens', total, remaining });
  }

  /**
   * A recorded call's request, told what the recorded call was told. A recording told nothing (made
   * before `task_budget: auto` was set) is told what is left now, so that the replay names the change.
   */
  asRecorded(agent: string, request: ModelRequest, recorded: unknown): ModelRequest {
    const budget = (recorded as ControlledRequest | null)?.output_config?.task_budget;
    if (!isBudget(budget)) return this.told(agent, request);
    this.totals.set(agent, Math.max(this.totals.get(agent) ?? MIN_TASK_BUDGET, budget.total));
    return withBudget(request, budget);
  }
}

function withBudget(request: ModelRequest, budget: TaskBudget): ModelRequest {
  const config = (request as ControlledRequest).output_config;
  return { ...request, output_config: { ...config, task_budget: budget } } as ModelRequest;
}

function isBudget(v: unknown): v is TaskBudget {
  if (v === null || typeof v !== 'object') return false;
  const { type, total, remaining } = v as Record<string, unknown>;
  const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  return type === 'tokens' && count(total) && count(remaining) && (remaining as number) <= (total as number);
}
