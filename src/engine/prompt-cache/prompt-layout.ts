import type { EventOf } from '../../session/format.js';
import type { CacheTtl } from '../../workflow/types.js';
import type { Workflow } from '../../workflow/load.js';
import { cacheTtlOf } from './cache-warming.js';
import type { RecordingIndex } from '../replay/recording-index.js';

/**
 * How the run lays out its prompts for the prompt cache, fixed when it starts and recorded in
 * `run_started`, so that a resume or a replay sends the requests the recorded run sent.
 */
export interface PromptLayout {
  /** How long the prompt cache keeps the run's writes (cacheTtlOf). */
  cacheTtl: CacheTtl;
  /** Every agent of the `context:` is sent the team's coordination tools (team-tools.ts). */
  sharedTools: boolean;
}

/** The recorded run's layout; a new run's: its ttl, and one tool list for a workflow with a `context:`. */
export function promptLayoutOf(
  workflow: Pick<Workflow, 'spec' | 'batched'>,
  park: boolean,
  recorded: Pick<RecordingIndex, 'cacheTtl' | 'sharedTools'>,
): PromptLayout {
  return { cacheTtl: cacheTtlOf(workflow, park, recorded.cacheTtl), sharedTools: recorded.sharedTools ?? typeof workflow.spec.context === 'string' };
}

/** The layout as `run_started` records it: only what differs from a run recorded before either existed. */
export function layoutFields(layout: PromptLayout): Partial<Pick<EventOf<'run_started'>, 'cache_ttl' | 'shared_tools'>> {
  return { ...(layout.cacheTtl === '1h' ? { cache_ttl: '1h' as const } : {}), ...(layout.sharedTools ? { shared_tools: true } : {}) };
}
