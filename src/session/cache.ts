import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ModelResponse } from '../provider/client.js';

/** Model responses kept across runs, by the hash of the canonical request. */
export interface ResponseCache {
  get(key: string): Promise<ModelResponse | undefined>;
  set(key: string, response: ModelResponse): Promise<void>;
  close(): Promise<void>;
}

/** The cache could not be opened: a bad URL, or an adapter that is not installed. */
export class CacheError extends Error {}

export const DEFAULT_CACHE = '.conclave/cache.sqlite';

/**
 * Opens the cache of `--cache`: with no value, an SQLite file under .conclave/ (@keyv/sqlite);
 * a file path or sqlite:// URL, that file; redis:// and postgres:// URLs go through @keyv/redis
 * and @keyv/postgres, which the user installs. keyv and its adapters load only here.
 */
export async function openCache(spec: string | true): Promise<ResponseCache> {
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
  keyv.on('error', (e: Error) => (failure = e));
  const check = () => {
    if (failure) throw new CacheError(`the response cache failed: ${failure.message}`);
  };
  return {
    get: async (key) => {
      const value = await keyv.get(key);
      check();
      return value ?? undefined;
    },
    set: async (key, response) => {
      await keyv.set(key, response);
      check();
    },
    close: async () => {
      await keyv.disconnect();
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
