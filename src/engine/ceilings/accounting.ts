import { regionalPremium, scaledPrice, type ProviderName } from '../../provider/clouds.js';
import type { CacheTtl } from '../../workflow/types.js';
import type { ModelRequest } from '../../provider/messages.js';
import type { ControlledRequest } from '../../provider/api-controls.js';
import {
  addUsage,
  cacheSavingUsd,
  costOf,
  NO_USAGE,
  priceAtTtl,
  priceOf,
  totalTokens,
  worstCaseCost,
  type Price,
  type TokenUsage,
  BATCH_PRICE,
  FAST_PRICE,
} from '../../provider/pricing.js';
import { HIGHEST_PRICE } from '../../provider/models.js';
import type { Limits } from '../../workflow/limits.js';
import { LimitReached } from '../ending.js';
import { formatUsd } from '../../provider/money.js';
import { LocalCeiling, type Ceiling, type Worst } from './reservation.js';

export interface Spend {
  calls: number;
  usage: TokenUsage;
  costUsd: number;
}

/** What the prompt cache read and wrote, in tokens, and what it saved against the same calls with no cache. */
export interface PromptCacheUse {
  read_tokens: number;
  written_tokens: number;
  saved_usd: number;
}

/**
 * The calls batches answered and what the batch price saved against the same calls one by one;
 * with the calls still waiting for a batch when the run stopped (parked), and the most they can
 * cost, which their reservations hold.
 */
export interface BatchUse {
  calls: number;
  saved_usd: number;
  waiting_calls?: number;
  reserved_usd?: number;
}

const NOTHING: Spend = { calls: 0, usage: NO_USAGE, costUsd: 0 };

/** What a run's calls are priced by, besides the models' list prices. */
export interface PriceSettings {
  /** The workflow's `pricing:`. */
  pricing?: Readonly<Record<string, Price>>;
  /** Told once per model that the price table does not know. */
  onUnknownModel?: (model: string) => void;
  /** Vertex's region (`CLOUD_ML_REGION`): a regional endpoint costs more than the global one. */
  vertexRegion?: string;
  /** How long the run's prompt cache writes are kept: an hour's cost more. */
  cacheTtl?: CacheTtl;
}

/**
 * Token usage and estimated cost, per agent and for the run, against the run's budget. The
 * budget is a ceiling (docs/design.md: limits), held as every ceiling is (`reservation.ts`): a
 * live call starts only while what was spent plus the worst case of every call in flight, its own
 * included, fits; otherwise it waits for the calls in flight, and when none is left the run stops
 * at the limit.
 */
export class Accounting {
  private readonly agents = new Map<string, Spend>();
  private all: Spend = NOTHING;
  private readonly unpriced = new Set<string>();
  /** The run's budget_usd and max_tokens_total, as a ceiling every live call holds its worst case under. */
  readonly ceiling: Ceiling = { hold: (worst) => this.budget.hold(worst, (w) => this.limitReached(w)) };
  private readonly budget = new LocalCeiling((held) => this.fits(held));

  private readonly pricing: Readonly<Record<string, Price>>;
  private readonly onUnknownModel: (model: string) => void;
  private readonly vertexRegion: string | undefined;
  private readonly cacheTtl: CacheTtl;

  constructor(
    private readonly limits: () => Limits,
    prices: PriceSettings = {},
  ) {
    this.pricing = prices.pricing ?? {};
    this.onUnknownModel = prices.onUnknownModel ?? (() => {});
    this.vertexRegion = prices.vertexRegion;
    this.cacheTtl = prices.cacheTtl ?? '5m';
  }

  /**
   * The price of a model on a provider (docs/providers.md: prices), warning once about a model the
   * table does not know. A price the workflow gives is the price paid, wherever.
   */
  priceOf(model: string, provider: ProviderName = 'anthropic', batch = false): Price {
    const { price, known, given } = priceOf(model, this.pricing);
    if (!known && !this.unpriced.has(model)) {
      this.unpriced.add(model);
      this.onUnknownModel(model);
    }
    const paid = priceAtTtl(given ? price : scaledPrice(price, regionalPremium(provider, model, this.vertexRegion)), this.cacheTtl);
    return batch ? scaledPrice(paid, BATCH_PRICE) : paid;
  }

  /** What a call could cost at most: `inputTokens` (an estimate that is never low) and `maxTokens`, at the model's price. */
  worstOf(model: string, inputTokens: number, maxTokens: number, provider: ProviderName = 'anthropic', batch = false, fast = false): Worst {
    return worstAt(this.priceOf(model, provider, batch), inputTokens, maxTokens, fast);
  }

  /**
   * What a request could cost at most: at its model's price, or a named fallback's when dearer
   * (a fallback that answers is paid as itself, docs/api-controls.md), in fast mode when it asks
   * for it. With `fallbacks: default` the API's choice is known only from the answer: the call is
   * held as one of a model the price table does not know, at the highest price.
   */
  worstOfCall(request: ModelRequest, inputTokens: number, provider: ProviderName = 'anthropic', batch = false): Worst {
    const { speed, fallbacks } = request as ModelRequest & ControlledRequest;
    const fast = speed === 'fast';
    const models = [request.model, ...(Array.isArray(fallbacks) ? fallbacks.map((f) => f.model) : [])];
    const worsts = models.map((model) => this.worstOf(model, inputTokens, request.max_tokens, provider, batch, fast));
    if (fallbacks === 'default') {
      const highest = priceAtTtl(HIGHEST_PRICE, this.cacheTtl);
      worsts.push(worstAt(batch ? scaledPrice(highest, BATCH_PRICE) : highest, inputTokens, request.max_tokens, fast));
    }
    return worsts.reduce((a, b) => (b.usd > a.usd ? b : a));
  }

  /** What live calls of this process cost: a resume or replay pays nothing for what was recorded. */
  paidUsd = 0;

  /** What the prompt cache read and wrote over the run, and what that saved against no cache. */
  promptCache: PromptCacheUse = { read_tokens: 0, written_tokens: 0, saved_usd: 0 };

  /** Calls answered through the Message Batches API, and what the batch price saved against the same calls made one by one. */
  batched: BatchUse = { calls: 0, saved_usd: 0 };

  /** Answers the response cache gave: their tokens, which cost nothing and count against no limit. */
  cached: { calls: number; tokens: number } = { calls: 0, tokens: 0 };

  recordCached(usage: TokenUsage): void {
    this.cached = { calls: this.cached.calls + 1, tokens: this.cached.tokens + totalTokens(usage) };
  }

  /** A call's usage and cost; `fast`, a call its usage says ran in fast mode, priced as fast mode is. */
  record(agent: string, model: string, usage: TokenUsage, live: boolean, provider: ProviderName = 'anthropic', batch = false, fast = false): Spend {
    const price = scaledPrice(this.priceOf(model, provider, batch), fast ? FAST_PRICE : 1);
    const call: Spend = { calls: 1, usage, costUsd: costOf(usage, price) };
    if (live) this.paidUsd += call.costUsd;
    if (batch)
      this.batched = { calls: this.batched.calls + 1, saved_usd: this.batched.saved_usd + costOf(usage, this.priceOf(model, provider)) - call.costUsd };
    this.promptCache = {
      read_tokens: this.promptCache.read_tokens + usage.cache_read_input_tokens,
      written_tokens: this.promptCache.written_tokens + usage.cache_creation_input_tokens,
      saved_usd: this.promptCache.saved_usd + cacheSavingUsd(usage, price),
    };
    this.agents.set(agent, add(this.agents.get(agent) ?? NOTHING, call));
    this.all = add(this.all, call);
    return call;
  }

  /** A call given up after its request left: its prompt, estimated, counted as paid (docs/session-format.md: call_abandoned). */
  recordAbandoned(agent: string, inputTokens: number, costUsd: number, live: boolean): void {
    const call: Spend = { calls: 1, usage: { ...NOTHING.usage, input_tokens: inputTokens }, costUsd };
    if (live) this.paidUsd += costUsd;
    this.agents.set(agent, add(this.agents.get(agent) ?? NOTHING, call));
    this.all = add(this.all, call);
  }

  get total(): Spend {
    return this.all;
  }

  /** What the run spent, paid and read from caches: for its result. */
  get totals(): { total: Spend; paidUsd: number; cached: { calls: number; tokens: number }; promptCache: PromptCacheUse } {
    return { total: this.all, paidUsd: this.paidUsd, cached: this.cached, promptCache: this.promptCache };
  }

  /**
   * The tokens the run's limits leave, each counted at `model`'s output price (the dearest kind of
   * token): what a task budget tells the model (engine/calls/task-budget.ts); `ownUsdLeft`, what a
   * spawned agent's own budget_usd leaves it, when that is less. Undefined when no limit gives a
   * finite number.
   */
  tokensLeft(model: string, provider: ProviderName = 'anthropic', batch = false, ownUsdLeft = Number.POSITIVE_INFINITY): number | undefined {
    const { budgetUsd, maxTokensTotal } = this.limits();
    const perToken = this.priceOf(model, provider, batch).output / 1_000_000;
    const usdLeft = Math.min(budgetUsd - this.all.costUsd, ownUsdLeft);
    const byUsd = perToken > 0 ? usdLeft / perToken : Number.POSITIVE_INFINITY;
    const left = Math.min(byUsd, maxTokensTotal - totalTokens(this.all.usage));
    return Number.isFinite(left) ? Math.max(0, Math.floor(left)) : undefined;
  }

  of(agent: string): Spend {
    return this.agents.get(agent) ?? NOTHING;
  }

  private fits(held: Worst): boolean {
    const { budgetUsd, maxTokensTotal } = this.limits();
    return this.all.costUsd + held.usd <= budgetUsd && totalTokens(this.all.usage) + held.tokens <= maxTokensTotal;
  }

  private limitReached(worst: Worst): LimitReached {
    const { budgetUsd, maxTokensTotal } = this.limits();
    const spent = this.all.costUsd;
    if (spent + worst.usd > budgetUsd) {
      return new LimitReached('budget_usd', `(spent ${formatUsd(spent)} of ${formatUsd(budgetUsd)}; the next call could cost up to ${formatUsd(worst.usd)})`);
    }
    return new LimitReached(
      'max_tokens_total',
      `(${totalTokens(this.all.usage)} of ${maxTokensTotal} tokens used; the next call could use up to ${worst.tokens})`,
    );
  }
}

function add(a: Spend, b: Spend): Spend {
  return { calls: a.calls + b.calls, usage: addUsage(a.usage, b.usage), costUsd: a.costUsd + b.costUsd };
}

/** What a call at `price` could cost at most: `inputTokens` (never low) and `maxTokens`, six times over in fast mode. */
function worstAt(price: Price, inputTokens: number, maxTokens: number, fast: boolean): Worst {
  return { usd: worstCaseCost(inputTokens, maxTokens, scaledPrice(price, fast ? FAST_PRICE : 1)), tokens: inputTokens + maxTokens };
}
