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

const PIECES = [
  ':',
  ' ',
  '-',
  '[',
  ']',
  '{',
  '}',
  '&a',
  '*a',
  '!!str',
  '|',
  '>',
  "'",
  '"',
  '#',
  '\t',
  '\n',
  '  ',
  '$<<',
  '>>',
  '(',
  ')',
  '||',
  '@',
  '%',
  '\\',
  '\u0000',
  '0',
  '-1',
  '1e999',
  'null',
  'true',
  '~',
  '<<: *a',
  '---',
  '...',
];

/** One random change to a text: a YAML-ish piece put in, a cut, a line doubled or swapped, the rest dropped. */
export function mutateText(text: string, rand: () => number): string {
  const at = Math.floor(rand() * (text.length + 1));
  const piece = PIECES[Math.floor(rand() * PIECES.length)]!;
  const lines = text.split('\n');
  switch (Math.floor(rand() * 6)) {
    case 0:
      return text.slice(0, at) + piece + text.slice(at);
    case 1:
      return text.slice(0, at) + text.slice(at + 1 + Math.floor(rand() * 8));
    case 2: {
      const i = Math.floor(rand() * lines.length);
      lines.splice(i, 0, lines[Math.floor(rand() * lines.length)]!);
      return lines.join('\n');
    }
    case 3: {
      const i = Math.floor(rand() * lines.length);
      const j = Math.floor(rand() * lines.length);
      [lines[i], lines[j]] = [lines[j]!, lines[i]!];
      return lines.join('\n');
    }
    case 4:
      return text.slice(0, at);
    default:
      return text.slice(0, at) + piece.repeat(1 + Math.floor(rand() * 50)) + text.slice(at);
  }
}
