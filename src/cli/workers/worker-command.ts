import { RunStopped } from '../../abort-reasons.js';
import { existsSync } from 'node:fs';
import pkg from '../../../package.json' with { type: 'json' };
import { EXIT } from '../../exit-codes.js';
import { shownSpec } from '../../provider/stores/store-url.js';
import { Masker } from '../../session/masker.js';
import { durationMs } from '../../workflow/limits.js';
import { checkedWorkersPlace, openRedis } from '../../workers/redis.js';
import { serveTurns } from '../../workers/worker.js';
import { Signer, workersSecret } from '../../workers/signing.js';
import { processSecrets } from '../process-secrets.js';
import { UsageError } from '../usage-error.js';
import { inGitHubActions } from '../github/github.js';
import { inline } from '../markdown-tables.js';
import { appendFileSync } from 'node:fs';
import { defaultQueue } from './worker-pool.js';
import { givenLimits, organisationOf, type OrganisationFlags } from '../organisation.js';
import type { WorkflowSpec } from '../../workflow/types.js';

export interface WorkerCommandOptions extends Pick<OrganisationFlags, 'rateLimit' | 'coordinate'> {
  queue?: string;
  concurrency: string;
  workspace?: string;
  idleTimeout: string;
}

const MAX_CONCURRENCY = 64;

/** `conclave worker URL`: takes turns of a run started with --workers URL (docs/workers.md); its exit code. */
export async function workerCommand(url: string, options: WorkerCommandOptions): Promise<number> {
  const queue = options.queue ?? defaultQueue(process.env);
  checkedWorkersPlace(url, queue);
  const concurrency = Number(options.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY)
    throw new UsageError(`--concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}, not ${JSON.stringify(options.concurrency)}`);
  let idleTimeoutMs: number;
  try {
    idleTimeoutMs = durationMs(options.idleTimeout);
  } catch {
    throw new UsageError(`--idle-timeout must be a duration such as 90s, 10m or 1h, not ${JSON.stringify(options.idleTimeout)}`);
  }
  if (options.rateLimit !== undefined) givenLimits(options.rateLimit);
  const workspace = options.workspace ?? process.cwd();
  if (!existsSync(workspace)) throw new UsageError(`the workspace directory ${workspace} does not exist`);
  const signer = new Signer(workersSecret(process.env));
  const redis = await openRedis(url);
  const log = (line: string) => process.stderr.write(`conclave worker: ${line}\n`);
  const masker = new Masker(processSecrets());
  const controller = new AbortController();
  let signal: 'SIGINT' | 'SIGTERM' = 'SIGINT';
  const stop = (name: 'SIGINT' | 'SIGTERM') => () => ((signal = name), controller.abort(new RunStopped(`the worker got ${name}`)));
  const [onInt, onTerm] = [stop('SIGINT'), stop('SIGTERM')];
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  log(`taking turns from "${queue}" at ${shownSpec(url)}, ${concurrency} at a time, in ${workspace}`);
  try {
    const warn = (m: string) => log(`warning: ${m}`);
    const pacerFor = (spec: WorkflowSpec) => organisationOf(options, spec, 'worker', warn, { pools: false });
    const served = await serveTurns({
      redis,
      queue,
      signer,
      concurrency,
      idleTimeoutMs,
      workspace,
      env: process.env,
      version: pkg.version,
      warn,
      pacerFor,
      log,
      mask: (text) => masker.text(text),
      signal: controller.signal,
    });
    if (inGitHubActions()) writeWorkerSummary(queue, shownSpec(url), served);
    switch (served.code) {
      case 'ended':
        log('the run has ended');
        return EXIT.ok;
      case 'idle':
        log(`no turn came for ${options.idleTimeout}: stopping`);
        return EXIT.ok;
      case 'interrupted':
        log(`stopped by ${signal}: the turns it held go to other workers`);
        return signal === 'SIGINT' ? EXIT.sigint : EXIT.sigterm;
      case 'refused':
        throw new UsageError(served.reason);
      case 'lost':
        process.stderr.write(`conclave worker: ${served.reason}\n`);
        return EXIT.failure;
    }
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    redis.disconnect();
  }
}

/** A worker job's summary in GitHub Actions: which run's queue it served, how many turns it took, and how it ended. */
function writeWorkerSummary(queue: string, url: string, served: Awaited<ReturnType<typeof serveTurns>>): void {
  const file = process.env.GITHUB_STEP_SUMMARY;
  if (!file) return;
  const how = {
    ended: 'the run it served has ended',
    idle: 'no turn came before its idle timeout',
    interrupted: 'stopped by a signal: the turns it held go to other workers',
    refused: 'refused a job',
    lost: 'lost its Redis',
  }[served.code];
  const why = 'reason' in served ? `: ${inline(served.reason)}` : '';
  const icon = served.code === 'ended' || served.code === 'idle' ? '✅' : '❌';
  const text =
    `## ${icon} conclave worker: queue ${inline(queue)} at ${inline(url)}\n\nTook ${served.turns} turn${served.turns === 1 ? '' : 's'}; ` +
    `${how}${why}. The run's transcript, usage and cost are in the coordinator job's summary.\n`;
  try {
    appendFileSync(file, text);
  } catch {
    // The log says the same.
  }
}
