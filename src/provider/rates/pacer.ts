import { RateGate, type Admission, type CallNeed, type GivenLimits, type WaitListener } from './rate-gate.js';
import type { LimiterStore } from './rate-limiters.js';
import type { ProviderName } from '../clouds.js';
import { detached, nothingToDo } from '../../detached.js';

export type { Admission, CallNeed, GivenLimits, WaitListener, WaitReason } from './rate-gate.js';

/** The limits of the Messages API are per model class: Opus, Sonnet, Haiku (another model: its own id). */
export function modelClass(model: string): string {
  return /opus|sonnet|haiku/.exec(model)?.[0] ?? model;
}

/**
 * Paces one process's model calls under the API's rate limits (docs/organisation.md: pacing), per
 * model class. Each call waits, in the order they came, until
 * - a refusal's `retry-after` has passed;
 * - the server's word allows it: what the last response said was left, refilled since at the
 *   limit's rate, less what was let through after that response's request;
 * - the limiters allow it: the limits given, or learned from the headers, kept by
 *   in this process or, with --coordinate, in the store all runners share (limit-share.ts).
 * Until a class's limits are known (nothing given, no response yet), the first call goes alone,
 * the others waiting up to a second for its headers.
 */
export class Pacer {
  private readonly gates = new Map<string, RateGate>();

  constructor(
    /** The limits given for a model class, if any. */
    private readonly given: (modelClass: string) => GivenLimits,
    /** Made when a limit is first needed, once for every class. */
    limiters: () => Promise<LimiterStore>,
  ) {
    let store: Promise<LimiterStore> | undefined;
    this.limiters = () => (store ??= limiters());
  }

  private readonly limiters: () => Promise<LimiterStore>;

  /** A cloud's limits are its own: Bedrock's Sonnet quota is not the Anthropic API's. */
  admit(model: string, need: CallNeed, signal: AbortSignal, onWait?: WaitListener, provider: ProviderName = 'anthropic'): Promise<Admission> {
    const cls = modelClass(model);
    const name = provider === 'anthropic' ? cls : `${provider}:${cls}`;
    let gate = this.gates.get(name);
    if (!gate) this.gates.set(name, (gate = new RateGate(name, this.given(cls), this.limiters)));
    return gate.admit(need, signal, onWait);
  }

  /** What the response to an admitted call said (undefined: it failed before any answer). */
  observe(admission: Admission, response?: { headers: Headers; status: number }): void {
    this.gates.get(admission.gate)?.observe(admission, response);
  }

  /**
   * What the call really used, once its answer is whole: the tokens it took beyond that (its
   * input counted at most, its output as max_tokens) are given back to the limiters. Input read
   * from the prompt cache is not counted, as the API does not count it.
   */
  settle(admission: Admission, usage: { input_tokens: number; output_tokens: number; cache_creation_input_tokens?: number | null }): void {
    const used = { requests: 1, input_tokens: usage.input_tokens + (usage.cache_creation_input_tokens ?? 0), output_tokens: usage.output_tokens };
    // Giving back is bookkeeping: a store that fails is said by the limiters it fell back from.
    detached(this.gates.get(admission.gate)?.settle(admission, used), nothingToDo);
  }
}
