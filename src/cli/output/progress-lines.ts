import type { ProgressEvent } from '../../engine/progress-events.js';
import { formatUsd } from '../../provider/money.js';
import { printable } from './terminal-text.js';
import { thousands } from '../../thousands.js';

export const STOP_WORDS = {
  max_tokens: 'answer cut off at max_tokens: continuing',
  pause_turn: 'answer paused by the API: continuing',
  refusal: 'declined to answer (refusal): nothing posted',
} as const;

/** What a call waits for, in words. */
export const WAIT_WORDS = {
  requests: 'the rate limit on requests',
  input_tokens: 'the rate limit on input tokens',
  output_tokens: 'the rate limit on output tokens',
  retry_after: "the API's retry-after",
} as const;

/** Progress as plain lines, each with a time and the agent it concerns: for CI logs and pipes. */
export function progressLines(write: (line: string) => void, mask: (text: string) => string = (t) => t): (event: ProgressEvent) => void {
  return (event) => {
    // Masked before a line is shortened: a secret cut in two would not be recognised.
    const line = describe(event.type === 'posted' ? { ...event, text: mask(event.text) } : event);
    if (line) write(`${new Date().toISOString().slice(11, 19)} ${printable(line)}\n`);
  };
}

const BATCH_WORDS = { submitted: 'submitted', waiting: 'still processing', ended: 'answered' } as const;

function describe(e: ProgressEvent): string | undefined {
  switch (e.type) {
    case 'setup':
      return `setup ${e.id}: ${e.state}`;
    case 'turn_started':
      return `@${e.agent} turn ${e.turn}: ${e.messages} new message${e.messages === 1 ? '' : 's'}`;
    case 'thinking':
      return e.step > 1 ? `@${e.agent} thinking (call ${e.step})` : `@${e.agent} thinking`;
    case 'tool':
      return `@${e.agent} using ${e.tool}`;
    case 'posted': {
      const to = e.recipients.length ? e.recipients.map((r) => `@${r}`).join(', ') : 'no one';
      const first = e.text.split('\n')[0]!;
      return `@${e.agent} → ${to}: ${first.length > 100 ? `${first.slice(0, 99)}…` : first}${e.text.includes('\n') ? ' …' : ''}`;
    }
    case 'retry':
      return `@${e.agent} retrying in ${(e.waitMs / 1000).toFixed(1)} s: ${e.error}`;
    case 'waiting':
      return `@${e.agent} waiting for ${WAIT_WORDS[e.reason]}`;
    case 'batched':
      return undefined; // the batch's own lines say it, once for all its calls
    case 'batch':
      return `message batch ${e.batch}: ${e.requests} request${e.requests === 1 ? '' : 's'} ${BATCH_WORDS[e.state]}`;
    case 'turn_ended':
      return `@${e.agent} turn ${e.turn} done · ${e.tokens} tokens · ${formatUsd(e.costUsd)}`;
    case 'turn_failed':
      return `@${e.agent} turn ${e.turn} failed: ${e.error}`;
    case 'proposal':
      return `proposal ${e.id}: ${e.status.replace('_', ' ')}${e.winner ? ` "${e.winner}"` : ''}`;
    case 'warning':
      return `warning: ${e.message}`;
    case 'people':
      return `waiting for ${e.waits.map((w) => `a vote from ${w.seats.join(', ')} on ${w.proposal}`).join('; ')}`;
    case 'compacted':
      return `@${e.agent} ${compactionWords(e)}`;
    case 'stop_reason':
      return `@${e.agent} ${STOP_WORDS[e.reason]}${e.tool ? ` (its call of ${e.tool} was cut off and not run)` : ''}`;
  }
}

/** "compacted its conversation: 150,000 → 4,000 tokens (12 old tool results cleared, earlier turns summarised)". */
export function compactionWords(e: Extract<ProgressEvent, { type: 'compacted' }>): string {
  const what = [e.cleared > 0 ? `${e.cleared} old tool result${e.cleared === 1 ? '' : 's'} cleared` : '', e.summarised ? 'earlier turns summarised' : '']
    .filter(Boolean)
    .join(', ');
  const why = e.reason === 'too_long' ? ', after the API refused it as too long' : '';
  return `compacted its conversation${why}: ${thousands(e.tokensBefore)} → ${thousands(e.tokensAfter)} tokens (${what})`;
}
