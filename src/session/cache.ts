import { randomUUID } from 'node:crypto';
import { ConclaveError } from '../conclave-error.js';
import type { ModelResponse } from '../provider/client.js';
import { CacheError, cacheStore, withoutCredentials } from './cache-store.js';
import { isModelResponse } from '../provider/response-shape.js';
import { detached, nothingToDo } from '../detached.js';

export { CacheError, DEFAULT_CACHE } from './cache-store.js';

/** Model responses kept across runs, by the hash of the canonical request. */
export interface ResponseCache {
  /** The response, or undefined on a miss, a broken store, or an aborted wait. Never throws. */
  get(key: string, signal?: AbortSignal): Promise<ModelResponse | undefined>;
  /** Keeps the response when the store works; never throws. */
  set(key: string, response: ModelResponse, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
  /** The SQLite file it keeps, when it is one. */
  file?: string;
}

export interface CacheOptions {
  /** Where a relative file is, and where the user's adapters are installed. */
  cwd?: string;
  /** How long an entry is kept; forever when undefined. */
  ttlMs?: number;
  /** Told once, when a store that opened fails: from then on the run goes on uncached. */
  onFailure?: (message: string) => void;
  /** Told once, when an entry is not a response conclave can use (it is taken for a miss). */
  onMalformed?: (message: string) => void;
}

/** The longest a cache operation may take before the cache is taken for broken. */
const OP_TIMEOUT_MS = 5_000;
const PROBE_KEY = 'conclave-probe';

class Aborted extends ConclaveError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, ending: 'aborted' });
  }
}

/**
 * Opens the cache of `--cache` (see cacheStore) and proves it works: a write and a read of a
 * probe key, before any model call. keyv and its adapters load only here.
 */
export async function openCache(spec: string | true, options: CacheOptions = {}): Promise<ResponseCache> {
  const { default: Keyv } = await import('keyv');
  const { store, shown, file } = await cacheStore(spec, options.cwd ?? process.cwd());
  const keyv = new Keyv<ModelResponse>({ store: store as never, namespace: 'conclave-responses' });
  let failure: Error | undefined;
  keyv.on('error', (e: Error) => (failure ??= e));

  /** One operation, within OP_TIMEOUT_MS and the signal; a store error becomes an Error whatever keyv does with it. */
  const op = async <T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
    failure = undefined;
    const value = await within(work, signal);
    if (failure) throw failure;
    return value;
  };
  /** `work`, or an error once OP_TIMEOUT_MS has passed or the signal is aborted. */
  const within = async <T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stop = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${OP_TIMEOUT_MS / 1000} s`)), OP_TIMEOUT_MS);
      onAbort = () => reject(new Aborted('the cache operation was stopped'));
      if (signal?.aborted) onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([work(), stop]);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort!);
    }
  };
  const close = () => Promise.race([keyv.disconnect().catch(() => {}), new Promise((r) => setTimeout(r, OP_TIMEOUT_MS).unref())]).then(() => {});

  try {
    // The store works when what is written is read back, whatever an adapter said on the way:
    // @keyv/postgres says it could not create its table to a role that may only use the one there.
    // The key is this run's own, so that runs starting together do not read each other's probe.
    failure = undefined;
    const mark = randomUUID();
    const key = `${PROBE_KEY}:${mark}`;
    const read = await within(async () => (await keyv.set(key, { probe: mark } as never), await keyv.get(key)));
    if ((read as { probe?: unknown } | undefined)?.probe !== mark) throw failure ?? new Error('a value written was not read back');
    await within(() => keyv.delete(key));
  } catch (e) {
    detached(close(), nothingToDo); // a store that failed its first use: the refusal below says why
    throw new CacheError(`the response cache ${shown} cannot be used: ${withoutCredentials(messageOf(e), spec)}`);
  }

  let broken = false;
  /** A store that fails mid-run is reported once, and the run goes on without it: no paid answer is lost. */
  const guard = async <T>(work: () => Promise<T>, fallback: T, signal?: AbortSignal): Promise<T> => {
    if (broken) return fallback;
    try {
      return await op(work, signal);
    } catch (e) {
      if (e instanceof Aborted) return fallback;
      broken = true;
      options.onFailure?.(`the response cache ${shown} failed (${withoutCredentials(messageOf(e), spec)}); the run goes on without it`);
      return fallback;
    }
  };
  let toldMalformed = false;
  const usable = (key: string, entry: unknown): ModelResponse | undefined => {
    if (entry === undefined || entry === null) return undefined;
    if (isModelResponse(entry)) return entry;
    if (!toldMalformed)
      options.onMalformed?.(`the response cache ${shown} holds an entry that is not a model response (request ${key.slice(0, 12)}): it is taken for a miss`);
    toldMalformed = true;
    return undefined;
  };
  return {
    get: (key, signal) => guard(async () => usable(key, await keyv.get(key)), undefined, signal),
    set: (key, response, signal) => guard(() => keyv.set(key, response, options.ttlMs).then(() => undefined), undefined, signal),
    close,
    ...(file ? { file } : {}),
  };
}

/** A store's error in one line: drivers give AggregateErrors with no message, or codes alone. */
function messageOf(e: unknown): string {
  if (e instanceof AggregateError && e.errors.length > 0) return messageOf(e.errors[0]);
  const error = e as NodeJS.ErrnoException;
  const text = (error?.message ?? String(e)).split('\n')[0]!.trim();
  if (/client password must be a string/.test(text)) return 'the server asks for a password, and the URL gives none';
  if (text) return text;
  return error?.code ?? 'the store failed without saying why';
}

/**
 * The cache as a run uses it: every response masked before it is kept, as the session keeps it
 * (a secret the model quoted must not sit in clear in a file or a shared server).
 */
export function maskedCache(cache: ResponseCache, mask: <T>(value: T) => T): ResponseCache {
  return { ...cache, set: (key, response, signal) => cache.set(key, mask(response), signal) };
}
