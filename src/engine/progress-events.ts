import type { WaitReason } from '../provider/rates/pacer.js';

/** What the engine tells whoever shows a run's progress (the terminal, CI logs). */
export type ProgressEvent =
  | { type: 'setup'; id: string; state: 'running' | 'done' | 'failed' }
  | { type: 'turn_started'; agent: string; turn: number; messages: number }
  | { type: 'thinking'; agent: string; step: number }
  | { type: 'tool'; agent: string; tool: string }
  | { type: 'posted'; agent: string; recipients: string[]; text: string }
  | { type: 'retry'; agent: string; error: string; waitMs: number }
  /** A call waits for a rate limit (docs/organisation.md: pacing); `waitMs` is how long at most before it looks again. */
  | { type: 'waiting'; agent: string; reason: WaitReason; waitMs: number }
  | { type: 'turn_ended'; agent: string; turn: number; recipients: string[] | null; costUsd: number; tokens: number }
  | { type: 'turn_failed'; agent: string; turn: number; error: string }
  | { type: 'proposal'; id: string; status: string; winner: string | null }
  | { type: 'warning'; message: string }
  /** Nothing else runs: the run waits in process for people's votes (docs/workflow.md: votes from people). */
  | { type: 'people'; waits: { proposal: string; seats: string[] }[] }
  /** An agent's conversation was kept within its compact_at: old tool results cleared, earlier turns summarised (docs/design.md: context). */
  | { type: 'compacted'; agent: string; reason: 'threshold' | 'too_long'; tokensBefore: number; tokensAfter: number; cleared: number; summarised: boolean }
  /** A turn went on past a stop reason, or ended on one, other than a finished answer (docs/design.md: models). */
  | { type: 'stop_reason'; agent: string; reason: 'max_tokens' | 'pause_turn' | 'refusal'; tool?: string }
  /** An agent's call waits for its message batch (`batch: true`). */
  | { type: 'batched'; agent: string }
  /** Calls of agents with `batch: true`: a message batch submitted, still being processed when polled, or ended. */
  | { type: 'batch'; batch: string; requests: number; state: 'submitted' | 'waiting' | 'ended' };

export type ProgressListener = (event: ProgressEvent) => void;
