import type { Workspace } from '../agents/tools/workspace-root.js';
import type { Scope } from '../workflow/evaluate.js';
import type { Accounting } from './ceilings/accounting.js';
import type { AgentTable } from './agent-table.js';
import { ending, type Ending } from './ending.js';
import type { Journal } from './replay/journal.js';
import { describeEvent } from './replay/recorded-events.js';
import type { ModelCalls } from './calls/model-calls.js';
import { recordEnd, runResult } from './outputs.js';
import type { PeopleVotes } from './people-votes.js';
import { writeDocuments, type FirstTexts } from './run-documents.js';
import type { RunLimits } from './ceilings/run-limits.js';
import type { RunOptions, RunResult } from './run-options.js';
import type { Team } from './teams/team.js';
import type { TurnCounts } from './turn-counts.js';

/** What the run's end is made from: the scheduler's parts as they are when every turn has ended. */
export interface RunParts {
  team: Team | undefined;
  agents: AgentTable;
  turns: TurnCounts;
  accounting: Accounting;
  calls: ModelCalls;
  limits: RunLimits;
  people: PeopleVotes;
  workspace: Workspace;
  firstTexts: FirstTexts;
}

/**
 * The end of a run (docs/design.md: ending): its result with the outputs evaluated, the documents
 * written to their files (not when the run stopped inside its recording, or in a replay), the
 * spawned agents stopped, and `run_ended` recorded.
 */
export function endRun(options: Pick<RunOptions, 'workflow' | 'recording' | 'replay'>, given: Ending, scope: Scope | undefined, parts: RunParts): RunResult {
  const { workflow, recording, replay } = options;
  const { journal } = recording;
  const end = endedInsideRecording(journal, given);
  const { team, agents, turns, accounting, calls, people } = parts;
  const channel = team?.channel;
  const result = runResult(end, workflow, scope, {
    agents: agents.facts(
      (n) => channel?.lastMessageFrom(n)?.text ?? '',
      (n) => turns.of(n),
      (n) => accounting.of(n),
    ),
    proposals: channel?.allProposals() ?? [],
    documents: channel?.documents.final() ?? {},
    writeDocuments: (documents) =>
      replay || journal.replaying || journal.diverged ? [] : writeDocuments(workflow, documents, parts.workspace, parts.firstTexts, recording.mask),
    ...accounting.totals,
    ...(calls.batches ? { batches: { ...accounting.batched, ...calls.batches.reserved() } } : {}),
    cacheMisses: calls.cacheMisses,
    fallbacks: calls.fallbackAnswers,
    limits: parts.limits.current,
    ...(end.status === 'waiting' ? people.ballotsIfWaiting() : {}),
  });
  if (!journal.replaying && !journal.diverged) team?.spawner.stopAll(result.reason);
  people.warnUnused();
  recordEnd(journal, result);
  return result;
}

/**
 * A run that ended, by itself, before re-executing all its recording: the events it never reached
 * (a tail written into the file by hand, say) were neither produced nor checked, so the run is not
 * the recorded one. A signal's end stands: the run was stopped, not finished.
 */
function endedInsideRecording(journal: Journal, end: Ending): Ending {
  const unreached = journal.upcoming();
  if (!unreached || end.status === 'interrupted') return end;
  return ending(
    'error',
    `the run differs from the session at ${describeEvent(unreached)}: the run ended (${end.status}) before it reached this recorded event`,
  );
}
