import type { LimitName } from '../../engine/ending.js';
import type { RunResult } from '../../engine/run-options.js';
import { formatUsd } from '../../provider/money.js';
import { printable } from './terminal-text.js';

const FLAG_OF: Partial<Record<LimitName, string>> = {
  budget_usd: '--budget-usd',
  max_turns: '--max-turns',
  max_turns_per_agent: '--max-turns-per-agent',
  max_tokens_total: '--max-tokens-total',
  timeout: '--timeout',
  max_estimate_usd: '--max-estimate-usd',
};

/** The run's result as a person reads it at the end of the output. */
export function resultText(result: RunResult, session: string, replayOf?: string): string {
  const lines = [`conclave: ${result.status} — ${result.reason}`];
  // A parked run has no result yet: its summary and outputs would be empty or half made.
  const parked = result.status === 'waiting';
  if (result.summary && !parked) lines.push('', result.summary.trim(), '');
  for (const [name, value] of Object.entries(parked ? {} : result.outputs)) lines.push(`output ${name}: ${value.includes('\n') ? `\n${value}` : value}`);
  for (const error of result.outputErrors) lines.push(`output error: ${error}`);
  const { usage, costUsd } = result.usage;
  const batched = result.batches?.calls ?? 0;
  if (batched > 0)
    lines.push(`message batches: ${batched} call${batched === 1 ? '' : 's'} answered at half price, ${formatUsd(result.batches!.saved_usd)} saved`);
  lines.push(
    `usage: ${usage.input_tokens} input + ${usage.output_tokens} output tokens (prompt cache: ${usage.cache_read_input_tokens} read, ` +
      `${usage.cache_creation_input_tokens} written${savedNote(result)}) · ${formatUsd(costUsd)} of ${formatUsd(result.limits.budgetUsd)}${paidNote(result)}`,
  );
  // A replay's own file holds only what the replay added: the transcript is the recording's.
  lines.push(
    replayOf
      ? `session: ${session} (what the replay added; the transcript: conclave show ${replayOf})`
      : `session: ${session} (the transcript: conclave show ${session})`,
  );
  const next = replayOf ? replayHint(result) : resumeHint(result, session);
  if (next) lines.push(next);
  return `${printable(lines.join('\n'))}\n`;
}

/** What the prompt cache saved against the same calls with no cache (or cost more, when it was written and little read). */
function savedNote(result: RunResult): string {
  const saved = result.promptCache.saved_usd;
  if (result.promptCache.read_tokens + result.promptCache.written_tokens === 0) return '';
  // Parked, a prefix is written before the calls that read it are answered: no saving to tell yet.
  if (saved < 0 && result.status === 'waiting') return ', the reads of what was written come with the batch';
  return saved >= 0 ? `, ${formatUsd(saved)} saved against no cache` : `, ${formatUsd(-saved)} more than with no cache`;
}

/** Whether this process paid for what the usage line counts: a replay or resume pays nothing for recorded answers. */
function paidNote(result: RunResult): string {
  const { calls, tokens } = result.cached;
  const fromCache = calls > 0 ? ` · ${calls} answer${calls === 1 ? '' : 's'} (${tokens} tokens) from the cache, not counted: they cost nothing` : '';
  return costNote(result) + fromCache;
}

function costNote(result: RunResult): string {
  const { costUsd } = result.usage;
  if (costUsd === 0 || Math.abs(result.paidUsd - costUsd) < 1e-9) return '';
  if (result.paidUsd === 0) return ' · nothing paid now: every answer came from the recording or the cache';
  return ` · ${formatUsd(result.paidUsd)} paid now, the rest came from the recording or the cache`;
}

/** A replay that stopped: where it differs is said above; resuming would go live and pay, so it is not suggested. */
function replayHint(result: RunResult): string | undefined {
  if (result.exitCode === 0) return undefined;
  return 'the replay made no model call and paid nothing; it is a check of the workflow against the recording, not a run to continue';
}

/** How to go on from a run that stopped before its work was done. */
function resumeHint(result: RunResult, session: string): string | undefined {
  const ballot = result.waitingFor?.[0]?.ballot;
  if (result.status === 'waiting' && ballot) {
    const comment = ballot.commands[ballot.options[0]!];
    return `to vote: conclave resume ${session} --vote ${ballot.proposal}=OPTION --voter LOGIN --digest ${ballot.digest} (or comment ${comment})`;
  }
  if (result.status === 'waiting') return `to go on once the batch has ended: conclave resume ${session} (it parks again until then)`;
  if (!['limit', 'interrupted', 'provider_error', 'error'].includes(result.status) || result.outputErrors.length > 0 || result.repeats) return undefined;
  if (result.limit === 'spend_limit') return `to continue once the spend limit is raised: conclave resume ${session}`;
  if (result.limit === 'spend_pool') return `to continue once the pool has room: conclave resume ${session}, with the same --coordinate and --spend-pool`;
  const flag = result.limit ? FLAG_OF[result.limit] : undefined;
  return `to continue: conclave resume ${session}${flag ? ` ${flag} <a larger value>` : ''}`;
}
