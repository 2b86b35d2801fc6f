import { execFileSync } from 'node:child_process';

/**
 * A Node 24 to run the built CLI with (the Action's runtime, and the one with node:sqlite): this
 * one when it is 24 or later, else the `node@24` package from npm (`npx -y node@24`, cached after
 * the first time). Undefined, with why, where neither can be had.
 */
export function node24(): { node?: string; why?: string } {
  if (Number(process.versions.node.split('.')[0]) >= 24) return { node: process.execPath };
  try {
    const node = execFileSync('npx', ['-y', 'node@24', '-p', 'process.execPath'], {
      encoding: 'utf8',
      timeout: 180_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return node ? { node } : { why: 'npx -y node@24 printed nothing' };
  } catch (e) {
    return { why: `npx -y node@24 failed: ${(e as Error).message.split('\n')[0]}` };
  }
}
