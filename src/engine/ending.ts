import { CallAborted, ProviderError } from '../provider/errors.js';
import { SetupError } from './setup.js';
import { UnresolvedValueError } from '../workflow/fill.js';
import { DivergenceError } from './journal.js';
import { TurnError } from '../agents/turn.js';
import { SessionWriteError } from '../session/writer.js';
import { EXIT, EXIT_OF, type EndStatus } from './exit-codes.js';

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
}

export type LimitName = 'timeout' | 'max_turns' | 'max_turns_per_agent' | 'budget_usd' | 'max_tokens_total';

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
export class LimitReached extends Error {
  constructor(
    readonly limit: LimitName,
    readonly detail: string,
  ) {
    super(`limit reached: ${limit} ${detail}`);
  }
}

/** --replay or --offline needed a model response that neither the session nor the cache holds. */
export class NoRecordedAnswer extends Error {
  constructor(
    message: string,
    /** Under --offline: the user's setting cannot be met (exit 2), rather than a replay that differs (exit 1). */
    readonly refused: boolean,
  ) {
    super(message);
  }
}

/**
 * The one mapping from an error to how the run ends. `agent` names the agent whose turn failed,
 * if any. Undefined for an aborted call: the run is already ending for another reason.
 */
export function endingOfError(e: unknown, agent?: string): Ending | undefined {
  if (e instanceof CallAborted) return undefined;
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof LimitReached) return limitEnding(e.limit, e.detail);
  if (e instanceof NoRecordedAnswer) return ending(e.refused ? 'refused' : 'error', message);
  if (e instanceof DivergenceError || e instanceof SetupError || e instanceof UnresolvedValueError || e instanceof SessionWriteError) return ending('error', message);
  const who = agent ? `@${agent} failed: ` : '';
  if (e instanceof TurnError) return ending('error', `${who}${message}`);
  if (e instanceof ProviderError) return ending(e.kind === 'request' ? 'error' : 'provider_error', `${who}${message}`);
  // A bug of ours, not the user's: keep the stack, so that it can be reported.
  return ending('error', `${who}${e instanceof Error ? (e.stack ?? message) : message}`);
}
