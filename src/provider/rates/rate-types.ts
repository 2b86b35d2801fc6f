import type { RateDimension } from './rate-headers.js';

/** What a call and the pacer exchange (pacer.ts, rate-gate.ts). */

/** What one HTTP request takes from each limit. */
export type CallNeed = Record<RateDimension, number>;

/** Limits given by the user, per minute (`--rate-limit rpm=N,itpm=N,otpm=N`). */
export type GivenLimits = Partial<Record<RateDimension, number>>;

/** Why a call waits: a limit, or a refusal's `retry-after`. */
export type WaitReason = RateDimension | 'retry_after';

/** Told when a call starts to wait, with how long it will wait at most before it asks again. */
export type WaitListener = (reason: WaitReason, ms: number) => void;

/** A call let through: given back to `observe` with what its response said. */
export interface Admission {
  readonly gate: string;
  readonly seq: number;
  /** When it was let through: its request left then. */
  readonly at: number;
  /** How long it waited, and for what (the last reason). */
  readonly waitedMs: number;
  readonly reason?: WaitReason;
}
