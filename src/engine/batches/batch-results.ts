import { ProviderError } from '../../provider/provider-errors.js';
import { responseProblem } from '../../provider/response-shape.js';
import { LimitReached } from '../ending.js';

/**
 * A Message Batches result, read with care: the results file comes from outside (a gateway, a
 * proxy, a compromised host), so a line of any shape is a reason to send the request again, never
 * a TypeError or an answer handed on unchecked (docs/security.md, answers from the API).
 */

/** Why a batch's result for a request cannot be used (undefined when it can), and whose failure that is. */
export function resultProblem(result: unknown, batch: string): { why?: string; kind: 'request' | 'outage' } {
  const outage = (why: string) => ({ why, kind: 'outage' as const });
  if (result === undefined) return outage(`message batch ${batch} has no result for the request`);
  if (!isObject(result)) return outage(`message batch ${batch} gave a result conclave cannot read`);
  switch (result.type) {
    case 'succeeded': {
      const problem = responseProblem(result.message);
      return problem ? outage(`message batch ${batch} answered with a response conclave cannot use: ${problem}`) : { kind: 'outage' };
    }
    case 'errored': {
      const error = isObject(result.error) && isObject(result.error.error) ? result.error.error : {};
      const type = typeof error.type === 'string' ? error.type : 'error';
      const message = typeof error.message === 'string' ? error.message : 'the request failed in message batch';
      return { why: `${type}: ${message}`, kind: type === 'invalid_request_error' ? 'request' : 'outage' };
    }
    case 'expired':
    case 'canceled':
      return outage(`the request ${result.type === 'expired' ? 'expired' : 'was cancelled'} in message batch ${batch}`);
    case 'gone':
      return outage(`message batch ${batch} is gone (the API answered 404 for it)`);
    default:
      return outage(`message batch ${batch} gave a result conclave cannot read`);
  }
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The error a batched call fails with: a limit or the provider's own error as it is, anything else an outage. */
export function failureOf(e: unknown, what: string): Error {
  return e instanceof LimitReached || e instanceof ProviderError
    ? e
    : new ProviderError(`${what}: ${e instanceof Error ? e.message : String(e)}`, 'outage', undefined, e);
}
