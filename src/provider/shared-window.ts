/**
 * The fixed window that shares a limit of `points` per `ms` (refilled continuously) without
 * passing it: P points per T whole seconds with 2P ≤ points (two windows back to back) and
 * P / T ≤ points / ms (the refill). Of the fastest, the one with the most points (the largest first burst).
 */
export function sharedWindow(points: number, ms: number): { perWindow: number; seconds: number } {
  let best = { perWindow: 1, seconds: Math.ceil(ms / 1000) };
  for (let seconds = 1; seconds <= Math.ceil(ms / 1000); seconds++) {
    const perWindow = Math.min(Math.floor(points / 2), Math.floor((points * seconds * 1000) / ms));
    if (perWindow < 1) continue;
    if (perWindow * best.seconds >= best.perWindow * seconds) best = { perWindow, seconds };
  }
  return best;
}
