import { GRADER_IDS, TEAM_GRADER_IDS } from '../../session/graders/grader-ids.js';
import type { GraderResult } from '../../session/graders/grader.js';
import type { SessionSummary } from '../../session/summary.js';
import { docsLink } from './docs-link.js';

/** A run's summary with its graders (docs/graders.md), where they were computed. */
export type GradedSummary = SessionSummary & { graders?: Record<string, GraderResult> };

/** The team's graders in one line: each that has a value for the run. */
export function gradersLine(graders: Record<string, GraderResult>): string {
  const shown = [...TEAM_GRADER_IDS, ...Object.keys(graders).filter((id) => !GRADER_IDS.includes(id))];
  const values = shown.flatMap((id) => (typeof graders[id]?.value === 'number' ? [`${id} ${graders[id]!.value}`] : []));
  const docs = docsLink(process.env, 'docs/graders.md');
  const what = docs.startsWith('http') ? `[what each measures](${docs})` : `what each measures: ${docs}`;
  return `**Graders** (${what}): ${values.join(' · ') || 'none has a value for this run'}`;
}
