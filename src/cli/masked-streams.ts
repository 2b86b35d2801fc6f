import { type Masker, setShownMasker } from '../session/masker.js';

let current: Masker | undefined;
let unmasked = false;

/**
 * Routes everything written to stdout and stderr through the masker (docs/design.md: secrets;
 * every stream conclave writes), the live view and the SDK's own warnings included. The streams
 * are wrapped once; a later call (a run's masker, which knows more secrets than the process's)
 * replaces the masker in force, so a write is masked once. Returns the undo.
 */
export function maskStreams(masker: Masker): () => void {
  if (masker.empty) return () => {};
  const before = current;
  if (current === undefined) {
    for (const stream of [process.stdout, process.stderr]) {
      const write = stream.write;
      stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
        const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
        return (write as (...args: unknown[]) => boolean).call(stream, unmasked || !current ? text : current.text(text), ...rest);
      }) as typeof stream.write;
    }
  }
  current = masker;
  setShownMasker(masker);
  return () => {
    current = before;
    setShownMasker(before);
  };
}

/** Writes what must name a secret to hide it (GitHub's `::add-mask::`), past the masks. */
export function writeUnmasked(write: () => void): void {
  unmasked = true;
  try {
    write();
  } finally {
    unmasked = false;
  }
}
