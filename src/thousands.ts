/**
 * An integer as `n.toLocaleString('en-US')` writes it (a comma between groups of three digits),
 * without Intl: the first use of a locale's number format loads ICU's data, ~20 ms on Node 20 and
 * ~30 ms on Node 24, which every run paid at its start (docs/BENCHMARKS.md). Anything else (a
 * fraction, an infinity, 1e21 and over) is left to `toLocaleString`.
 */
export function thousands(n: number): string {
  if (!Number.isSafeInteger(n)) return n.toLocaleString('en-US');
  const digits = Math.abs(n).toString();
  let grouped = digits;
  for (let at = digits.length - 3; at > 0; at -= 3) grouped = `${grouped.slice(0, at)},${grouped.slice(at)}`;
  return n < 0 || Object.is(n, -0) ? `-${grouped}` : grouped;
}
