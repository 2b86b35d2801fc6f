import { cacheMissAdvice } from '../../session/cache-misses.js';
import type { SessionSummary } from '../../session/summary.js';
import { dollars, inline } from '../markdown-text.js';
import { thousands } from '../../thousands.js';

/** The lines `show` and the job summary give of what the prompt cache and message batches saved, and where the cache was missed. */

/** What the prompt cache read, wrote and saved: the calls' cost against the same calls with no cache. */
export function cacheLine(s: SessionSummary): string {
  const { read_tokens, written_tokens, saved_usd } = s.cache;
  if (read_tokens + written_tokens === 0) return '';
  const saved = saved_usd >= 0 ? `${dollars(saved_usd)} saved against no cache` : `${dollars(-saved_usd)} more than with no cache`;
  const tokens = thousands;
  return `Prompt cache: ${tokens(read_tokens)} input tokens read from it, ${tokens(written_tokens)} written; ${saved} (list prices)`;
}

/** The prompt-cache misses the API diagnosed: by agent, why, the tokens that were written again, and what to change. */
export function cacheMissLines(s: SessionSummary): string[] {
  return s.cache_misses.map(
    (m) =>
      `Cache miss: @${inline(m.agent)}, ${m.reason.replace('_', ' ')}: ${thousands(m.missed_tokens)} tokens not read from the cache; ${cacheMissAdvice(m)}`,
  );
}

/** The calls a server-side fallback answered: by agent, the model that answered and was paid for. */
export function fallbackLines(s: SessionSummary): string[] {
  return s.fallbacks.map((f) => {
    const calls = `${f.calls} call${f.calls === 1 ? '' : 's'}`;
    return `Fallback: @${inline(f.agent)}'s model declined ${calls}, answered by ${inline(f.model)} (priced as ${inline(f.model)})`;
  });
}

/** What the Message Batches API's half price saved, when batches answered any call. */
export function batchLine(s: SessionSummary): string {
  const { calls, saved_usd, parked, parked_ms } = s.batches;
  if (calls === 0 && parked === 0) return '';
  // A run parked only for people's votes made no batch: its parks are said alone.
  if (calls === 0) return `Parked ${parked} time${parked === 1 ? '' : 's'}, ${waited(parked_ms)} between its processes`;
  const parkedText = parked ? `; parked ${parked} time${parked === 1 ? '' : 's'}, ${waited(parked_ms)} between its processes` : '';
  const answered = `${calls} call${calls === 1 ? '' : 's'} answered at half price`;
  return `Message batches: ${answered}, ${dollars(saved_usd)} saved against the same calls one by one${parkedText}`;
}

/** A wait, as a person reads it. */
function waited(ms: number): string {
  return ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : ms < 3_600_000 ? `${(ms / 60_000).toFixed(1)} min` : `${(ms / 3_600_000).toFixed(1)} h`;
}
