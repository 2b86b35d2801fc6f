import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * A command that leaves its process group (`setsid cmd &`, a double fork) escapes the group's
 * kill. Every process it starts inherits its environment, so each command gets a variable of its
 * own (a cookie, as Jenkins marks a build's processes) and, once the command is over, every
 * process still carrying it is killed. Linux only (it reads /proc); a process that clears its
 * whole environment is not found (docs/security.md).
 */
export const COOKIE_NAME = 'CONCLAVE_COMMAND';

export function newCookie(): string {
  return randomBytes(12).toString('hex');
}

/** Kills every process whose environment holds the cookie, until none is left (a bounded number of rounds). */
export function sweep(cookie: string): number {
  const mark = Buffer.from(`\0${COOKIE_NAME}=${cookie}\0`);
  const first = Buffer.from(`${COOKIE_NAME}=${cookie}\0`);
  let killed = 0;
  for (let round = 0; round < 10; round++) {
    const found = carrying(mark, first);
    if (found.length === 0) break;
    for (const pid of found) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // gone already
      }
    }
  }
  return killed;
}

function carrying(mark: Buffer, first: Buffer): number[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  return pids.flatMap((name) => {
    const pid = Number(name);
    if (pid === process.pid) return [];
    try {
      const env = readFileSync(`/proc/${pid}/environ`);
      return env.subarray(0, first.length).equals(first) || env.includes(mark) ? [pid] : [];
    } catch {
      return [];
    }
  });
}
