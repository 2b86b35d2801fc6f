import { appendFileSync } from 'node:fs';
import { Masker } from '../../session/masker.js';
import type { SessionRecord } from '../../session/reader.js';
import { runEnded } from '../../session/recording.js';
import { SessionWriter } from '../../session/writer.js';
import { noteGeneration, generationOf } from '../run-generations.js';

/**
 * A run on a pull request whose head moved on since the run reviewed it (docs/github-action.md:
 * votes from people) is closed as `stale` when a vote comes for it, instead of being resumed: no
 * vote of the newer head decides what the older one was reviewed for, and a closed run is no
 * longer listed for votes, so it answers no later comment. The session ends with a `run_ended`
 * of status `stale` (nothing paid); in GitHub Actions the step says so and its comment is updated.
 */
export function closeStale(record: SessionRecord, reason: string, file: string, project = process.cwd()): void {
  // The reason names commits and a pull request number: nothing secret to mask.
  const writer = SessionWriter.append(record, new Masker([]));
  try {
    writer.append(runEnded('stale', reason));
  } finally {
    writer.close();
  }
  noteGeneration(project, record.header.run_id, { generation: generationOf(record), status: 'stale', session: file });
  if (process.env.GITHUB_STEP_SUMMARY) {
    try {
      appendFileSync(process.env.GITHUB_STEP_SUMMARY, `### ⏹️ conclave: stale\n\n${reason}\n`);
    } catch {
      // the step's notice says it all the same
    }
  }
}
