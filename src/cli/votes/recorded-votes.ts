import { ballotDigest } from '../../session/ballot.js';
import type { SessionRecord } from '../../session/reader.js';
import { summarize } from '../../session/summary.js';
import { UsageError } from '../usage-error.js';

/**
 * A person's vote enters a session only one way: a resume given it (`--vote` or `--from-comment`,
 * each checked with GitHub first: vote-checks.ts), which writes it after that resume's `resumed`
 * event, with the digest of the proposal's ballot in this run. A `human_vote` that no resume can
 * have written (one in the run's first generation), or whose digest is not its proposal's ballot,
 * was written into the file by hand: the session is refused before anything runs
 * (docs/security.md: votes from people).
 */
export function refuseHandMadeVotes(file: string, record: SessionRecord): void {
  const firstResume = record.events.find((e) => e.type === 'resumed')?.seq;
  const votes = record.events.filter((e) => e.type === 'human_vote');
  if (votes.length === 0) return;
  const proposals = summarize(record).proposals;
  const bound = { run: record.header.run_id, head: record.header.github?.head };
  for (const vote of votes) {
    const p = proposals.find((q) => q.id === vote.proposal);
    const why =
      firstResume === undefined || vote.seq < firstResume
        ? 'no resume recorded it (it stands before the run was ever resumed)'
        : !p || ballotDigest(p, bound) !== vote.digest
          ? `its digest ${vote.digest} is not that of proposal "${vote.proposal}"'s ballot in this run`
          : undefined;
    if (why)
      throw new UsageError(
        `${file} holds a vote of @${vote.voter} (event #${vote.seq}) that conclave did not record: ${why}. A person's vote is recorded only ` +
          'by resume --vote or --from-comment, after GitHub vouched for it; this copy was written by hand and is not resumed',
      );
  }
}
