/** Deep equality of two JSON values, whatever the order of their keys. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/**
 * Whether `value` holds `part` (a test's expected tool input): every key of a mapping, recursively,
 * with the same value; anything else (a list, a text, a number) equal as sameJson says.
 */
export function holdsJson(value: unknown, part: unknown): boolean {
  if (part && typeof part === 'object' && !Array.isArray(part))
    return (
      !!value &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      Object.entries(part).every(([k, v]) => Object.hasOwn(value, k) && holdsJson((value as Record<string, unknown>)[k], v))
    );
  return sameJson(value, part);
}
