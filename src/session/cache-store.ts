import { UsageError } from '../conclave-error.js';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { NodeSqliteStore, type DatabaseClass } from './node-sqlite-store.js';
import { DEFAULT_CACHE, shownSpec } from '../provider/stores/store-url.js';

export { DEFAULT_CACHE, withoutCredentials } from '../provider/stores/store-url.js';

/** The cache could not be opened: a bad URL or file, an adapter that is not installed, a store that does not answer. */
export class CacheError extends UsageError {}

/** How long a store may take to connect before it is taken for unreachable. */
export const CONNECT_TIMEOUT_MS = 3_000;

/** A keyv store adapter for `--cache`, and how to name it to the user (no credentials). */
export interface CacheStore {
  store: unknown;
  shown: string;
  /** The SQLite file, for a file store. */
  file?: string;
}

/**
 * The keyv store of `--cache`: with no value, an SQLite file under .conclave/ (node:sqlite, or
 * @keyv/sqlite on a Node without it);
 * a file path or sqlite:// URL, that file; redis:// and postgres:// URLs go through @keyv/redis
 * and @keyv/postgres, found in the user's project (`cwd`) or beside conclave. Each is set up to
 * fail rather than wait: no reconnecting, no offline queue, bounded connection times.
 */
export async function cacheStore(spec: string | true, cwd: string): Promise<CacheStore> {
  const shown = shownSpec(spec);
  if (spec === true || spec.startsWith('sqlite://') || !/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    const path = resolve(cwd, spec === true ? DEFAULT_CACHE : spec.replace(/^sqlite:\/\//, ''));
    mkdirSync(dirname(path), { recursive: true });
    // Readable by its owner only: responses are masked, but they are another run's work.
    try {
      closeSync(openSync(path, 'a', 0o600));
    } catch {
      // SQLite says what is wrong with the file, in the error the user sees
    }
    // Node's own SQLite where there is one (22.5 and later): nothing native to build at install.
    const DatabaseSync = await nodeSqlite();
    if (DatabaseSync) {
      // Opening is where node:sqlite meets a file that is not a database (or a directory): say which.
      try {
        return { store: new NodeSqliteStore(path, DatabaseSync), shown, file: path };
      } catch (e) {
        throw new CacheError(`the response cache ${shown} cannot be used: ${(e as Error).message}`, { cause: e });
      }
    }
    const KeyvSqlite = await adapter('@keyv/sqlite', shown, cwd, `this Node (${process.version}) has no node:sqlite: use Node 22.5 or later, or `);
    return { store: new KeyvSqlite(`sqlite://${path}`), shown, file: path };
  }
  if (/^rediss?:\/\//.test(spec)) {
    const KeyvRedis = await adapter('@keyv/redis', shown, cwd);
    const client = { url: spec, disableOfflineQueue: true, socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: false } };
    return { store: new KeyvRedis(client, { throwOnConnectError: true, throwOnErrors: true, connectionTimeout: CONNECT_TIMEOUT_MS }), shown };
  }
  if (/^postgres(ql)?:\/\//.test(spec)) {
    const KeyvPostgres = await adapter('@keyv/postgres', shown, cwd);
    return {
      store: new KeyvPostgres({
        uri: spec,
        max: 4,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        allowExitOnIdle: true,
        // The adapter keeps its pg.Pool to itself, and a pool whose idle connection breaks (the
        // server stopped) emits 'error', which crashes a process that does not listen. pg-pool
        // calls `log` as a method of the pool before its first connection: the one place to
        // attach a listener. The failure itself reaches the next cache operation, which reports it.
        log(this: NodeJS.EventEmitter) {
          if (this.listenerCount('error') === 0) this.on('error', () => {});
        },
      }),
      shown,
    };
  }
  throw new CacheError(`--response-cache takes a file, an sqlite://, redis:// or postgres:// URL; got ${shown}`);
}

type AdapterClass = new (...args: unknown[]) => unknown;

/** The adapter's class, from the user's project first (where the Action's docs install it), then beside conclave. */
async function adapter(name: string, shown: string, cwd: string, instead = ''): Promise<AdapterClass> {
  for (const from of [join(cwd, 'package.json'), import.meta.url]) {
    let path: string;
    try {
      path = createRequire(from).resolve(name);
    } catch {
      continue;
    }
    const module = (await import(pathToFileURL(path).href)) as { default?: AdapterClass | { default?: AdapterClass } };
    const found = typeof module.default === 'function' ? module.default : module.default?.default;
    if (typeof found !== 'function') throw new CacheError(`${name} at ${path} has no default export: is it a keyv adapter?`);
    return found;
  }
  throw new CacheError(`--response-cache ${shown} needs the keyv adapter ${name}: ${instead}npm install ${name}`);
}

/** node:sqlite's DatabaseSync, or undefined on a Node without it (before 22.5, or 22.x without the flag). */
async function nodeSqlite(): Promise<DatabaseClass | undefined> {
  try {
    return (await import('node:sqlite' as string)).DatabaseSync;
  } catch {
    return undefined;
  }
}
