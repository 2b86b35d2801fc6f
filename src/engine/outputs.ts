import { isPerson } from '../session/person.js';
import type { DocumentView, ProposalView } from '../channel/channel.js';
import type { Scope } from '../workflow/evaluate.js';
import { fillTemplate, UnresolvedValueError } from '../workflow/fill.js';
import type { Limits } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { BatchUse, PromptCacheUse, Spend } from './ceilings/accounting.js';
import type { Ending } from './ending.js';
import { runEnded } from '../session/recording.js';
import { SessionWriteError } from '../session/writer.js';
import type { Journal } from './replay/journal.js';
import type { CacheMiss } from '../session/cache-misses.js';
import type { FallbackAnswers } from './calls/model-calls.js';
import type { RunResult } from './run-options.js';

export interface RunFacts {
  agents: Record<string, { last_message: string; turns: number; spend: Spend }>;
  proposals: ProposalView[];
  /** The documents as the run ends with them. */
  documents: Record<string, DocumentView>;
  /** Writes the documents with `write_to` (not when the run stopped inside its recording); what could not be written. */
  writeDocuments(documents: Record<string, DocumentView>): string[];
  total: Spend;
  paidUsd: number;
  cached: { calls: number; tokens: number };
  promptCache: PromptCacheUse;
  batches?: BatchUse;
  cacheMisses: readonly CacheMiss[];
  fallbacks: readonly FallbackAnswers[];
  limits: Limits;
  waitingFor?: RunResult['waitingFor'];
}

/**
 * How the run ended, with the workflow's `outputs` evaluated (those that could not be, with where
 * and why: a run that completed with such an error exits 1). No scope: the run ended in setup.
 */
export function runResult(end: Ending, workflow: Workflow, scope: Scope | undefined, facts: RunFacts): RunResult {
  const { total, proposals } = facts;
  const outputs: Record<string, string> = {};
  const errors: string[] = [];
  if (scope) {
    const final: Scope = {
      ...scope,
      result: { status: end.status, summary: end.summary },
      agents: Object.fromEntries(Object.entries(facts.agents).map(([n, a]) => [n, { last_message: a.last_message, turns: a.turns }])),
      proposals: Object.fromEntries(
        proposals.map((p) => [p.id, { question: p.question, status: p.status, winner: p.winner, tally: p.tally, decided_by: decidedBy(p) }]),
      ),
      documents: Object.fromEntries(Object.entries(facts.documents).map(([name, d]) => [name, d.text])),
      usage: { input_tokens: total.usage.input_tokens, output_tokens: total.usage.output_tokens, cost_usd: Number(total.costUsd.toFixed(6)) },
    };
    // Typed outputs as the lead gave them: strings as they are, other values as JSON.
    for (const [name, value] of Object.entries(end.outputs ?? {})) outputs[name] = typeof value === 'string' ? value : JSON.stringify(value);
    for (const [key, template] of workflow.templates) {
      if (template.field !== 'outputs') continue;
      try {
        outputs[key.slice('outputs.'.length)] = fillTemplate(template, final);
      } catch (e) {
        if (!(e instanceof UnresolvedValueError)) throw e;
        errors.push(e.message);
      }
    }
  }
  errors.push(...facts.writeDocuments(facts.documents));
  // A run whose outputs could not all be evaluated did not succeed, whatever the lead said: the
  // status says so as the exit code does (exit 1), in the result, --json and the Action's outputs.
  const failedOutputs = end.exitCode === 0 && errors.length > 0;
  return {
    ...end,
    ...(failedOutputs
      ? {
          status: 'error' as const,
          reason:
            `${end.reason}, but ${errors.length === 1 ? 'an output' : `${errors.length} outputs`} could not be evaluated or written (fix the workflow's ` +
            `outputs or write_to: the run's work is in the session)`,
        }
      : {}),
    exitCode: failedOutputs ? 1 : end.exitCode,
    outputs,
    outputErrors: errors,
    usage: total,
    agents: Object.fromEntries(Object.entries(facts.agents).map(([n, a]) => [n, { turns: a.turns, spend: a.spend }])),
    proposals,
    documents: facts.documents,
    paidUsd: facts.paidUsd,
    cached: facts.cached,
    promptCache: facts.promptCache,
    cacheMisses: facts.cacheMisses,
    fallbacks: facts.fallbacks,
    ...(facts.batches ? { batches: facts.batches } : {}),
    ...(facts.waitingFor ? { waitingFor: facts.waitingFor } : {}),
    limits: facts.limits,
  };
}

/**
 * Writes how the run ended. A run stopped while it re-executed its recording, or that diverged
 * from it, adds nothing: the session stays as it was, and can be resumed again. A session that
 * cannot be written any more (a full disk) is left as it is: the run already says why.
 */
export function recordEnd(journal: Journal, result: RunResult): void {
  if (journal.replaying || journal.diverged) return;
  const { status, exitCode, reason, summary, outputs, outputErrors, usage } = result;
  try {
    journal.append(runEnded(status, reason, { exit_code: exitCode, summary, outputs, output_errors: outputErrors, usage }));
    journal.sync();
  } catch (e) {
    if (!(e instanceof SessionWriteError)) throw e;
  }
}

/** Who decided a proposal, for `proposals.ID.decided_by`: the people, the agents, or both; empty while it is not decided. */
function decidedBy(p: { status: string; voters: readonly string[] }): string {
  if (p.status !== 'decided') return '';
  const people = p.voters.filter(isPerson).length;
  return people === p.voters.length ? 'people' : people === 0 ? 'agents' : 'people and agents';
}
