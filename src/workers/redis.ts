import type { Redis } from 'ioredis';
import { UsageError } from '../conclave-error.js';
import { shownSpec, withoutCredentials } from '../provider/stores/store-url.js';
import { QUEUE_NAME } from './wire.js';

const CONNECT_TIMEOUT_MS = 5_000;

/** Refused before anything runs: the Redis of --workers, and a queue name BullMQ takes. */
export function checkedWorkersPlace(url: string, queue: string): void {
  if (!/^rediss?:\/\//i.test(url)) throw new UsageError(`the workers' Redis must be a redis:// or rediss:// URL, not ${JSON.stringify(shownSpec(url))}`);
  if (!QUEUE_NAME.test(queue)) throw new UsageError(`--queue must be letters, digits, ".", "_" or "-" (up to 100, no ":"), not ${JSON.stringify(queue)}`);
}

/**
 * A connection to the workers' Redis, made at once (a server that cannot be reached is a clear
 * error, not a worker that waits forever). BullMQ's blocking reads need no retry limit per command;
 * a connection lost later is made again, as ioredis does.
 */
export async function openRedis(url: string): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: null,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
  let lastError: string | undefined;
  redis.on('error', (e: Error) => (lastError = e.message));
  try {
    await Promise.race([
      redis.connect(),
      new Promise((_, reject) => setTimeout(() => reject(new Error(lastError ?? `no answer in ${CONNECT_TIMEOUT_MS / 1000}s`)), CONNECT_TIMEOUT_MS).unref()),
    ]);
    await redis.ping();
  } catch (e) {
    redis.disconnect();
    throw new UsageError(`cannot reach the workers' Redis at ${shownSpec(url)}: ${withoutCredentials((e as Error).message, url)}`);
  }
  // ioredis selects the URL's database on connect and, when the server refuses it, goes on in database 0 (only an
  // error event says so): selected again here, a database the server does not have is refused, as --coordinate does.
  const db = redis.options.db ?? 0;
  if (db !== 0) {
    try {
      await redis.select(db);
    } catch (e) {
      redis.disconnect();
      throw new UsageError(
        `the workers' Redis at ${shownSpec(url)} cannot be used: database ${db} (${withoutCredentials((e as Error).message, url)}); name one the server has, ` +
          `such as /0`,
      );
    }
  }
  return redis;
}

/** Another connection to the same Redis (a blocking read needs its own); its errors are the watched one's to report. */
export function another(redis: Redis): Redis {
  return redis.duplicate().on('error', () => {});
}

/**
 * Calls `lost` when the connection has been down for `ms`: ioredis reconnects on its own and holds
 * commands meanwhile, so a Redis that is gone for good would otherwise hold them for ever.
 */
export function whenLost(redis: Redis, ms: number, lost: (why: string) => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  let why = 'the connection closed';
  const onError = (e: Error) => (why = e.message);
  const onClose = () => {
    timer ??= setTimeout(() => lost(why), ms);
    timer.unref();
  };
  const onReady = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  redis.on('error', onError).on('close', onClose).on('ready', onReady);
  return () => {
    clearTimeout(timer);
    redis.off('error', onError).off('close', onClose).off('ready', onReady);
  };
}
