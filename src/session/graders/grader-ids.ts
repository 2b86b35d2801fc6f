/**
 * The graders' ids (docs/graders.md), without the graders: what `validate`, a test file's names
 * and the job summary need, at no cost to a command's start. graders.ts computes them in this order
 * (test/units/graders.test.ts holds the two lists together).
 */
export const TEAM_GRADER_IDS: readonly string[] = [
  'duplicate_findings',
  'marginal_findings',
  'vote_agreement',
  'lead_override',
  'messages_per_decision',
  'unanswered_mentions',
  'idle_agents',
  'redundant_tool_calls',
  'work_after_complete',
];

export const GRADER_IDS: readonly string[] = [
  ...TEAM_GRADER_IDS,
  'status',
  'cost_usd',
  'calls',
  'turns',
  'tokens',
  'wall_s',
  'tool_errors',
  'refusals',
  'cache_breaks',
  'cost_per_finding',
];

/** The agent name a rubric grader's scoring call is recorded under (docs/graders.md: rubric graders). */
export const rubricAgent = (id: string) => `grader-${id}`;
