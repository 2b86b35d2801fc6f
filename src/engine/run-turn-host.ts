import type { RunOptions } from './run-options.js';
import type { RunProgress } from './run-progress.js';
import type { Team } from './teams/team.js';
import type { TurnHost } from './turn-runner.js';

/** The run's parts a turn works with: made before the first turn, the same for every turn. */
export type TurnParts = Pick<TurnHost, 'queues' | 'calls' | 'accounting' | 'workspace' | 'tools' | 'agents' | 'taints' | 'signal'>;
/** What a turn asks of the scheduler while it runs. */
export type TurnState = Pick<TurnHost, 'statusLine' | 'ending' | 'elapsedMs' | 'pump'>;

/** What a turn needs of the run (turn-runner.ts), from the run's options, its team, its parts and the scheduler's state. */
export function turnHostOf(options: Pick<RunOptions, 'recording' | 'place'>, team: Team, progress: RunProgress, parts: TurnParts, state: TurnState): TurnHost {
  return {
    ...parts,
    ...state,
    journal: options.recording.journal,
    channel: team.channel,
    spawner: team.spawner,
    elsewhere: options.place.elsewhere,
    progress: progress.tell,
    reportProposal: progress.proposal,
  };
}
