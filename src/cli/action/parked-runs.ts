import * as github from '@actions/github';
export { generationOf } from '../run-generations.js';

/**
 * The copies of runs' sessions that the parked-run recipe keeps as artifacts
 * (docs/github-action.md: half price batches, without holding a runner). Each job that ran a run
 * publishes its session as an artifact named after the run, its generation (1 for the first job,
 * one more for each resume), how that job ended, and the commit the run began on: so the jobs
 * that resume parked runs find them by name alone, and a stale copy is known without reading it.
 */
export interface SessionCopy {
  name: string;
  runId: string;
  generation: number;
  status: string;
  commit: string;
  /** The pull request the run began on, when its name says. */
  pull?: number;
  /** For a run parked for people's votes: when the first of its open proposals closes by its rule (ms since 1970), when its name says. */
  deadlineMs?: number;
  /** The workflow run that uploaded it (download-artifact's `run-id`). */
  workflowRun: number;
  expired: boolean;
  createdAt: string;
}

const NAME = /^conclave-(\d{8}T\d{6}Z-[0-9a-f]{6})-g(\d{1,6})-([a-z_]{1,20})-([0-9a-f]{40}|none)(?:-pr([1-9]\d{0,8}))?(?:-until(\d{10,13}))?$/;

/**
 * The artifact name of a session's copy: `-prN` when the run began on pull request N, then, for a
 * run parked for votes, `-untilS`: the second its first open proposal closes by its rule (so that
 * the scheduled job resumes it then, by its name alone).
 */
export function artifactName(runId: string, generation: number, status: string, commit: string | undefined, pull?: number, deadlineMs?: number): string {
  const until = deadlineMs !== undefined && Number.isFinite(deadlineMs) && deadlineMs > 0 ? `-until${Math.ceil(deadlineMs / 1000)}` : '';
  return `conclave-${runId}-g${generation}-${status}-${commit ?? 'none'}${pull !== undefined ? `-pr${pull}` : ''}${until}`;
}

/**
 * Every session copy among the repository's artifacts (GITHUB_API_URL, GITHUB_REPOSITORY), newest
 * first as the API lists them; at most 5,000 artifacts are read.
 */
export async function sessionCopies(token: string): Promise<{ copies: SessionCopy[]; unknownOrigin: number }> {
  const octokit = github.getOctokit(token);
  const { owner, repo } = github.context.repo;
  const copies: SessionCopy[] = [];
  let unknownOrigin = 0;
  let page = 0;
  const known = (github.context.payload.repository as { default_branch?: unknown } | undefined)?.default_branch;
  const defaultBranch = typeof known === 'string' && known ? known : (await octokit.rest.repos.get({ owner, repo })).data.default_branch;
  for await (const response of octokit.paginate.iterator(octokit.rest.actions.listArtifactsForRepo, { owner, repo, per_page: 100 })) {
    for (const artifact of response.data) {
      const match = NAME.exec(artifact.name);
      if (!match) continue;
      const origin = originOf(artifact.workflow_run, Number(match[2]), defaultBranch);
      if (origin === 'unknown') unknownOrigin++;
      if (origin !== 'own') continue;
      copies.push({
        name: artifact.name,
        runId: match[1]!,
        generation: Number(match[2]),
        status: match[3]!,
        commit: match[4]!,
        ...(match[5] !== undefined ? { pull: Number(match[5]) } : {}),
        ...(match[6] !== undefined ? { deadlineMs: Number(match[6]) * 1000 } : {}),
        workflowRun: artifact.workflow_run?.id ?? 0,
        expired: artifact.expired,
        createdAt: artifact.created_at ?? '',
      });
    }
    if (++page >= 50) break;
  }
  return { copies, unknownOrigin };
}

/**
 * Whether a copy comes from the runs that make a run's generations. A fork's pull request runs the
 * fork's code, which can write any session under any name; so can a branch of the repository
 * itself (anyone who may push one): a copy is taken only from the repository's own code, and past
 * the first generation (made by the pull request's own job) only from a run on the default branch,
 * where the resuming jobs (scheduled, a vote's comment, workflow_run) run. Where the API does not
 * say whose code ran (an older GitHub Enterprise Server leaves head_repository_id out), the copy
 * is not taken either.
 */
function originOf(
  run: { repository_id?: number | null; head_repository_id?: number | null; head_branch?: string | null } | null | undefined,
  generation: number,
  defaultBranch: string,
): 'own' | 'fork' | 'branch' | 'unknown' {
  if (typeof run?.repository_id !== 'number' || typeof run.head_repository_id !== 'number') return 'unknown';
  if (run.head_repository_id !== run.repository_id) return 'fork';
  return generation === 1 || run.head_branch === defaultBranch ? 'own' : 'branch';
}

/** Each run's newest copy. */
function newest(copies: readonly SessionCopy[]): Map<string, SessionCopy> {
  const byRun = new Map<string, SessionCopy>();
  for (const copy of copies) {
    const known = byRun.get(copy.runId);
    if (!known || copy.generation > known.generation || (copy.generation === known.generation && copy.createdAt > known.createdAt)) byRun.set(copy.runId, copy);
  }
  return byRun;
}

/**
 * The runs whose newest copy is parked, on pull request `pull` when given, and can still be
 * downloaded: a matrix for the jobs that resume them (GitHub's matrix holds 256). `waiting`: for a
 * message batch, and those parked for votes whose deadline has passed (a resume closes their
 * proposals by their rule); `voting`: every run parked for people's votes. `pull` in an entry is the
 * run's pull request, whose head the job checks out where a fork's run read it.
 */
export function parkedRuns(
  copies: readonly SessionCopy[],
  status: 'waiting' | 'voting' = 'waiting',
  pull?: number,
  nowMs = Date.now(),
): { artifact: string; 'run-id': number; commit: string; generation: number; run: string; pull?: number }[] {
  const due = (c: SessionCopy) => c.status === status || (status === 'waiting' && c.status === 'voting' && c.deadlineMs !== undefined && c.deadlineMs <= nowMs);
  return [...newest(copies).values()]
    .filter((c) => due(c) && (pull === undefined || c.pull === pull) && !c.expired && c.workflowRun > 0)
    .slice(0, 256)
    .map((c) => ({
      artifact: c.name,
      'run-id': c.workflowRun,
      commit: c.commit,
      generation: c.generation,
      run: c.runId,
      ...(c.pull !== undefined ? { pull: c.pull } : {}),
    }));
}

/** A copy of run `runId` newer than generation `generation`, if one was published. */
export function newerCopy(copies: readonly SessionCopy[], runId: string, generation: number): SessionCopy | undefined {
  const latest = newest(copies.filter((c) => c.runId === runId)).get(runId);
  return latest && latest.generation > generation ? latest : undefined;
}
