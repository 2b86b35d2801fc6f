import type { ModelRequest } from '../../provider/client.js';

/** A batch ends within 24 hours, or its requests expire. */
export const DEFAULT_WAIT_TIMEOUT_MS = 24 * 3_600_000;

/** The Message Batches API's limits on one batch. */
const MAX_REQUESTS = 100_000;
const MAX_BYTES = 256 * 1024 * 1024;

/** Calls split at the API's limits on one batch: 100,000 requests, 256 MB. */
export function parts<W extends { request: ModelRequest }>(waiters: W[], maxRequests = MAX_REQUESTS, maxBytes = MAX_BYTES): W[][] {
  const out: W[][] = [];
  let part: W[] = [];
  let bytes = 0;
  for (const w of waiters) {
    const size = Buffer.byteLength(JSON.stringify(w.request)) + 100;
    if (part.length > 0 && (part.length >= maxRequests || bytes + size > maxBytes)) {
      out.push(part);
      part = [];
      bytes = 0;
    }
    part.push(w);
    bytes += size;
  }
  if (part.length > 0) out.push(part);
  return out;
}

/** A limit's duration as the reason that names it says it. */
export function formatDuration(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;
}
