import type { SpendPools } from '../engine/ceilings/spend-pools.js';
import { Pacer, type GivenLimits } from '../provider/rates/pacer.js';
import type { RateDimension } from '../provider/rates/rate-headers.js';
import { FallbackLimiters, localLimiters } from '../provider/rates/rate-limiters.js';
import type { RunNote } from '../provider/stores/run-notes.js';
import { withoutCredentials } from '../provider/stores/store-url.js';
import { UsageError } from './usage-error.js';
import type { WorkflowSpec } from '../workflow/types.js';

/** The flags that share an organisation's limits across runs (docs/organisation.md). */
export interface OrganisationFlags {
  /** --rate-limit rpm=N,itpm=N,otpm=N (or CONCLAVE_RATE_LIMIT). */
  rateLimit?: string;
  /** --coordinate URL (or CONCLAVE_COORDINATE). */
  coordinate?: string;
  /** --spend-pool NAME=CAP/WINDOW, repeatable (or CONCLAVE_SPEND_POOLS, space- or comma-separated). */
  spendPool?: string[];
}

/** What a live run shares with the organisation's other runs. */
export interface Organisation {
  pacer: Pacer;
  pools?: SpendPools;
  /** Notes the run's newest generation in the --coordinate store (nothing without one); a store that fails is a warning. */
  noteRun(runId: string, noted: RunNote): Promise<void>;
  /** The newest generation of the run the store knows, if any (undefined without a store, or when it fails). */
  notedRun(runId: string): Promise<RunNote | undefined>;
  close(): Promise<void>;
}

const SHORT: Record<string, RateDimension> = { rpm: 'requests', itpm: 'input_tokens', otpm: 'output_tokens' };

/** `rpm=50,itpm=30000,otpm=8000`: per-minute limits, each optional. */
export function givenLimits(text: string, named = '--rate-limit'): GivenLimits {
  const short: Record<string, number> = {};
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name = '', value = ''] = part.split('=').map((p) => p.trim());
    const n = Number(value);
    if (!SHORT[name] || !/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
      throw new UsageError(
        `${named} takes rpm=N,itpm=N,otpm=N (requests, input tokens and output tokens per minute, each a whole number of at least 1); got ` +
          `${JSON.stringify(text)}`,
      );
    }
    short[name] = n;
  }
  return limitsOf(short);
}

/** The workflow's `rate_limits:` entry (checked by the schema), or the flag's, as the pacer keeps them. */
function limitsOf(short: { rpm?: number; itpm?: number; otpm?: number }): GivenLimits {
  const given: GivenLimits = {};
  for (const [name, n] of Object.entries(short)) if (SHORT[name] && n !== undefined) given[SHORT[name]] = n;
  return given;
}

/**
 * The pacing and spend pools of a run that calls the API, from the flags or, where a flag is not
 * given, the environment. A store named by --coordinate must answer now: a dead one is exit 2
 * before anything is written, as a dead --cache is.
 */
export async function organisationOf(
  flags: OrganisationFlags,
  workflow: Pick<WorkflowSpec, 'rate_limits'>,
  runId: string,
  warn: (message: string) => void,
  { pools: withPools = true } = {},
): Promise<Organisation> {
  const env = process.env;
  // An error names what the user wrote: the flag, or the variable it came from.
  const rateText = flags.rateLimit ?? env.CONCLAVE_RATE_LIMIT;
  const forEvery =
    rateText === undefined || rateText.trim() === ''
      ? undefined
      : givenLimits(rateText, flags.rateLimit !== undefined ? '--rate-limit' : 'CONCLAVE_RATE_LIMIT');
  const given = (modelClass: string) => forEvery ?? limitsOf(workflow.rate_limits?.[modelClass] ?? {});
  const url = (flags.coordinate ?? env.CONCLAVE_COORDINATE)?.trim() || undefined;
  // A worker paces its calls; the pools are held by the run's coordinator, which admits each call.
  const poolTexts = !withPools ? [] : flags.spendPool?.length ? flags.spendPool : (env.CONCLAVE_SPEND_POOLS ?? '').split(/[\s,]+/).filter(Boolean);
  const pooled = flags.spendPool?.length ? '--spend-pool' : 'CONCLAVE_SPEND_POOLS';
  if (poolTexts.length > 0 && !url)
    throw new UsageError(`${pooled} needs --coordinate URL (or CONCLAVE_COORDINATE): a pool is kept in the store every run shares`);
  if (!url) return { pacer: new Pacer(given, localLimiters), noteRun: async () => {}, notedRun: async () => undefined, close: async () => {} };

  const [{ coordinate, CoordinateError, withTimeout }, { poolSpec, PoolSpecError, SpendPools }] = await Promise.all([
    import('../provider/stores/coordinate.js'),
    import('../engine/ceilings/spend-pools.js'),
  ]);
  const specs = poolTexts.map((text) => {
    try {
      return poolSpec(text, pooled);
    } catch (e) {
      throw e instanceof PoolSpecError ? new UsageError(e.message) : e;
    }
  });
  const names = specs.map((s) => s.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice) throw new UsageError(`${pooled} names the pool ${twice} twice`);
  let store: Awaited<ReturnType<typeof coordinate>>;
  try {
    store = await coordinate(url, flags.coordinate?.trim() ? '--coordinate' : 'CONCLAVE_COORDINATE');
  } catch (e) {
    throw e instanceof CoordinateError ? new UsageError(e.message) : e;
  }
  // The rate limits' failure is said once; they go on in this process. A spend pool is a ceiling: it stops the run instead.
  const explain = (e: unknown) => withoutCredentials(e instanceof Error ? e.message : String(e), url);
  let failed = false;
  const storeFailed = (e: unknown) => {
    if (failed) return;
    failed = true;
    warn(
      `the --coordinate store ${store.shown} failed (${explain(e)}); the rate limits go on in this ` +
        `process${specs.length > 0 ? ', and a call that cannot be checked against the spend pools stops the run at the limit' : ''}`,
    );
  };
  const limiters = new FallbackLimiters(store.limiters, await localLimiters(), withTimeout, storeFailed);
  const pools = specs.length > 0 ? new SpendPools(specs, store.ledger, store.shown, runId, explain) : undefined;
  return {
    pacer: new Pacer(given, async () => limiters),
    ...(pools ? { pools } : {}),
    // A store already said to have failed is not said again for its notes of runs.
    noteRun: (id, noted) =>
      withTimeout(store.runs.note(id, noted), 'a note of the run').catch((e: unknown) => {
        if (!failed) warn(`the --coordinate store ${store.shown} did not keep this run's generation (${explain(e)}): a stale copy of it is refused only here`);
        failed = true;
      }),
    notedRun: (id) =>
      withTimeout(store.runs.noted(id), 'a read of the run').catch((e: unknown) => {
        if (!failed) warn(`the --coordinate store ${store.shown} did not say this run's newest generation (${explain(e)})`);
        failed = true;
        return undefined;
      }),
    close: async () => {
      pools?.close();
      await store.close();
    },
  };
}
