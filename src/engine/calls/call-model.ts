import type { CallListeners, ModelRequest, ModelResponse } from '../../provider/client.js';
import type { ProviderName } from '../../provider/clouds.js';
import type { Ceiling } from '../ceilings/reservation.js';

/** How a live model call is made: the provider's call, or a worker's (docs/workers.md). */
export type CallModel = (request: ModelRequest, signal: AbortSignal, listeners: CallListeners, provider: ProviderName) => Promise<ModelResponse>;

/** The spend pools shared across runs (docs/organisation.md), a ceiling every live call falls under. */
export type PoolsCeiling = Ceiling & {
  readonly specs: readonly { name: string; capUsd: number; per: string }[];
  /** The store, as the user may see it. */
  readonly store: string;
};
