import { keepsBatches } from '../../abort-reasons.js';
import type { ModelRequest, ModelResponse } from '../../provider/client.js';
import { CallAborted, ProviderError } from '../../provider/provider-errors.js';
import type { EventInput } from '../replay/journal.js';
import { LimitReached } from '../ending.js';
import type { BatchApi } from '../../provider/batch-api.js';
import { failureOf, isObject, resultProblem } from './batch-results.js';
import { PrefixWriters } from '../prompt-cache/prefix-writers.js';
import { InDoubtBatches } from './batch-in-doubt.js';
import { DEFAULT_WAIT_TIMEOUT_MS, formatDuration, parts } from './batch-limits.js';
import { detached } from '../../detached.js';

export interface BatchCallsOptions {
  api: BatchApi;
  /** Writes the `batch_submitted` note, before any wait for the batch. */
  note(event: EventInput): void;
  /** The batch a recorded run already submitted this request in (by its hash), if it did. */
  submitted(customId: string): string | undefined;
  /** The group of calls a recorded run was creating a batch for when it stopped, with no batch named (batch-in-doubt.ts). */
  inDoubt?(customId: string): readonly string[] | undefined;
  /** The requests a recorded run submitted and has no answer to, with their batches (a parked run's). */
  unanswered?: Map<string, string>;
  /** How long calls that become ready together are gathered into one batch. */
  gatherMs?: number;
  /** The longest a batch is waited for from its creation (limits.wait_timeout). */
  waitTimeoutMs?: number;
  /** The first wait between polls; it doubles up to `pollMaxMs`. */
  pollMs?: number;
  pollMaxMs?: number;
  /** What the calls wait for changed (a poll found a batch still being processed): the scheduler decides what follows (it may park). */
  onChange?: () => void;
  /** The shared prefix of a request that nobody wrote to the prompt cache yet (cache-warming.ts), as a key. */
  coldPrefix?: (request: ModelRequest) => object | undefined;
  /** A batch is being waited for (`waiting`), or its answers came (`ended`). */
  progress?: (event: { type: 'batch'; batch: string; requests: number; state: 'submitted' | 'waiting' | 'ended' }) => void;
}

/** What a batched call gets: its answer, and the batch that gave it. */
export type BatchAnswer = { response: ModelResponse; batch: string };

interface Waiter {
  customId: string;
  request: ModelRequest;
  signal: AbortSignal;
  /** Sent again once already, after an errored or expired result. */
  again: boolean;
  /** Its batch was created: from now on its request may be billed. */
  onSubmitted?: () => void;
  resolve(answer: BatchAnswer): void;
  reject(error: Error): void;
  /** Settled when the call has its answer, fails, or is given up. */
  settled: Promise<void>;
  /** The most the call can cost, which its reservation holds. */
  worstUsd: number;
}

/**
 * Model calls through the Message Batches API (docs/workflow.md: batch): half the price, answered when the batch ends. The calls
 * that are ready together (within `gatherMs`) go in one batch, each `custom_id` the request's hash; the batch's id is noted in the
 * session before anything waits for it, so that a run killed while it waits, once resumed, polls the same batch instead of
 * submitting the calls again (one it was stopped while creating is looked for: batch-in-doubt.ts). A request that errored or
 * expired is sent again once, in the next batch. A batch every waiter of which has given up (the run stopped) is cancelled.
 */
export class BatchCalls {
  private gathering: Waiter[] = [];
  private gatherTimer: NodeJS.Timeout | undefined;
  /** The calls waiting for each batch, by batch id. */
  private readonly waiting = new Map<string, Waiter[]>();

  /** Batches being created and cancels being sent: a run that stops waits for them (bounded), see `settled`. */
  private readonly underway = new Set<Promise<unknown>>();
  /** Calls held until the call writing their prefix is answered. */
  private readonly prefixes = new PrefixWriters<Waiter>((w) => this.gather(w));
  /** What the run left waiting when it parked. */
  private leftAtPark: { waiting_calls: number; reserved_usd: number } | undefined;

  private inDoubt: InDoubtBatches | undefined;

  constructor(private readonly options: BatchCallsOptions) {}

  /** The calls waiting for a submitted batch, or held for one (not those still being gathered): what parking leaves behind. */
  get waitingCalls(): number {
    let n = this.prefixes.waiting.length;
    for (const id of this.waiting.keys()) n += this.live(id).length;
    return n;
  }

  /**
   * The calls a parked run left waiting for a batch (submitted, or held for one) and the most
   * they can cost: what it has under way. Nothing for a run that did not park.
   */
  reserved(): { waiting_calls?: number; reserved_usd?: number } {
    return this.leftAtPark ?? {};
  }

  /** The batches waited for now, by id. */
  get waitedFor(): string[] {
    return [...this.waiting.keys()].filter((id) => this.live(id).length > 0);
  }

  /**
   * A call about to be sent in a new batch while requests a recorded run submitted are still
   * unanswered: when the workflow changed (--allow-changed-workflow), its request is not the one
   * submitted, and that batch's answer is paid and unused. The batch, if so; claims a recorded one.
   */
  resubmits(customId: string): string | undefined {
    const unanswered = this.options.unanswered;
    if (!unanswered || unanswered.size === 0) return undefined;
    if (unanswered.delete(customId)) return undefined;
    return [...new Set(unanswered.values())].join(', ');
  }

  /** The run parks (or Ctrl-C): what it leaves waiting, for its reason; the abort's reason keeps the batches (`keepsBatches`). */
  park(): void {
    const left = [...[...this.waiting.keys()].flatMap((id) => this.live(id)), ...this.prefixes.waiting];
    this.leftAtPark = { waiting_calls: left.length, reserved_usd: left.reduce((sum, w) => sum + w.worstUsd, 0) };
  }

  /** One call; `onSubmitted` is told when its batch is created (a recorded batch: at once). */
  call(customId: string, request: ModelRequest, signal: AbortSignal, worstUsd: number, onSubmitted?: () => void): Promise<BatchAnswer> {
    if (signal.aborted) return Promise.reject(new CallAborted());
    let settled!: () => void;
    const done = new Promise<void>((resolve) => (settled = resolve));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { customId, request, signal, again: false, onSubmitted, resolve, reject, settled: done, worstUsd };
      const onAbort = () => this.giveUp(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
      const settle =
        <T>(f: (value: T) => void) =>
        (value: T) => {
          signal.removeEventListener('abort', onAbort);
          f(value);
          settled();
        };
      waiter.resolve = settle(resolve);
      waiter.reject = settle(reject);
      const recorded = this.options.submitted(customId);
      if (recorded) {
        onSubmitted?.();
        // A resumed run's batch may be the one writing a shared prefix: the calls that share it wait for it.
        const prefix = this.options.coldPrefix?.(request);
        if (prefix) this.prefixes.writes(prefix, waiter);
        this.wait(recorded, [waiter]);
      } else {
        const group = this.options.inDoubt?.(customId);
        if (!group) return this.gather(waiter);
        this.inDoubt ??= new InDoubtBatches(this.options.api, this.options.note);
        // A lookup that fails fails the call with it, as a failed batch's calls do.
        const found = this.inDoubt.find(group).then((id) => (id ? (onSubmitted?.(), this.wait(id, [waiter])) : this.gather(waiter)));
        detached(found, (e) => waiter.reject(failureOf(e, 'message batches in doubt')));
      }
    });
  }

  private gather(waiter: Waiter): void {
    this.gathering.push(waiter);
    this.gatherTimer ??= setTimeout(() => {
      this.gatherTimer = undefined;
      const ready = this.gathering.filter((w) => !w.signal.aborted);
      this.gathering = [];
      this.track(this.flush(ready));
    }, this.options.gatherMs ?? 200);
  }

  /** Sends the calls gathered, but those held until another has written their prefix (prefix-writers.ts). */
  private flush(ready: Waiter[]): Promise<void> {
    const now = ready.filter((w) => this.prefixes.admit(w, w.again ? undefined : this.options.coldPrefix?.(w.request)));
    return Promise.all(parts(now).map((part) => this.submit(part))).then(() => {});
  }

  /**
   * Creates a batch of `waiters`' requests. The intent is noted first: a process killed while the
   * batch is created leaves a session that says a batch may exist. A run stopped meanwhile waits
   * for the creation (`settled`), notes the batch and cancels it, so that its resume, which sends
   * the requests again, is not billed twice.
   */
  private async submit(waiters: Waiter[]): Promise<void> {
    const customIds = waiters.map((w) => w.customId);
    this.options.note({ type: 'batch_creating', custom_ids: customIds });
    let id: string;
    try {
      ({ id } = await this.options.api.create({ requests: waiters.map((w) => ({ custom_id: w.customId, params: w.request })) }));
    } catch (e) {
      for (const w of waiters) w.reject(e instanceof Error ? e : new Error(String(e)));
      return;
    }
    this.options.note({ type: 'batch_submitted', batch_id: id, custom_ids: customIds });
    for (const w of waiters) w.onSubmitted?.();
    if (waiters.every((w) => w.signal.aborted)) {
      if (!keepsBatches(waiters)) this.cancel(id);
      return;
    }
    this.options.progress?.({ type: 'batch', batch: id, requests: waiters.length, state: 'submitted' });
    this.wait(id, waiters);
  }

  /** Waits, at most `ms`, for the batches being created and the cancels being sent: what a stopping run must not leave unsaid. */
  async settled(ms = 10_000): Promise<void> {
    const until = Date.now() + ms;
    while (this.underway.size > 0 && Date.now() < until) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...this.underway]), new Promise((resolve) => (timer = setTimeout(resolve, until - Date.now())))]);
      clearTimeout(timer);
    }
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.catch(() => {}).finally(() => this.underway.delete(tracked));
    this.underway.add(tracked);
  }

  private cancel(id: string): void {
    this.track(this.options.api.cancel(id));
  }

  /** Polls batch `id` until it ends (1 s, doubling to 60 s), then hands each waiter its answer. */
  private wait(id: string, waiters: Waiter[]): void {
    const known = this.waiting.get(id);
    if (known) {
      known.push(...waiters);
      return;
    }
    this.waiting.set(id, [...waiters]);
    // poll gives its waiters any error it meets; one outside that reaches them the same way.
    detached(this.poll(id), (e) => this.live(id).map((w) => w.reject(failureOf(e, `message batch ${id}`))));
  }

  private async poll(id: string): Promise<void> {
    let delay = this.options.pollMs ?? 1_000;
    const max = this.options.pollMaxMs ?? 60_000;
    try {
      for (;;) {
        const batch = await this.options.api.retrieve(id);
        if (batch.processing_status === 'ended') break;
        const waited = Date.now() - Date.parse(batch.created_at);
        const limit = this.options.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
        if (waited > limit) throw new LimitReached('wait_timeout', `(message batch ${id} has not ended ${formatDuration(limit)} after it was submitted)`);
        if (this.live(id).length === 0) return void this.waiting.delete(id);
        this.options.progress?.({ type: 'batch', batch: id, requests: this.live(id).length, state: 'waiting' });
        this.options.onChange?.();
        if (this.live(id).length === 0) return void this.waiting.delete(id);
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(max, delay * 2);
        if (this.live(id).length === 0) return void this.waiting.delete(id);
      }
      const results = new Map<string, unknown>();
      for await (const line of await this.options.api.results(id))
        if (isObject(line) && typeof line.custom_id === 'string') results.set(line.custom_id, line.result);
      const waiters = this.live(id);
      this.waiting.delete(id);
      this.options.progress?.({ type: 'batch', batch: id, requests: waiters.length, state: 'ended' });
      for (const w of waiters) this.answer(w, id, results.get(w.customId));
    } catch (e) {
      const waiters = this.live(id);
      this.waiting.delete(id);
      // A batch the API no longer knows (its results are kept 29 days; another key; a session edited
      // by hand): its requests are sent again once, as an expired request is.
      if (e instanceof ProviderError && e.status === 404) {
        for (const w of waiters) this.answer(w, id, { type: 'gone' });
        return;
      }
      const error = failureOf(e, `message batch ${id}`);
      for (const w of waiters) w.reject(error);
    }
  }

  /** Hands a waiter its result, or sends its request again once; a result of any shape is read with care (the API is outside). */
  private answer(waiter: Waiter, batch: string, result: unknown): void {
    const { why, kind } = resultProblem(result, batch);
    if (why === undefined) return waiter.resolve({ response: (result as { message: ModelResponse }).message, batch });
    // A cancelled request here was cancelled by an earlier process of the run (stopped by a limit
    // or a signal): the calls still waiting are this process's, so it is sent again too.
    if (!waiter.again) {
      waiter.again = true;
      return this.gather(waiter);
    }
    waiter.reject(new ProviderError(`a batched call failed twice: ${why}`, kind));
  }

  /** The waiters of batch `id` that still want an answer. */
  private live(id: string): Waiter[] {
    const waiters = (this.waiting.get(id) ?? []).filter((w) => !w.signal.aborted);
    if (this.waiting.has(id)) this.waiting.set(id, waiters);
    return waiters;
  }

  /** A call given up (its agent cancelled, the run stopped): a batch nobody waits for any more is cancelled. */
  private giveUp(waiter: Waiter): void {
    waiter.reject(new CallAborted());
    this.gathering = this.gathering.filter((w) => w !== waiter);
    for (const [id, waiters] of this.waiting) {
      if (!waiters.includes(waiter)) continue;
      if (waiters.every((w) => w.signal.aborted)) {
        this.waiting.delete(id);
        if (!keepsBatches(waiters)) this.cancel(id);
      }
    }
  }
}
