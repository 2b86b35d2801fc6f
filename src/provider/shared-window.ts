/**
 * The fixed window that shares a limit of `points` per `ms` without passing it: P points per T
 * whole seconds, no faster than the limit (P / T ≤ points / ms), and never more than the limit in
 * any stretch the server counts. A token bucket (refilled continuously) holds `points` at most:
 * two windows back to back, 2P ≤ points. A fixed or sliding window (`windowLike`) counts any
 * stretch of `ms`, which meets up to ⌈ms / T⌉ + 1 of the fixed windows. Of the fastest, the one
 * with the most points (the largest first burst).
 */
export function sharedWindow(points: number, ms: number, windowLike = false): { perWindow: number; seconds: number } {
  let best = { perWindow: 1, seconds: Math.ceil(ms / 1000) };
  for (let seconds = 1; seconds <= Math.ceil(ms / 1000); seconds++) {
    const inStretch = windowLike ? Math.ceil(ms / (seconds * 1000)) + 1 : 2;
    const perWindow = Math.min(Math.floor(points / inStretch), Math.floor((points * seconds * 1000) / ms));
    if (perWindow < 1) continue;
    if (perWindow * best.seconds >= best.perWindow * seconds) best = { perWindow, seconds };
  }
  return best;
}
