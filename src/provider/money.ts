/**
 * US dollars as people read them: cents from a dollar up, and three significant digits below,
 * so that a budget of $0.005 never shows as "$0.00".
 */
export function formatUsd(usd: number): string {
  if (!Number.isFinite(usd)) return `$${usd}`;
  if (usd === 0) return '$0.00';
  if (Math.abs(usd) >= 1) return `$${usd.toFixed(2)}`;
  const decimals = Math.min(10, Math.ceil(-Math.log10(Math.abs(usd))) + 2);
  return `$${usd.toFixed(decimals).replace(/(\.\d\d\d*?)0+$/, '$1')}`;
}
