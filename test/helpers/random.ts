/** A seeded random number generator (mulberry32): the fuzz tests print their seed, and FUZZ_SEED=N repeats a run. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Changes one place of a JSON value, in place: a key deleted (a quarter of the time, in an
 * object), or a value replaced by `replacement()`. False when the value has no place to change.
 */
export function mutateJson(value: unknown, rand: () => number, replacement: () => unknown): boolean {
  const nodes: { parent: Record<string, unknown> | unknown[]; key: string | number }[] = [];
  const visit = (v: unknown) => {
    if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        nodes.push({ parent: v as Record<string, unknown>, key: Array.isArray(v) ? Number(k) : k });
        visit(child);
      }
    }
  };
  visit(value);
  if (nodes.length === 0) return false;
  const { parent, key } = nodes[Math.floor(rand() * nodes.length)]!;
  if (rand() < 0.25 && !Array.isArray(parent)) delete parent[key as string];
  else (parent as Record<string | number, unknown>)[key] = replacement();
  return true;
}
