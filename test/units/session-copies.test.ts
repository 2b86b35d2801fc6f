import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeGitHub, startFakeGitHub } from '../fake-github/server.js';

/**
 * The session copies among a repository's artifacts, read from a fake GitHub (parked-runs.ts).
 * parked-runs.ts is loaded only once GITHUB_API_URL names the fake: @actions/github reads it when it is loaded.
 */
const RUN = '20261128T001122Z-abc123';
const COMMIT = 'a'.repeat(40);

describe('the copies among the repository artifacts', () => {
  let gitHub: FakeGitHub;
  const saved = { ...process.env };
  beforeAll(async () => {
    gitHub = await startFakeGitHub('octo/widgets', 7);
    // @actions/github reads where GitHub is when it is loaded.
    Object.assign(process.env, { GITHUB_API_URL: gitHub.url, GITHUB_REPOSITORY: 'octo/widgets', GITHUB_EVENT_PATH: '' });
  });
  afterAll(async () => {
    process.env = saved;
    await gitHub.close();
  });

  it("reads each name's parts, skips other artifacts and forks' uploads, and counts those whose origin GitHub does not say", async () => {
    const { artifactName, sessionCopies } = await import('../../src/cli/action/parked-runs.js');
    const add = (name: string, headRepositoryId?: number | null) =>
      gitHub.artifacts.push({
        id: gitHub.artifacts.length + 1,
        name,
        workflowRun: 500 + gitHub.artifacts.length,
        headSha: COMMIT,
        createdAt: '2026-11-28T00:00:00Z',
        expired: false,
        files: {},
        ...(headRepositoryId !== undefined ? { headRepositoryId } : {}),
      });
    add(artifactName(RUN, 2, 'voting', COMMIT, 7, 1_800_000_000_000));
    add(artifactName(RUN, 1, 'waiting', undefined));
    add('coverage-report');
    add(`conclave-${RUN}-g1-voting-${COMMIT}-pr7-until12`); // not a time
    add(`conclave-${RUN}-g1-Voting-${COMMIT}`); // not a status
    add(artifactName(RUN, 9, 'waiting', COMMIT), 2); // a fork's run
    add(artifactName(RUN, 8, 'waiting', COMMIT), null); // not said
    const { copies, unknownOrigin } = await sessionCopies('ghs_test_token');
    expect(unknownOrigin).toBe(1);
    expect(copies.map(({ name: _, createdAt: __, ...c }) => c)).toEqual([
      { runId: RUN, generation: 1, status: 'waiting', commit: 'none', workflowRun: 501, expired: false },
      { runId: RUN, generation: 2, status: 'voting', commit: COMMIT, pull: 7, deadlineMs: 1_800_000_000_000, workflowRun: 500, expired: false },
    ]);
  });
});
