import { describe, expect, it } from 'vitest';
import { ConclaveError } from '../src/conclave-error.js';
import { endingOfError, LimitReached } from '../src/engine/ending.js';
import { CallAborted, ProviderError } from '../src/provider/provider-errors.js';
import { SessionFileError } from '../src/session/reader.js';
import { UsageError } from '../src/cli/usage-error.js';

/** The one error base (issue 24): its name, cause, ending and exit code, and how a run ends on it. */
describe('ConclaveError', () => {
  it('is named after its class, keeps its cause, and carries its exit code', () => {
    class SomethingNew extends ConclaveError {}
    const cause = new Error('underneath');
    const e = new SomethingNew('it broke', { cause });
    expect(e.name).toBe('SomethingNew');
    expect(e.cause).toBe(cause);
    expect(e.exitCode).toBe(1);
    expect(new UsageError('bad flag').exitCode).toBe(2);
    expect(new SessionFileError('bad file').exitCode).toBe(2);
    expect(new ProviderError('overloaded', 'outage').exitCode).toBe(4);
    expect(new ProviderError('unknown model', 'request').exitCode).toBe(1);
    expect(new LimitReached('budget_usd', '($1.00)').exitCode).toBe(3);
  });

  it('is recognised by its mark, not by instanceof: an error of another copy of the module counts', () => {
    const fromAnotherBundle = Object.assign(new Error('from elsewhere'), { ending: 'usage' });
    Object.defineProperty(fromAnotherBundle, Symbol.for('conclave.error'), { value: true });
    expect(ConclaveError.is(fromAnotherBundle)).toBe(true);
    expect(ConclaveError.is(new Error('plain'))).toBe(false);
    expect(ConclaveError.is({ message: 'not an error' })).toBe(false);
  });

  it('a new error class never falls through to "internal error": the run ends on its own ending, with no stack', () => {
    class BrandNew extends ConclaveError {}
    expect(endingOfError(new BrandNew('the new thing failed'), 'lead')).toEqual({ status: 'error', exitCode: 1, reason: 'the new thing failed', summary: '' });
    expect(endingOfError(new ProviderError('overloaded', 'outage'), 'lead')).toMatchObject({
      status: 'provider_error',
      exitCode: 4,
      reason: '@lead failed: overloaded',
    });
    expect(endingOfError(new LimitReached('budget_usd', '($1.00)'))).toMatchObject({ status: 'limit', exitCode: 3, limit: 'budget_usd' });
    expect(endingOfError(new CallAborted())).toBeUndefined();
    // A bug (any other throw) keeps its stack, so that it can be reported.
    expect(endingOfError(new TypeError('x is undefined'))!.reason).toMatch(/^TypeError: x is undefined\n\s+at /);
  });
});
