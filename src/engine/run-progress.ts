import type { ProposalView } from '../channel/channel.js';
import type { ProgressEvent } from './progress-events.js';
import type { RunOptions } from './run-options.js';

/**
 * What the run tells its progress listener: nothing while a resume re-executes its recording (a
 * replay shows it: that is its point), and each proposal's end once.
 */
export class RunProgress {
  private readonly shownProposals = new Set<string>();

  constructor(private readonly options: Pick<RunOptions, 'recording' | 'answers' | 'progress'>) {}

  readonly tell = (event: ProgressEvent): void => {
    if (!this.options.recording.journal.replaying || this.options.answers.live === false) this.options.progress(event);
  };

  readonly proposal = (p: ProposalView): void => {
    if (this.shownProposals.has(p.id)) return;
    this.shownProposals.add(p.id);
    this.tell({ type: 'proposal', id: p.id, status: p.status, winner: p.winner });
  };
}
