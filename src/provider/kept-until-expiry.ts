/** A credential provider whose answer is kept until five minutes before it expires (for good, if it does not). */
export function keptUntilExpiry<T extends { expiration?: Date }>(provider: () => Promise<T>): () => Promise<T> {
  let held: { value: Promise<T>; until: number } | undefined;
  return () => {
    if (held && Date.now() < held.until) return held.value;
    const entry = { value: provider(), until: Infinity };
    held = entry;
    entry.value.then(
      (c) => (entry.until = c.expiration ? c.expiration.getTime() - 5 * 60_000 : Infinity),
      () => held === entry && (held = undefined),
    );
    return entry.value;
  };
}
