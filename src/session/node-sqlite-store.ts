import { EventEmitter } from 'node:events';

/** The part of node:sqlite this store uses (Node 22.5 and later). */
export interface Database {
  exec(sql: string): void;
  prepare(sql: string): { get(...params: unknown[]): unknown; run(...params: unknown[]): unknown };
  close(): void;
}

export type DatabaseClass = new (path: string) => Database;

/** SQLite's result codes that a user meets, by number, so errors read as @keyv/sqlite's do. */
const CODES: Record<number, string> = {
  5: 'SQLITE_BUSY',
  8: 'SQLITE_READONLY',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  26: 'SQLITE_NOTADB',
};

/**
 * The response cache's SQLite file on Node's own `node:sqlite`: no native module to build at
 * install. A keyv store (keyv keeps the values serialised, and their expiry, itself), in the same
 * table @keyv/sqlite uses, so a cache file serves either. Errors carry SQLite's code name.
 */
export class NodeSqliteStore extends EventEmitter {
  readonly opts = { dialect: 'sqlite' };
  namespace?: string;
  private readonly db: Database;

  constructor(path: string, DatabaseSync: DatabaseClass) {
    super();
    this.db = named(() => {
      const db = new DatabaseSync(path);
      db.exec('CREATE TABLE IF NOT EXISTS keyv (key VARCHAR(255) PRIMARY KEY, value TEXT)');
      return db;
    });
  }

  async get(key: string): Promise<string | undefined> {
    const row = named(() => this.db.prepare('SELECT value FROM keyv WHERE key = ?').get(key)) as { value?: string } | undefined;
    return row?.value ?? undefined;
  }

  async set(key: string, value: unknown): Promise<boolean> {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    named(() => this.db.prepare('INSERT INTO keyv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, text));
    return true;
  }

  async delete(key: string): Promise<boolean> {
    const result = named(() => this.db.prepare('DELETE FROM keyv WHERE key = ?').run(key)) as { changes?: number };
    return (result.changes ?? 0) > 0;
  }

  async clear(): Promise<void> {
    named(() =>
      this.db.prepare(this.namespace ? 'DELETE FROM keyv WHERE key LIKE ?' : 'DELETE FROM keyv').run(...(this.namespace ? [`${this.namespace}:%`] : [])),
    );
  }

  async has(key: string): Promise<boolean> {
    return (await this.get(key)) !== undefined;
  }

  async disconnect(): Promise<void> {
    this.db.close();
  }
}

/** Runs `work`; an SQLite error comes out as `SQLITE_NAME: message`, as @keyv/sqlite's do. */
function named<T>(work: () => T): T {
  try {
    return work();
  } catch (e) {
    const error = e as Error & { errcode?: number; errstr?: string };
    const name = error.errcode !== undefined ? (CODES[error.errcode & 0xff] ?? `SQLITE_ERROR(${error.errcode})`) : undefined;
    throw name ? new Error(`${name}: ${error.errstr ?? error.message}`) : error;
  }
}
