import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { SessionRecord } from '../session/reader.js';
import { isFinished } from '../session/recording.js';

/** A run's newest generation as this project's `.conclave/runs/RUN_ID.json` notes it. */
export interface NotedGeneration {
  generation: number;
  status: string;
  session: string;
}

/** Where a project's notes are; a run id names a file there only when it could name no other. */
const runsOf = (cwd: string) => join(cwd, '.conclave', 'runs');
const isRunId = (runId: string) => /^[A-Za-z0-9._-]{1,100}$/.test(runId);

/**
 * Notes, beside the project's sessions, the newest generation of a run (1 + its resumes) and how
 * it stopped, so that a copy of an older generation (a session file copied before it was resumed)
 * is refused on resume, as the Action refuses a stale artifact: resuming it would make and pay
 * for again what the newer one holds (docs/session-format.md: generations). A note that cannot be
 * written is skipped: it only guards.
 */
export function noteGeneration(cwd: string, runId: string, noted: NotedGeneration): void {
  if (!isRunId(runId)) return;
  try {
    const dir = runsOf(cwd);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${runId}.json`);
    const known = notedGeneration(cwd, runId);
    if (known && known.generation > noted.generation) return;
    writeFileSync(`${file}.tmp`, `${JSON.stringify({ ...noted, session: resolve(noted.session) })}\n`);
    renameSync(`${file}.tmp`, file);
  } catch {
    // a read-only or full disk: the guard is skipped, the run's result stands
  }
}

/** The newest generation noted for a run, if any (a note that is not one is ignored). */
export function notedGeneration(cwd: string, runId: string): NotedGeneration | undefined {
  if (!isRunId(runId)) return undefined;
  try {
    const noted = JSON.parse(readFileSync(join(runsOf(cwd), `${runId}.json`), 'utf8')) as Partial<NotedGeneration>;
    if (!Number.isSafeInteger(noted.generation) || typeof noted.status !== 'string' || typeof noted.session !== 'string') return undefined;
    return noted as NotedGeneration;
  } catch {
    return undefined;
  }
}

/** A session's generation: 1, and one more for each time it was resumed (as the Action names its copies, -gN-). */
export function generationOf(record: Pick<SessionRecord, 'events'>): number {
  return 1 + record.events.filter((e) => e.type === 'resumed').length;
}

/**
 * Whether what was noted of a run makes `record` an older copy of it: a newer generation was
 * written, or the run was closed as stale in another file since this copy was taken (a close
 * writes no resume, so it adds no generation). Resuming it would make, and pay for, again what
 * the other holds. The noted file itself, cut short since, is the user's to resume.
 */
export function supersedes(noted: NotedGeneration, record: SessionRecord): boolean {
  const generation = generationOf(record);
  if (noted.generation !== generation) return noted.generation > generation;
  return noted.status === 'stale' && !isFinished(record) && resolve(noted.session) !== resolve(record.path);
}
