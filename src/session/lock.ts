import { openSync, readFileSync, unlinkSync, writeSync, closeSync } from 'node:fs';

/** Someone else is writing the session. */
export class SessionLockedError extends Error {}

/**
 * Takes `PATH.lock` for this process: one writer per session file. A lock left by a process
 * that no longer exists (a crash, a kill -9) is taken over. Returns the release function.
 */
export function lockSession(path: string): () => void {
  const lock = `${path}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          unlinkSync(lock);
        } catch {
          // already gone
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = Number(readFileSync(lock, 'utf8'));
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new SessionLockedError(`${path} is being written by another conclave (process ${holder}); wait for it to end, or stop it`);
      }
      unlinkSync(lock);
    }
  }
  throw new SessionLockedError(`could not lock ${path}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
