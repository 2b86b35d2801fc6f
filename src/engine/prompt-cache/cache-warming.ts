import { charTokens, toolsTokens } from '../../agents/context.js';
import { type AgentProfile, sentTools } from '../../agents/profile.js';
import type { ModelRequest } from '../../provider/client.js';
import type { ProviderName } from '../../provider/clouds.js';
import { modelInfo } from '../../provider/models.js';
import type { CacheTtl } from '../../workflow/types.js';
import type { Workflow } from '../../workflow/load.js';
import { detached } from '../../detached.js';
import { thousands } from '../../thousands.js';

/** The longest a call waits for another to write the prefix it would read: then it goes anyway. */
export const WARM_RELEASE_MS = 5_000;

/** An entry is taken as gone this long before its ttl ends, so that no call waits on one the API dropped. */
const TTL_MARGIN_MS = 30_000;

const TTL_MS: Record<CacheTtl, number> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };

/** What a live call tells of itself once it has gone: when its answer starts streaming, and when it is over. */
export interface WarmTurn {
  streaming(): void;
  done(): void;
}

interface Prefix {
  /** Whether it is long enough for the prompt cache to keep. */
  cacheable: boolean;
  /** Until when the cache holds it, as far as this run knows. */
  warmUntil: number;
  /** The call writing it now, and how the calls that wait for it are let go. */
  writing?: { released: Promise<void>; release(): void };
}

const NOTHING: WarmTurn = { streaming() {}, done() {} };

/**
 * Warm first (docs/workflow.md: sharing the prompt cache). Calls that begin with the same tools
 * and the same first system block (the workflow's `context:`) share a prefix the prompt cache can
 * keep; an entry can be read only once the answer that wrote it has started streaming. So when
 * such calls would leave together and none has written the prefix, the first goes and the others
 * wait until its answer starts, or it ends, or WARM_RELEASE_MS passed: they then read what it
 * wrote instead of each writing it again. A prefix shorter than the model's minimum is never
 * waited for. The prefix is known by its objects: an agent's system blocks and tools are built once
 * (agents/request.ts), and the context block is one object for every agent.
 */
export class CacheWarming {
  private readonly prefixes = new WeakMap<object, WeakMap<object, Map<string, Prefix>>>();
  private readonly noTools = {};

  constructor(
    private readonly ttl: CacheTtl,
    private readonly now: () => number = Date.now,
  ) {}

  /** Waits, if another call is writing this request's shared prefix; then the call goes and tells how it went. */
  async before(request: ModelRequest, provider: ProviderName, signal: AbortSignal): Promise<WarmTurn> {
    const prefix = this.prefixOf(request, provider);
    if (!prefix?.cacheable) return NOTHING;
    if (prefix.writing) await waitFor(prefix.writing.released, signal);
    else if (this.now() >= prefix.warmUntil) {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const writing = { released, release };
      prefix.writing = writing;
      return {
        streaming: () => this.written(prefix, writing),
        done: () => {
          if (prefix.writing === writing) delete prefix.writing;
          writing.release();
        },
      };
    }
    return { streaming: () => (prefix.warmUntil = this.now() + TTL_MS[this.ttl] - TTL_MARGIN_MS), done() {} };
  }

  /**
   * The request's shared prefix when nobody wrote it and nobody is writing it: calls of a batch
   * that share one go after one of them, unbatched, has written it (batch-calls.ts).
   */
  coldPrefix(request: ModelRequest, provider: ProviderName): object | undefined {
    const prefix = this.prefixOf(request, provider);
    return prefix?.cacheable && !prefix.writing && this.now() >= prefix.warmUntil ? prefix : undefined;
  }

  /** A batched request was answered: what it wrote (or read, which keeps it) is in the cache for a ttl. */
  answered(request: ModelRequest, provider: ProviderName): void {
    const prefix = this.prefixOf(request, provider);
    if (prefix?.cacheable) prefix.warmUntil = Math.max(prefix.warmUntil, this.now() + TTL_MS[this.ttl] - TTL_MARGIN_MS);
  }

  private written(prefix: Prefix, writing: NonNullable<Prefix['writing']>): void {
    prefix.warmUntil = this.now() + TTL_MS[this.ttl] - TTL_MARGIN_MS;
    if (prefix.writing === writing) delete prefix.writing;
    writing.release();
  }

  private prefixOf(request: ModelRequest, provider: ProviderName): Prefix | undefined {
    const first = Array.isArray(request.system) ? request.system[0] : undefined;
    if (!first) return undefined;
    const tools = request.tools ?? this.noTools;
    let byFirst = this.prefixes.get(tools);
    if (!byFirst) this.prefixes.set(tools, (byFirst = new WeakMap()));
    let byModel = byFirst.get(first);
    if (!byModel) byFirst.set(first, (byModel = new Map()));
    const key = `${provider} ${request.model}`;
    let prefix = byModel.get(key);
    if (!prefix) {
      const tokens = charTokens(first.text) + (request.tools ? charTokens(request.tools) : 0);
      prefix = { cacheable: tokens >= modelInfo(request.model).cacheMin, warmUntil: 0 };
      byModel.set(key, prefix);
    }
    return prefix;
  }
}

/** Until the writer lets go, at most WARM_RELEASE_MS, or until the call is aborted (which the call itself then sees). */
function waitFor(released: Promise<void>, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(finish, WARM_RELEASE_MS);
    signal.addEventListener('abort', finish);
    detached(released.then(finish), finish);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve();
    }
  });
}

/**
 * How long the prompt cache keeps the run's writes: the workflow's `cache.ttl`; else what the
 * recorded run chose (a resume must send the same requests); else an hour for a run that parks
 * while its batches wait (`--park` with batched agents: it goes on when a later job resumes it,
 * later than 5 minutes), 5 minutes for any other.
 */
export function cacheTtlOf(workflow: Pick<Workflow, 'spec' | 'batched'>, park: boolean, recorded: CacheTtl | undefined): CacheTtl {
  return workflow.spec.cache?.ttl ?? recorded ?? (park && workflow.batched ? '1h' : '5m');
}

/**
 * The workflow's `context:` when it is too short for the prompt cache of every agent's model
 * (with the tools before it): it is then sent whole with each call and never read from the cache.
 */
export function contextTooShort(context: string, profiles: readonly AgentProfile[]): string | undefined {
  const tokens = charTokens(context);
  const short = profiles.filter((p) => tokens + toolsTokens(sentTools(p)) < modelInfo(p.model).cacheMin);
  if (short.length === 0 || short.length < profiles.length) return undefined;
  const least = Math.min(...short.map((p) => modelInfo(p.model).cacheMin));
  return (
    `context: is about ${thousands(tokens)} tokens: with the tools before it, under the ${thousands(least)} the prompt cache ` +
    `keeps for ${short[0]!.model}, so no call reads it from the cache. It pays with what every agent reads at length (a diff, the files under review); ` +
    `a short context can stay in each system:`
  );
}
