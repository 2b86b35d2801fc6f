import { createHash } from 'node:crypto';

/**
 * Anthropic's prompt cache as the fake API simulates it (docs/workflow.md: sharing the cache):
 * the prompt is read in the order tools, system, messages; an entry is written at each block
 * that carries `cache_control` (a breakpoint) whose prefix is at least the minimum; a request
 * reads the longest prefix an entry holds; an entry can be read once the answer that wrote it
 * has started streaming, and lives its ttl (5 minutes, or 1 hour) from its last use. Tokens are
 * the fake's: the bytes of JSON / 4.
 */
export interface PromptCacheOptions {
  /** The shortest prefix that is cached, in tokens (the real minimum depends on the model). */
  minTokens?: number;
}

/** Where a block of the prompt is: `system` 0 is the first system block. */
export interface BlockPlace {
  part: 'tools' | 'system' | 'messages';
  index: number;
}

/** What one request found in the cache and wrote to it. */
export interface CacheUse {
  read: number;
  written: number;
  written1h: number;
  /** The breakpoints whose entries this request wrote, and the prefix's tokens at each. */
  writes: (BlockPlace & { prefixTokens: number })[];
  /** Called when the answer starts streaming: what the request wrote becomes readable. */
  started(): void;
}

interface Entry {
  visible: boolean;
  ttlMs: number;
  usedAt: number;
}

interface Unit extends BlockPlace {
  bytes: number;
  ttlMs?: number;
}

const MINUTE = 60_000;

export class PromptCache {
  private readonly entries = new Map<string, Entry>();
  private readonly minTokens: number;

  constructor(options: PromptCacheOptions = {}) {
    this.minTokens = options.minTokens ?? 1024;
  }

  /** Reads and writes the cache for one request; what it neither reads nor writes is plain input. */
  use(body: { model: string; speed?: string; tools?: unknown[]; system?: unknown; messages: unknown[] }): CacheUse {
    const units = unitsOf(body);
    const now = Date.now();
    const hashes: string[] = [];
    const tokens: number[] = [];
    // A prefix is cached per model, and per speed: fast mode keeps a cache of its own.
    let hash = createHash('sha256')
      .update(body.speed === 'fast' ? `${body.model} fast` : body.model)
      .digest('hex');
    let bytes = 0;
    for (const unit of units) {
      hash = createHash('sha256').update(hash).update(unit.json).digest('hex');
      bytes += unit.bytes;
      hashes.push(hash);
      tokens.push(Math.ceil(bytes / 4));
    }
    let readAt = -1;
    for (let i = units.length - 1; i >= 0; i--) {
      const entry = this.entries.get(hashes[i]!);
      if (entry?.visible && now - entry.usedAt <= entry.ttlMs) {
        entry.usedAt = now;
        readAt = i;
        break;
      }
    }
    const read = readAt === -1 ? 0 : tokens[readAt]!;
    const pending: Entry[] = [];
    const writes: CacheUse['writes'] = [];
    let writtenThrough = read;
    let written1h = 0;
    for (let i = readAt + 1; i < units.length; i++) {
      const unit = units[i]!;
      if (unit.ttlMs === undefined || tokens[i]! < this.minTokens) continue;
      const entry: Entry = { visible: false, ttlMs: unit.ttlMs, usedAt: now };
      this.entries.set(hashes[i]!, entry);
      pending.push(entry);
      writes.push({ part: unit.part, index: unit.index, prefixTokens: tokens[i]! });
      if (unit.ttlMs > 5 * MINUTE) written1h += tokens[i]! - writtenThrough;
      writtenThrough = tokens[i]!;
    }
    return {
      read,
      written: writtenThrough - read,
      written1h,
      writes,
      started: () => {
        for (const entry of pending) entry.visible = true;
      },
    };
  }
}

function unitsOf(body: { tools?: unknown[]; system?: unknown; messages: unknown[] }): (Unit & { json: string })[] {
  const units: (Unit & { json: string })[] = [];
  const add = (part: BlockPlace['part'], index: number, block: unknown) => {
    const { cache_control: mark, ...rest } = (typeof block === 'object' && block !== null ? block : { text: block }) as {
      cache_control?: { ttl?: string };
    };
    const json = JSON.stringify(rest);
    units.push({
      part,
      index,
      json,
      bytes: Buffer.byteLength(json),
      ...(mark ? { ttlMs: mark.ttl === '1h' ? 60 * MINUTE : 5 * MINUTE } : {}),
    });
  };
  (body.tools ?? []).forEach((tool, i) => add('tools', i, tool));
  const system = typeof body.system === 'string' ? [{ type: 'text', text: body.system }] : ((body.system as unknown[] | undefined) ?? []);
  system.forEach((block, i) => add('system', i, block));
  let n = 0;
  for (const message of body.messages as { role: string; content: unknown }[]) {
    const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : (message.content as unknown[]);
    for (const block of blocks) add('messages', n++, { role: message.role, ...(block as object) });
  }
  return units;
}
