import { UsageError } from '../conclave-error.js';
import { closeSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';

/** Someone else is writing the session. */
export class SessionLockedError extends UsageError {}

/** A takeover file older than this was left by a process killed while taking over: it is void. */
const STALE_TAKEOVER_MS = 10_000;

/**
 * Takes `PATH.lock` for this process: one writer per session file (docs/design.md: secrets). The lock is
 * created atomically (O_EXCL). A lock whose process is gone (a crash, a kill -9) is taken over by
 * exactly one process: it must first create `PATH.lock.takeover` atomically, check the lock
 * still names the dead process, and replace it by an atomic rename. Returns the release.
 */
export function lockSession(path: string): () => void {
  const lock = `${path}.lock`;
  const mine = String(process.pid);
  for (let attempt = 0; attempt < 3; attempt++) {
    if (create(lock, mine)) return release(lock, mine);
    const holder = holderOf(lock);
    if (holder === undefined) continue; // released meanwhile: try again
    if (holder !== process.pid && isAlive(holder)) throw locked(path, holder);
    if (takeOver(lock, holder, mine)) return release(lock, mine);
  }
  const holder = holderOf(lock);
  throw holder ? locked(path, holder) : new SessionLockedError(`could not lock ${path}`);
}

/** Replaces a lock left by the dead process `stale` with one naming `mine`; false when another process got there first. */
export function takeOver(lock: string, stale: number, mine: string): boolean {
  const takeover = `${lock}.takeover`;
  if (!create(takeover, mine)) {
    try {
      if (Date.now() - statSync(takeover).mtimeMs > STALE_TAKEOVER_MS) unlinkSync(takeover);
    } catch {
      // gone already
    }
    return false;
  }
  try {
    // Another process may have taken it over and released the takeover before we created ours.
    if (holderOf(lock) !== stale) return false;
    const next = `${lock}.${mine}`;
    writeFileSync(next, mine);
    renameSync(next, lock);
    return true;
  } finally {
    unlinkSync(takeover);
  }
}

function create(file: string, content: string): boolean {
  try {
    const fd = openSync(file, 'wx');
    writeSync(fd, content);
    closeSync(fd);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

/** The pid a lock names; undefined when there is no lock. A lock naming no pid counts as stale. */
function holderOf(lock: string): number | undefined {
  try {
    const pid = Number(readFileSync(lock, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : 0;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** Releases the lock only while it is still this process's. */
function release(lock: string, mine: string): () => void {
  return () => {
    try {
      if (readFileSync(lock, 'utf8').trim() === mine) unlinkSync(lock);
    } catch {
      // already gone
    }
  };
}

function locked(path: string, holder: number): SessionLockedError {
  return new SessionLockedError(`${path} is being written by another conclave (process ${holder}); wait for it to end, or stop it`);
}

function isAlive(pid: number): boolean {
  if (pid === 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
