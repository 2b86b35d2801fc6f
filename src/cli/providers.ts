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

/**
 * The connections of a run that calls models: each provider's credentials checked before anything
 * runs (a missing one is exit 2, saying what to set); none for a run that calls no model.
 */
export async function connectionsFor(
  spec: WorkflowSpec,
  options: { provider?: string; offline?: boolean; batch?: boolean },
  needed: boolean,
): Promise<Connection[] | undefined> {
  const override = providerFlag(options.provider);
  const [onCloud] = override ? batchOnCloud(spec, override) : [];
  if (onCloud) {
    throw new UsageError(
      `${onCloud.path.slice(0, -1).join('.')} sends its calls as a message batch (batch: true), but --provider ${override} sends them to a cloud: ` +
        "only Anthropic's API has the Message Batches API here: leave --provider out for this workflow, or set batch: false for it",
    );
  }
  const cloud = options.batch ? providersOf(spec, override).find((p) => p !== 'anthropic') : undefined;
  if (cloud)
    throw new UsageError(
      `--batch sends every call as a message batch, but this run reaches Claude through ${cloud}: only Anthropic's API has the Message Batches API here`,
    );
  const fallbacks = options.batch ? fallbacksAt(spec) : undefined;
  if (fallbacks)
    throw new UsageError(
      `--batch sends every call as a message batch, but the workflow has ${fallbacks}, which the Message Batches API does not take: run without --batch ` +
        '(conclave experiment: --no-batch), or leave the fallbacks out',
    );
  if (!needed || options.offline) return undefined;
  try {
    return await Promise.all(providersOf(spec, override).map((provider) => connect(provider, process.env)));
  } catch (e) {
    // A plain `conclave run` step of a fork's pull_request job: the key is withheld by GitHub, not missing (as the Action says).
    if (e instanceof MissingCredentials && e.message === NO_API_KEY && forkPullRequestJob(process.env))
      throw new MissingCredentials(forkSentence(process.env).replace(/^conclave did not run: /, 'ANTHROPIC_API_KEY is not set: '));
    throw e;
  }
}
