import { ConclaveError } from '../conclave-error.js';
import { ContractSpendLimit, ProviderError, SpendLimitReached } from '../provider/provider-errors.js';
import { TurnError } from '../agents/turn.js';
import { DivergenceError } from './replay/journal.js';
import type { Divergence } from './replay/recorded-events.js';
import { EXIT, EXIT_OF, type EndStatus } from '../exit-codes.js';

export interface Ending {
  status: EndStatus;
  exitCode: number;
  /** Why it ended, in a sentence. */
  reason: string;
  /** The lead's summary from `complete`, or empty. */
  summary: string;
  /** The values of the typed outputs, from the lead's `complete`. */
  outputs?: Record<string, unknown>;
  /** Which limit stopped the run, when one did. */
  limit?: LimitName;
  /** The run failed for a reason a resume would only meet again (a request the API refuses, a recording that differs): no resume is suggested. */
  repeats?: true;
  /** A replay that produced something else than its recording: where (for `conclave test`'s diff). */
  divergence?: Divergence;
}

export type LimitName =
  | 'timeout'
  | 'max_turns'
  | 'max_turns_per_agent'
  | 'budget_usd'
  | 'max_tokens_total'
  | 'spend_pool'
  | 'wait_timeout'
  /** The organisation's spend limit at Anthropic (a 429 that says so). */
  | 'spend_limit'
  /** `--max-estimate-usd`: the likely cost was over it, so the run did not start. */
  | 'max_estimate_usd';

export function ending(status: Exclude<EndStatus, 'interrupted'>, reason: string, summary = ''): Ending {
  return { status, exitCode: EXIT_OF[status], reason, summary };
}

export function interrupted(signal: 'SIGINT' | 'SIGTERM'): Ending {
  return { status: 'interrupted', exitCode: signal === 'SIGINT' ? EXIT.sigint : EXIT.sigterm, reason: `interrupted by ${signal}`, summary: '' };
}

/** A limit stops the run: `limit reached: NAME …`, where `detail` says how far it got. */
export function limitEnding(limit: LimitName, detail: string): Ending {
  return { ...ending('limit', `limit reached: ${limit} ${detail}`), limit };
}

/** A spending limit stopped a model call. */
export class LimitReached extends ConclaveError {
  constructor(
    readonly limit: LimitName,
    readonly detail: string,
  ) {
    super(`limit reached: ${limit} ${detail}`, { ending: 'limit' });
  }
}

/** --replay or --offline needed a model response that neither the session nor the cache holds. */
export class NoRecordedAnswer extends ConclaveError {
  constructor(
    message: string,
    /** Under --offline: the user's setting cannot be met (exit 2), rather than a replay that differs (exit 1). */
    refused: boolean,
  ) {
    super(message, { ending: refused ? 'refused' : 'error' });
  }
}

/**
 * The one mapping from an error to how the run ends: by the ending the error carries (every
 * error conclave means to raise is a ConclaveError). `agent` names the agent whose turn failed,
 * if any. Undefined for an aborted call: the run is already ending for another reason.
 */
export function endingOfError(e: unknown, agent?: string): Ending | undefined {
  const who = agent ? `@${agent} failed: ` : '';
  // A bug of ours, not the user's: keep the stack, so that it can be reported.
  if (!ConclaveError.is(e)) return ending('error', `${who}${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  if (e instanceof LimitReached) return limitEnding(e.limit, e.detail);
  if (e instanceof ContractSpendLimit)
    return ending(
      'waiting',
      `parked: the contract's spend limit at Anthropic was reached: conclave resume the session once it is raised or renews (${e.message})`,
    );
  if (e instanceof SpendLimitReached)
    return {
      ...ending('limit', `the organisation's spend limit at Anthropic was reached: raise it in the console, then conclave resume the session (${e.message})`),
      limit: 'spend_limit',
    };
  switch (e.ending) {
    case 'aborted':
      return undefined;
    case 'refused':
      return ending('refused', e.message);
    case 'provider_error':
      return ending('provider_error', `${who}${e.message}`);
    case 'usage':
    case 'limit':
    case 'error': {
      // What failed in an agent's turn (the model call, the turn itself) names the agent.
      const end = ending('error', `${e instanceof TurnError || e instanceof ProviderError ? who : ''}${e.message}`);
      if (e instanceof DivergenceError && e.at) return { ...end, repeats: true, divergence: e.at };
      return repeatsOnResume(e) ? { ...end, repeats: true } : end;
    }
  }
}

/**
 * Whether a resume would only fail the same way: the API refused the request itself (a resume
 * sends the same), the conversation fits no window, or the recording no longer answers the run.
 * A provider's outage, a worker's failure or a limit may pass; these do not.
 */
function repeatsOnResume(e: ConclaveError): boolean {
  return e instanceof TurnError || e instanceof DivergenceError || e instanceof NoRecordedAnswer || (e instanceof ProviderError && e.kind === 'request');
}
