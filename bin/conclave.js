#!/usr/bin/env node
import module from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

// Node 22.1 and later keep V8's compiled code of conclave's modules between runs: ~15 ms less at
// every start after the first (docs/BENCHMARKS.md). Node 20 has no such cache. The cache is the
// user's own directory, not the shared temporary one: compiled code is trusted as it is read.
// NODE_COMPILE_CACHE (another directory) and NODE_DISABLE_COMPILE_CACHE=1 are honoured by Node.
try {
  module.enableCompileCache?.(join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'conclave', 'compile-cache'));
} catch {
  // No home, or no room: the run starts as it would without a cache.
}
await import('../dist/conclave.js');
