/** A warning of a run's setup or its stores (the cache, --coordinate), on stderr. */
export function warning(message: string): void {
  process.stderr.write(`conclave: warning: ${message}\n`);
}
