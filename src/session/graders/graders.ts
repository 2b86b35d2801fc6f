import type { SessionRecord } from '../reader.js';
import { summarize, type SessionSummary } from '../summary.js';
import { COMMON_GRADERS } from './common-graders.js';
import { costPerFinding, duplicateFindings, marginalFindings } from './finding-graders.js';
import { idleAgents, redundantToolCalls, unansweredMentions, workAfterComplete } from './channel-graders.js';
import { leadOverride, messagesPerDecision, voteAgreement } from './vote-graders.js';
import type { Grader, GraderResult } from './grader.js';
import { rubricScores } from './rubric-graders.js';
import { GRADER_IDS } from './grader-ids.js';

export type { Grader, GraderResult } from './grader.js';
export { rubricAgent } from './grader-ids.js';

/** Every grader conclave computes from a session (docs/graders.md), the team's first, by id. */
export const GRADERS: readonly Grader[] = [
  duplicateFindings,
  marginalFindings,
  voteAgreement,
  leadOverride,
  messagesPerDecision,
  unansweredMentions,
  idleAgents,
  redundantToolCalls,
  workAfterComplete,
  ...COMMON_GRADERS,
  costPerFinding,
];

export { GRADER_IDS, TEAM_GRADER_IDS } from './grader-ids.js';

/** Every grader's result for one session: pure, from its events alone (no request, no key). */
export function gradeSession(
  record: Pick<SessionRecord, 'header' | 'events' | 'effective'>,
  summary: SessionSummary = summarize(record),
): Record<string, GraderResult> {
  const session = { events: record.effective, summary };
  // A recorded score under one of conclave's own ids (a hostile session) cannot stand in for it.
  const rubrics = Object.entries(rubricScores(session)).filter(([id]) => !GRADER_IDS.includes(id));
  return { ...Object.fromEntries(GRADERS.map((g) => [g.id, g.grade(session)])), ...Object.fromEntries(rubrics) };
}

/** Several sessions' graders made one: each value summed or averaged (over the sessions that have one), as its grader says. */
export function totalOf(all: readonly Record<string, GraderResult>[]): Record<string, { value: number | null; sessions: number }> {
  const rubrics = [...new Set(all.flatMap((r) => Object.keys(r).filter((id) => !GRADER_IDS.includes(id))))];
  return Object.fromEntries(
    [...GRADERS.map((g) => [g.id, g.total] as const), ...rubrics.map((id) => [id, 'mean'] as const)].map(([id, total]) => {
      const values = all.map((r) => r[id]?.value).filter((v): v is number => typeof v === 'number');
      const sum = values.reduce((a, b) => a + b, 0);
      const value = values.length === 0 ? null : total === 'sum' ? round(sum) : round(sum / values.length);
      return [id, { value, sessions: values.length }];
    }),
  );
}

/** A session's graders in the order they are shown: conclave's own, then the workflow's rubrics, with what each measures. */
export function gradersShown(results: Record<string, GraderResult>): ({ id: string; means: string } & GraderResult)[] {
  const own = GRADERS.map((g) => ({ id: g.id, means: g.means, ...results[g.id]! }));
  const rubrics = Object.entries(results)
    .filter(([id]) => !GRADER_IDS.includes(id))
    .map(([id, r]) => ({ id, means: "the workflow's rubric, scored by a model from 0 to 1", ...r }));
  return [...own, ...rubrics];
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;
