import { connect, type Connection, MissingCredentials, NO_API_KEY } from '../provider/connect.js';
import { forkPullRequestJob, forkSentence } from './action/fork-without-secrets.js';
import { isProviderName, PROVIDERS, type ProviderName } from '../provider/clouds.js';
import type { WorkflowSpec } from '../workflow/types.js';
import { providersOf } from '../workflow/providers-used.js';
import { batchOnCloud, fallbacksAt } from '../workflow/api-checks.js';
import { UsageError } from './usage-error.js';

/** `--provider NAME`, checked. */
export function providerFlag(value: string | undefined): ProviderName | undefined {
  if (value === undefined) return undefined;
  if (!isProviderName(value)) throw new UsageError(`--provider must be one of ${PROVIDERS.join(', ')}, not "${value}"`);
  return value;
}

/** The providers a run reaches (docs/providers.md): `--provider`'s for every agent, or each agent's own. */
export interface RunProviders {
  override?: ProviderName;
  used: ProviderName[];
}

/**
 * `--provider` checked, and the providers it leaves the run, once for the whole run: a batch
 * (`batch: true`, or `--batch`) that would reach a cloud, or take fallbacks, is refused here.
 */
export function runProviders(spec: WorkflowSpec, flags: { provider?: string; batch?: boolean }): RunProviders {
  const override = providerFlag(flags.provider);
  const [onCloud] = override ? batchOnCloud(spec, override) : [];
  if (onCloud) {
    throw new UsageError(
      `${onCloud.path.slice(0, -1).join('.')} sends its calls as a message batch (batch: true), but --provider ${override} sends them to a cloud: ` +
        "only Anthropic's API has the Message Batches API here: leave --provider out for this workflow, or set batch: false for it",
    );
  }
  const used = providersOf(spec, override);
  const cloud = flags.batch ? used.find((p) => p !== 'anthropic') : undefined;
  if (cloud)
    throw new UsageError(
      `--batch sends every call as a message batch, but this run reaches Claude through ${cloud}: only Anthropic's API has the Message Batches API here`,
    );
  const fallbacks = flags.batch ? fallbacksAt(spec) : undefined;
  if (fallbacks)
    throw new UsageError(
      `--batch sends every call as a message batch, but the workflow has ${fallbacks}, which the Message Batches API does not take: run without --batch ` +
        '(conclave experiment: --no-batch), or leave the fallbacks out',
    );
  return { ...(override ? { override } : {}), used };
}

/**
 * The connections of a run that calls models: each provider's credentials checked before anything
 * runs (a missing one is exit 2, saying what to set); none for a run that calls no model.
 */
export async function connectionsFor(providers: RunProviders, needed: boolean): Promise<Connection[] | undefined> {
  if (!needed) return undefined;
  try {
    return await Promise.all(providers.used.map((provider) => connect(provider, process.env)));
  } catch (e) {
    // A plain `conclave run` step of a fork's pull_request job: the key is withheld by GitHub, not missing (as the Action says).
    if (e instanceof MissingCredentials && e.message === NO_API_KEY && forkPullRequestJob(process.env))
      throw new MissingCredentials(forkSentence(process.env).replace(/^conclave did not run: /, 'ANTHROPIC_API_KEY is not set: '));
    throw e;
  }
}
