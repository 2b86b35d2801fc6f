import { findBubblewrap } from '../../src/agents/tools/sandbox.js';

/**
 * bubblewrap for the sandbox tests. Where it cannot run they skip loudly, unless
 * CONCLAVE_REQUIRE_SANDBOX is set (as .ci/run sets it), where they fail: CI must not pass a
 * sandbox suite it never ran.
 */
export function sandboxForTests(): { bwrap?: string; why?: string } {
  const found = findBubblewrap();
  if (found.bwrap) return found;
  if (process.env.CONCLAVE_REQUIRE_SANDBOX) throw new Error(`the sandbox tests must run here, but ${found.why} (apt-get install bubblewrap)`);
  process.stderr.write(`\n*** SKIPPING the sandbox tests: ${found.why} (apt-get install bubblewrap) ***\n\n`);
  return found;
}
