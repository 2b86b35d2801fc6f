import { describe, expect, it } from 'vitest';
import { artifactName, newerCopy, parkedRuns, type SessionCopy } from '../../src/cli/action/parked-runs.js';

/**
 * The artifact names the parked-run recipes find runs by (docs/github-action.md): what a name
 * holds, which runs a scheduled job or a vote's job resumes, and the copy that is not the newest.
 * Reading them from GitHub: session-copies.test.ts. The recipes themselves run through local-action
 * in test/e2e/parked-recipe.test.ts and people-recipe.test.ts.
 */
const RUN = '20261128T001122Z-abc123';
const COMMIT = 'a'.repeat(40);
const NOW = 1_800_000_000_000;

function copy(fields: Partial<SessionCopy> & { generation: number; status: string }): SessionCopy {
  return {
    name: artifactName(fields.runId ?? RUN, fields.generation, fields.status, COMMIT, fields.pull, fields.deadlineMs),
    runId: RUN,
    commit: COMMIT,
    workflowRun: 100 + fields.generation,
    expired: false,
    createdAt: `2026-11-28T00:00:0${fields.generation}Z`,
    ...fields,
  };
}

describe('artifact names of session copies', () => {
  it('name the run, its generation, how the job ended, the commit, then the pull request and the deadline of its votes', () => {
    expect(artifactName(RUN, 3, 'waiting', COMMIT)).toBe(`conclave-${RUN}-g3-waiting-${COMMIT}`);
    expect(artifactName(RUN, 1, 'voting', undefined, 7)).toBe(`conclave-${RUN}-g1-voting-none-pr7`);
    // The deadline in whole seconds, rounded up: listed at or after it, never before.
    expect(artifactName(RUN, 1, 'voting', COMMIT, 7, 1_800_000_000_001)).toBe(`conclave-${RUN}-g1-voting-${COMMIT}-pr7-until1800000001`);
    expect(artifactName(RUN, 1, 'voting', COMMIT, undefined, 1_800_000_000_000)).toBe(`conclave-${RUN}-g1-voting-${COMMIT}-until1800000000`);
    for (const nonsense of [Number.NaN, Number.POSITIVE_INFINITY, 0, -5]) expect(artifactName(RUN, 1, 'voting', COMMIT, 7, nonsense)).not.toContain('until');
  });
});

describe('the runs a job resumes', () => {
  it('lists the newest copy of each run parked for a batch, by generation, then by upload time', () => {
    const copies = [
      copy({ generation: 1, status: 'waiting' }),
      copy({ generation: 2, status: 'waiting', workflowRun: 7 }),
      copy({ runId: 'other', generation: 1, status: 'success' }),
      copy({ runId: 'third', generation: 2, status: 'waiting', createdAt: '2026-11-28T00:00:01Z' }),
      copy({ runId: 'third', generation: 2, status: 'success', createdAt: '2026-11-28T00:00:05Z' }),
    ];
    expect(parkedRuns(copies, 'waiting', undefined, NOW)).toEqual([{ artifact: copies[1]!.name, 'run-id': 7, commit: COMMIT, generation: 2, run: RUN }]);
    // An older generation uploaded later is still older.
    const late = copy({ generation: 1, status: 'waiting', createdAt: '2026-12-01T00:00:00Z' });
    expect(parkedRuns([copies[1]!, late], 'waiting', undefined, NOW).map((r) => r.generation)).toEqual([2]);
  });

  it('leaves out copies that expired or whose run is not known, and lists at most 256', () => {
    expect(parkedRuns([copy({ generation: 1, status: 'waiting', expired: true })], 'waiting', undefined, NOW)).toEqual([]);
    expect(parkedRuns([copy({ generation: 1, status: 'waiting', workflowRun: 0 })], 'waiting', undefined, NOW)).toEqual([]);
    const many = Array.from({ length: 300 }, (_, i) => copy({ runId: `run-${i}`, generation: 1, status: 'waiting' }));
    expect(parkedRuns(many, 'waiting', undefined, NOW)).toHaveLength(256);
  });

  it('votes: every run parked for people, on the pull request asked for, with its number', () => {
    const on7 = copy({ generation: 1, status: 'voting', pull: 7 });
    const on8 = copy({ runId: 'eight', generation: 1, status: 'voting', pull: 8 });
    const batch = copy({ runId: 'batch', generation: 1, status: 'waiting', pull: 7 });
    expect(parkedRuns([on7, on8, batch], 'voting', 7, NOW)).toEqual([{ artifact: on7.name, 'run-id': 101, commit: COMMIT, generation: 1, run: RUN, pull: 7 }]);
    expect(parkedRuns([on7, on8, batch], 'voting', undefined, NOW).map((r) => r.run)).toEqual([RUN, 'eight']);
  });

  it('the scheduled job takes a run parked for votes once its deadline has passed, not before, and never one with no deadline', () => {
    const due = copy({ generation: 1, status: 'voting', pull: 7, deadlineMs: NOW });
    const early = copy({ runId: 'early', generation: 1, status: 'voting', deadlineMs: NOW + 1 });
    const open = copy({ runId: 'open', generation: 1, status: 'voting' });
    expect(parkedRuns([due, early, open], 'waiting', undefined, NOW).map((r) => r.run)).toEqual([RUN]);
    expect(
      parkedRuns([due, early, open], 'waiting', undefined, NOW + 1)
        .map((r) => r.run)
        .sort(),
    ).toEqual([RUN, 'early'].sort());
  });

  it('a newer copy is one of a later generation of the same run', () => {
    const copies = [
      copy({ generation: 1, status: 'waiting' }),
      copy({ generation: 2, status: 'success' }),
      copy({ runId: 'x', generation: 5, status: 'waiting' }),
    ];
    expect(newerCopy(copies, RUN, 1)?.generation).toBe(2);
    expect(newerCopy(copies, RUN, 2)).toBeUndefined();
    expect(newerCopy(copies, 'missing', 1)).toBeUndefined();
  });
});
