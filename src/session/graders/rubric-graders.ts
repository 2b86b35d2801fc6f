import type { EventOf } from '../format.js';
import type { GradedSession, GraderResult } from './grader.js';
import { rubricAgent } from './grader-ids.js';

/**
 * The workflow's rubric graders as the session recorded their scores (`grader_scored`): each
 * value, why, by which model, and what its scoring call cost (counted in the run's cost too).
 * Read from the session, so a replayed or recorded score is the same value for nothing.
 */
export function rubricScores({ events, summary }: GradedSession): Record<string, GraderResult> {
  const scores = events.filter((e): e is EventOf<'grader_scored'> => e.type === 'grader_scored');
  return Object.fromEntries(
    scores.map((e) => {
      const cost = summary.agents[rubricAgent(e.grader)]?.cost_usd ?? 0;
      return [e.grader, { value: e.value, reason: e.reason, model: e.model, cost_usd: Math.round(cost * 1e6) / 1e6, behind: e.reason, rubric: true }];
    }),
  );
}
