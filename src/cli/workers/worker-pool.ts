import { relative, resolve, sep } from 'node:path';
import pkg from '../../../package.json' with { type: 'json' };
import { shownSpec } from '../../provider/stores/store-url.js';
import type { Workflow } from '../../workflow/load.js';
import type { ProviderName } from '../../provider/clouds.js';
import type { WorkerPool } from '../../workers/coordinator.js';
import { createHash } from 'node:crypto';
import { UsageError } from '../usage-error.js';
import { another, checkedWorkersPlace, openRedis } from '../../workers/redis.js';
import { Signer, workersSecret } from '../../workers/signing.js';

export interface WorkersFlags {
  /** --workers: the Redis of the workers that take the run's turns. */
  workers?: string;
  /** --queue: the queue they share (one per run). */
  queue?: string;
}

/**
 * The queue when --queue is not given: in GitHub Actions, one per workflow run and attempt, which
 * the coordinator job and its worker jobs share without being told; elsewhere `conclave`.
 */
export function defaultQueue(env: NodeJS.ProcessEnv): string {
  const id = env.GITHUB_RUN_ID?.trim();
  return env.GITHUB_ACTIONS === 'true' && id && /^\d+$/.test(id)
    ? `run-${id}-${/^\d+$/.test(env.GITHUB_RUN_ATTEMPT ?? '') ? env.GITHUB_RUN_ATTEMPT : '1'}`
    : 'conclave';
}

/** The flags of --workers, checked before anything else (credentials, stores, the session). */
export function checkWorkersFlags(flags: WorkersFlags & { replay?: string; offline?: boolean }): void {
  if (flags.workers === undefined) {
    if (flags.queue !== undefined) throw new UsageError('--queue names the queue of --workers: give --workers redis://… too');
    return;
  }
  if (flags.replay !== undefined || flags.offline)
    throw new UsageError(`${flags.replay !== undefined ? '--replay' : '--offline'} calls no model and runs no tool: --workers has nothing to give it`);
  checkedWorkersPlace(flags.workers, flags.queue ?? defaultQueue(process.env));
  workersSecret(process.env);
}

/**
 * With --workers, the run's turns are jobs on a BullMQ queue in that Redis (docs/workers.md):
 * checked and connected before anything is written. BullMQ and ioredis load only here.
 */
export async function workerPoolOf(
  flags: WorkersFlags,
  run: { runId: string; workflow: Workflow; workspace: string; providers: ProviderName[] },
  warn: (message: string) => void,
): Promise<WorkerPool | undefined> {
  if (flags.workers === undefined) return undefined;
  const [{ WorkerPool }, { Queue }] = await Promise.all([import('../../workers/coordinator.js'), import('bullmq')]);
  const queue = flags.queue ?? defaultQueue(process.env);
  const path = relative(resolve(run.workspace), resolve(run.workflow.file));
  if (path.startsWith(`..${sep}`) || path === '..' || resolve(path) === path) {
    throw new UsageError(
      `with --workers the workflow file must be inside the workspace (${run.workspace}): workers find it at the same place in their checkout`,
    );
  }
  const signer = new Signer(workersSecret(process.env));
  const redis = await openRedis(flags.workers);
  const jobs = new Queue(queue, { connection: redis }).on('error', () => {});
  const pool = new WorkerPool(
    redis,
    another(redis),
    jobs,
    {
      run: run.runId,
      version: pkg.version,
      workflow: { path: path.split(sep).join('/'), sha256: createHash('sha256').update(run.workflow.text).digest('hex') },
      providers: run.providers,
      queue,
      shownUrl: shownSpec(flags.workers),
    },
    signer,
    warn,
  );
  await pool.start();
  return pool;
}
