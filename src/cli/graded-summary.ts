import { gradeSession } from '../session/graders/graders.js';
import { readSession } from '../session/reader.js';
import { summarize } from '../session/summary.js';

/** What the session says happened, and its graders; a replay's own file holds only what it added, the rest is in the recording. */
export function gradedSummaryOf(session: string, replayOf?: string) {
  const read = readSession(session);
  const record = replayOf ? { ...read, effective: [...readSession(replayOf).effective.filter((e) => e.type !== 'run_ended'), ...read.effective] } : read;
  const summary = summarize(record);
  return { ...summary, graders: gradeSession(record, summary) };
}
