import { addUsage, costOf, NO_USAGE, priceOf, totalTokens, type Price, type TokenUsage } from '../provider/pricing.js';
import type { Limits } from '../workflow/limits.js';

export interface Spend {
  calls: number;
  usage: TokenUsage;
  costUsd: number;
}

const NOTHING: Spend = { calls: 0, usage: NO_USAGE, costUsd: 0 };

/** Token usage and estimated cost, per agent and for the run, against the run's budget. */
export class Accounting {
  private readonly agents = new Map<string, Spend>();
  private all: Spend = NOTHING;
  private readonly unpriced = new Set<string>();

  constructor(
    private readonly limits: Limits,
    private readonly pricing: Readonly<Record<string, Price>> = {},
    /** Told once per model that the price table does not know. */
    private readonly onUnknownModel: (model: string) => void = () => {},
  ) {}

  record(agent: string, model: string, usage: TokenUsage): Spend {
    const { price, known } = priceOf(model, this.pricing);
    if (!known && !this.unpriced.has(model)) {
      this.unpriced.add(model);
      this.onUnknownModel(model);
    }
    const call: Spend = { calls: 1, usage, costUsd: costOf(usage, price) };
    this.agents.set(agent, add(this.agents.get(agent) ?? NOTHING, call));
    this.all = add(this.all, call);
    return call;
  }

  get total(): Spend {
    return this.all;
  }

  of(agent: string): Spend {
    return this.agents.get(agent) ?? NOTHING;
  }

  /** The spending limit that has been reached, if any. */
  exceeded(): { limit: 'budget_usd' | 'max_tokens_total'; detail: string } | undefined {
    if (this.all.costUsd >= this.limits.budgetUsd) {
      return { limit: 'budget_usd', detail: `spent $${this.all.costUsd.toFixed(4)} of $${this.limits.budgetUsd.toFixed(2)}` };
    }
    const tokens = totalTokens(this.all.usage);
    if (tokens >= this.limits.maxTokensTotal) return { limit: 'max_tokens_total', detail: `${tokens} of ${this.limits.maxTokensTotal} tokens` };
    return undefined;
  }
}

function add(a: Spend, b: Spend): Spend {
  return { calls: a.calls + b.calls, usage: addUsage(a.usage, b.usage), costUsd: a.costUsd + b.costUsd };
}
