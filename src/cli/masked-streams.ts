import type { Masker } from '../session/masker.js';

/**
 * Routes everything written to stdout and stderr through the masker (docs/design.md: secrets; every stream
 * conclave writes), the live view and the SDK's own warnings included. Returns the undo.
 */
export function maskStreams(masker: Masker): () => void {
  if (masker.empty) return () => {};
  const undo = [process.stdout, process.stderr].map((stream) => {
    const write = stream.write;
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      return (write as (...args: unknown[]) => boolean).call(stream, unmasked ? text : masker.text(text), ...rest);
    }) as typeof stream.write;
    return () => (stream.write = write);
  });
  return () => undo.forEach((u) => u());
}

let unmasked = false;

/** Writes what must name a secret to hide it (GitHub's `::add-mask::`), past the masks. */
export function writeUnmasked(write: () => void): void {
  unmasked = true;
  try {
    write();
  } finally {
    unmasked = false;
  }
}
