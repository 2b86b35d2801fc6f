import { ConclaveError } from '../conclave-error.js';
/**
 * A model call that failed for good. `auth` and `outage` are the provider's failures (exit 4);
 * `request` is a request the API refused, such as an unknown model or a prompt too long (exit 1).
 */
export class ProviderError extends ConclaveError {
  /** The model call that failed, once the engine knows it: recorded with the failed turn (a trace's chat span). */
  call?: { step: number; model: string };

  constructor(
    message: string,
    readonly kind: 'auth' | 'outage' | 'request',
    readonly status?: number,
    cause?: unknown,
  ) {
    super(message, { ending: kind === 'request' ? 'error' : 'provider_error', cause });
  }
}

/**
 * The API refused a call because the organisation's spend limit at Anthropic is reached (a 429
 * whose error says so): no retry can succeed until someone raises the limit, so none is made, and
 * the run stops at a limit (exit 3) that a resume can go on from.
 */
export class SpendLimitReached extends ProviderError {}

/**
 * The organisation's contract spend cap (error type `contract_spend_limit_reached`): nothing can
 * be spent until the cap is raised or the contract's period renews, so the run parks (exit 75)
 * like a run waiting for a batch, its session kept for `conclave resume` (docs/api-controls.md).
 */
export class ContractSpendLimit extends SpendLimitReached {}

/** The error type the API gives a request past the contract's spend cap. */
export const CONTRACT_SPEND_LIMIT = 'contract_spend_limit_reached';

/** Whether an API error's text says the organisation's spend limit is reached (its type, or Anthropic's sentence). */
export function isSpendLimit(text: string): boolean {
  return /spend[_ ]limit|usage limits? (have been )?reached/i.test(text);
}

/** The call was aborted on purpose: the run ended, hit its timeout, or got a signal. */
export class CallAborted extends ConclaveError {
  constructor() {
    super('the model call was aborted', { ending: 'aborted' });
  }
}

/** `queue: interrupt`: a message arrived for the agent, and its call in flight was abandoned to make it again with it. */
export class CallInterrupted extends ConclaveError {
  constructor(
    /** What its prompt is counted as costing. */
    readonly costUsd = 0,
  ) {
    super('the model call was abandoned for a message that arrived', { ending: 'aborted' });
  }
}

/**
 * The API refused a request as longer than the model's context window ("prompt is too long"),
 * or stopped an answer at the window (stop reason model_context_window_exceeded). The agent's
 * conversation is compacted and the call made again, once.
 */
export class PromptTooLong extends ProviderError {
  constructor(
    message: string,
    /** The window the API named ("… > 200000 maximum"), when it named one. */
    readonly maximumTokens?: number,
  ) {
    super(message, 'request', 400);
  }

  /** The refusal of `error`, when it is one. */
  static of(error: unknown): PromptTooLong | undefined {
    if (!(error instanceof ProviderError) || error.status !== 400 || !/prompt is too long|exceeds? the context window|context length/i.test(error.message))
      return undefined;
    const maximum = /(\d+)\s*maximum/i.exec(error.message)?.[1];
    return new PromptTooLong(error.message, maximum === undefined ? undefined : Number(maximum));
  }
}
