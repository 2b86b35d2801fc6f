import type { BatchApi } from '../../provider/batch-api.js';
import type { EventInput } from '../replay/journal.js';
import { isObject } from './batch-results.js';

/** How many of the workspace's newest batches are looked at for one that no event names. */
const NEWEST_LOOKED_AT = 100;

/**
 * Batches a process was stopped while creating (its session says `batch_creating` for their calls,
 * and no `batch_submitted`): the API may have created one, and answered it, after the process had
 * gone. Before those calls are sent again (and billed twice), the workspace's newest batches are
 * looked at: an ended one whose requests are exactly that group's is theirs, noted in the session
 * as submitted, and its answers taken. One still being processed cannot show its requests, so it
 * is not recognised: those calls are sent again (docs/security.md: answers from the API).
 */
export class InDoubtBatches {
  private readonly searches = new Map<string, Promise<string | undefined>>();

  constructor(
    private readonly api: BatchApi,
    private readonly note: (event: EventInput) => void,
  ) {}

  /** The batch of a group of calls the recording left in doubt, once per group; undefined when none is found. */
  find(group: readonly string[]): Promise<string | undefined> {
    const key = group.join('\n');
    let found = this.searches.get(key);
    if (!found) {
      found = this.search(group).then((id) => {
        if (id) this.note({ type: 'batch_submitted', batch_id: id, custom_ids: [...group] });
        return id;
      });
      this.searches.set(key, found);
    }
    return found;
  }

  private async search(group: readonly string[]): Promise<string | undefined> {
    const wanted = new Set(group);
    let looked = 0;
    try {
      for await (const batch of this.api.list()) {
        if (++looked > NEWEST_LOOKED_AT) break;
        if (!isObject(batch) || typeof batch.id !== 'string' || batch.processing_status !== 'ended' || requestsOf(batch) !== wanted.size) continue;
        const ids = new Set<string>();
        for await (const line of await this.api.results(batch.id)) if (isObject(line) && typeof line.custom_id === 'string') ids.add(line.custom_id);
        if (ids.size === wanted.size && [...wanted].every((id) => ids.has(id))) return batch.id;
      }
    } catch {
      // A list or a results file the API does not give: the calls are sent again, as the warning said.
    }
    return undefined;
  }
}

/** How many requests a batch says it holds (its counts added up), or -1 when it does not say. */
function requestsOf(batch: Record<string, unknown>): number {
  const counts = batch.request_counts;
  if (!isObject(counts)) return -1;
  const values = Object.values(counts);
  return values.every((v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) ? (values as number[]).reduce((a, b) => a + b, 0) : -1;
}
