import type { Pool } from 'pg';
import { pgCreateTables, type RedisScripts } from './store-atomic.js';

/** A run's newest generation, as a runner noted it (cli/run-generations.ts notes the same beside the sessions). */
export interface RunNote {
  generation: number;
  status: string;
  session: string;
}

/**
 * The newest generation of each run, kept in the --coordinate store every runner shares
 * (docs/organisation.md: runs), so that a copy of an older generation is refused on resume on any
 * machine, not only where the newer one was written. A note never goes back to an older
 * generation; notes are kept 90 days.
 */
export interface RunNotes {
  note(runId: string, noted: RunNote): Promise<void>;
  noted(runId: string): Promise<RunNote | undefined>;
}

const KEEP_MS = 90 * 24 * 3_600_000;

/** Sets the note unless the stored one is of a newer generation (one atomic script). */
const NOTE = `
local known = tonumber(redis.call('HGET', KEYS[1], 'generation') or '0') or 0
if known > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'generation', ARGV[1], 'status', ARGV[2], 'session', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`;

const READ = `return redis.call('HMGET', KEYS[1], 'generation', 'status', 'session')`;

export class RedisRunNotes implements RunNotes {
  constructor(private readonly client: RedisScripts) {}

  async note(runId: string, noted: RunNote): Promise<void> {
    await this.client.eval(NOTE, { keys: [keyOf(runId)], arguments: [String(noted.generation), noted.status, noted.session, String(KEEP_MS)] });
  }

  async noted(runId: string): Promise<RunNote | undefined> {
    const [generation, status, session] = (await this.client.eval(READ, { keys: [keyOf(runId)], arguments: [] })) as (string | null)[];
    return checked(generation, status, session);
  }
}

export class PostgresRunNotes implements RunNotes {
  constructor(private readonly pool: Pool) {}

  prepare(): Promise<void> {
    return pgCreateTables(this.pool, {
      conclave_runs: 'run_id text PRIMARY KEY, generation integer NOT NULL, status text NOT NULL, session text NOT NULL, noted_at timestamptz NOT NULL',
    });
  }

  async note(runId: string, noted: RunNote): Promise<void> {
    await this.pool.query(
      'INSERT INTO conclave_runs VALUES ($1, $2, $3, $4, now()) ON CONFLICT (run_id) DO UPDATE SET generation = EXCLUDED.generation, ' +
        'status = EXCLUDED.status, session = EXCLUDED.session, noted_at = EXCLUDED.noted_at WHERE conclave_runs.generation <= EXCLUDED.generation',
      [runId, noted.generation, noted.status, noted.session],
    );
    await this.pool.query(`DELETE FROM conclave_runs WHERE noted_at < now() - interval '90 days'`, []);
  }

  async noted(runId: string): Promise<RunNote | undefined> {
    const row = (await this.pool.query('SELECT generation, status, session FROM conclave_runs WHERE run_id = $1', [runId])).rows[0];
    return row ? checked(row.generation, row.status, row.session) : undefined;
  }
}

function keyOf(runId: string): string {
  return `conclave:run:${runId}`;
}

/** A note as stored, or nothing when the store holds something else there (a store is input too). */
function checked(generation: unknown, status: unknown, session: unknown): RunNote | undefined {
  const n = Number(generation);
  if (!Number.isSafeInteger(n) || n < 1 || typeof status !== 'string' || typeof session !== 'string') return undefined;
  return { generation: n, status, session };
}
