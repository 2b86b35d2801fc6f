import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ModelResponse } from '../provider/client.js';

/** Model responses kept across runs, by the hash of the canonical request. */
export interface ResponseCache {
  get(key: string): Promise<ModelResponse | undefined>;
  set(key: string, response: ModelResponse): Promise<void>;
  close(): Promise<void>;
}

/** The cache could not be opened: a bad URL or file, an adapter that is not installed, a store that does not answer. */
export class CacheError extends Error {}

export const DEFAULT_CACHE = '.conclave/cache.sqlite';

/** The longest a cache operation may take before the cache is taken for broken. */
const OP_TIMEOUT_MS = 5_000;
const PROBE_KEY = 'conclave-probe';

/**
 * Opens the cache of `--cache`: with no value, an SQLite file under .conclave/ (@keyv/sqlite);
 * a file path or sqlite:// URL, that file; redis:// and postgres:// URLs go through @keyv/redis
 * and @keyv/postgres, which the user installs. keyv and its adapters load only here.
 */
export async function openCache(spec: string | true, onFailure: (message: string) => void = () => {}): Promise<ResponseCache> {
  const { default: Keyv } = await import('keyv');
  let store: unknown;
  if (spec === true || spec.startsWith('sqlite://') || !/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    const path = spec === true ? DEFAULT_CACHE : spec.replace(/^sqlite:\/\//, '');
    mkdirSync(dirname(path), { recursive: true });
    const { default: KeyvSqlite } = await import('@keyv/sqlite');
    store = new KeyvSqlite(`sqlite://${path}`);
  } else if (/^rediss?:\/\//.test(spec)) {
    store = await adapter('@keyv/redis', spec);
  } else if (/^postgres(ql)?:\/\//.test(spec)) {
    store = await adapter('@keyv/postgres', spec);
  } else {
    throw new CacheError(`--cache takes a file, an sqlite://, redis:// or postgres:// URL; got ${spec}`);
  }
  const keyv = new Keyv<ModelResponse>({ store: store as never, namespace: 'conclave-responses' });
  let failure: Error | undefined;
  keyv.on('error', (e: Error) => (failure ??= e));
  const shown = spec === true ? DEFAULT_CACHE : spec.replace(/\/\/[^@/]*@/, '//***@');
  /** One operation, within OP_TIMEOUT_MS; a store error becomes an Error whatever keyv does with it. */
  const op = async <T>(work: () => Promise<T>): Promise<T> => {
    failure = undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${OP_TIMEOUT_MS / 1000} s`)), OP_TIMEOUT_MS)));
    try {
      const value = await Promise.race([work(), timeout]);
      if (failure) throw failure;
      return value;
    } finally {
      clearTimeout(timer);
    }
  };
  // Open = probe: the store is reached, read and written before any model call.
  try {
    await op(() => keyv.set(PROBE_KEY, { probe: true } as never));
    await op(() => keyv.get(PROBE_KEY));
  } catch (e) {
    void keyv.disconnect().catch(() => {});
    throw new CacheError(`the response cache ${shown} cannot be used: ${(e as Error).message}`);
  }
  let broken = false;
  /** A store that fails mid-run is reported once, and the run goes on without it: no paid answer is lost. */
  const guard = async <T>(work: () => Promise<T>, fallback: T): Promise<T> => {
    if (broken) return fallback;
    try {
      return await op(work);
    } catch (e) {
      broken = true;
      onFailure(`the response cache ${shown} failed (${(e as Error).message}); the run goes on without it`);
      return fallback;
    }
  };
  return {
    get: (key) => guard(async () => (await keyv.get(key)) ?? undefined, undefined),
    set: (key, response) => guard(() => keyv.set(key, response).then(() => undefined), undefined),
    close: async () => {
      await Promise.race([keyv.disconnect().catch(() => {}), new Promise((r) => setTimeout(r, OP_TIMEOUT_MS).unref())]);
    },
  };
}

async function adapter(name: string, url: string): Promise<unknown> {
  let module: { default: new (url: string) => unknown };
  try {
    module = (await import(name)) as typeof module;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') {
      throw new CacheError(`--cache ${url.replace(/\/\/[^@/]*@/, '//***@')} needs the keyv adapter ${name}: npm install ${name}`);
    }
    throw e;
  }
  return new module.default(url);
}
