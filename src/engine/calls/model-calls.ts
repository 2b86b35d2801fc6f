import { abortReason, Interrupted } from '../../abort-reasons.js';
import type { CallListeners, ModelRequest, ModelResponse } from '../../provider/client.js';
import { CallAborted, PromptTooLong, ProviderError, SpendLimitReached } from '../../provider/provider-errors.js';
import { inputTokensAtMost } from '../../provider/pricing.js';
import { requestBytes, requestHash } from '../../provider/request-hash.js';
import { formatUsd } from '../../provider/money.js';
import type { ResponseCache } from '../../session/cache.js';
import type { Accounting } from '../ceilings/accounting.js';
import { NoRecordedAnswer } from '../ending.js';
import type { ProgressListener } from '../progress-events.js';
import { DivergenceError, type Journal } from '../replay/journal.js';
import { isModelResponse } from '../../provider/response-shape.js';
import { SpawnBudgetReached } from '../teams/spawner.js';
import type { ProviderName } from '../../provider/clouds.js';
import type { Ceiling, Reservation, Reservations, Worst } from '../ceilings/reservation.js';
import type { CacheWarming } from '../prompt-cache/cache-warming.js';
import { CallRecords } from './call-records.js';
import type { CallModel, PoolsCeiling } from './call-model.js';
import type { BatchCalls } from '../batches/batch-calls.js';
import type { CacheDiagnosis } from '../prompt-cache/cache-diagnosis.js';
import type { CacheMiss } from '../../session/cache-misses.js';
import type { TaskBudgets } from './task-budget.js';
import { AnsweredCalls, type FallbackAnswers } from './answered-calls.js';
import { callListeners } from './call-listeners.js';

export type { FallbackAnswers } from './answered-calls.js';

export interface ModelCallsOptions {
  journal: Journal;
  accounting: Accounting;
  callModel: CallModel;
  /** False for --replay and --offline: what nothing recorded or cached can answer fails the run. */
  liveCalls: boolean;
  cache?: ResponseCache;
  signal: AbortSignal;
  progress: ProgressListener;
  /** Whether `agent`'s failed call is recorded (`call_failed`): a spawned agent's ends only it, not the run. */
  failureIsRecorded?: (agent: string) => boolean;
  /** Where an agent's calls go (docs/providers.md); Anthropic's API when not told. */
  providerOf?: (agent: string) => ProviderName;
  /** Where every live call holds its worst case (docs/ARCHITECTURE.md: the reservation primitive). */
  reservations: Reservations;
  /** The ceilings of spawned agents' budget_usd an agent's calls fall under, besides the run's budget. */
  carvesOf?: (agent: string) => readonly Ceiling[];
  /** Calls through the Message Batches API, for the agents `batchOf` names (batch-calls.ts). */
  batches?: BatchCalls;
  batchOf?: (agent: string) => boolean;
  /** A batched agent's call began (`true`) or ended (`false`): while it waits, its turn holds no concurrency slot. */
  onBatchWait?: (agent: string, waiting: boolean) => void;
  /** Warm first: calls that share a cacheable prefix wait for the one writing it (cache-warming.ts). */
  warming?: CacheWarming;
  /** The spend pools shared across runs, a ceiling too. */
  pools?: PoolsCeiling;
  /** The API's cache diagnosis: what each live call is compared with, and the misses answers report. */
  diagnosis?: CacheDiagnosis;
  /** `task_budget: auto`: the agents whose calls are told what is left to them (task-budget.ts). */
  taskBudgets?: TaskBudgets;
  budgetedOf?: (agent: string) => boolean;
}

/**
 * Where a model answer comes from, in this order: the recording (resume, replay), the response
 * cache, the provider. Every answer is recorded as a `model_call` event, with its cost, before it
 * is written to the cache: a paid answer is never only in the cache.
 */
export class ModelCalls {
  /** How a call that gave no answer is recorded (call-records.ts). */
  private readonly records: CallRecords;
  private poolsNoted = false;
  private readonly answers: AnsweredCalls;

  /** What the agent's last recorded call cost (a compaction's summary call, for its event). */
  lastCostOf(agent: string): number {
    return this.answers.lastCostOf(agent);
  }

  /** The calls server-side fallbacks answered, by agent and model, in the order first met. */
  get fallbackAnswers(): readonly FallbackAnswers[] {
    return this.answers.fallbackAnswers;
  }

  /** The run's batched calls, if it makes any. */
  get batches(): BatchCalls | undefined {
    return this.options.batches;
  }
  /** The prompt-cache misses the API diagnosed, by agent (cache-diagnosis.ts). */
  get cacheMisses(): readonly CacheMiss[] {
    return this.options.diagnosis?.misses ?? [];
  }

  constructor(private readonly options: ModelCallsOptions) {
    this.records = new CallRecords(options.journal, options.accounting);
    this.answers = new AnsweredCalls(options.journal, options.accounting, options.diagnosis);
  }

  /**
   * One call; `signal` is the turn's (an agent cancelled mid-call stops its own call only).
   * `interrupt` abandons it for a message that arrived; `via` makes it elsewhere (a worker).
   */
  call(
    agent: string,
    turn: number,
    step: number,
    request: ModelRequest,
    signal = this.options.signal,
    how: { interrupt?: AbortSignal; via?: CallModel } = {},
  ): Promise<ModelResponse> {
    const batched = this.options.batchOf?.(agent) === true;
    if (!batched) return this.answer(agent, turn, step, request, signal, { ...how, batched });
    // A batched agent's call waits for its batch, for minutes or hours: its turn holds no
    // concurrency slot meanwhile (recorded or live alike, so that a replay starts turns as the run did).
    this.options.onBatchWait?.(agent, true);
    return this.answer(agent, turn, step, request, signal, { ...how, batched }).finally(() => this.options.onBatchWait?.(agent, false));
  }

  private async answer(
    agent: string,
    turn: number,
    step: number,
    request: ModelRequest,
    signal: AbortSignal,
    how: { interrupt?: AbortSignal; via?: CallModel; batched: boolean },
  ): Promise<ModelResponse> {
    const { interrupt, batched } = how;
    const { journal, cache } = this.options;
    const budgets = this.options.budgetedOf?.(agent) ? this.options.taskBudgets : undefined;
    if (signal.aborted) throw new CallAborted();
    const provider = this.options.providerOf?.(agent) ?? 'anthropic';
    const recorded = journal.response(agent, turn, step, signal);
    if (recorded) {
      this.options.progress({ type: 'thinking', agent, step });
      const event = await recorded;
      if (event.type === 'call_interrupted')
        throw await this.inOrder(
          agent,
          signal,
          this.records.interrupted(agent, turn, step, request, provider, false, event.cost_usd > 0 ? undefined : 0, batched),
        );
      if (event.type === 'call_failed')
        throw await this.inOrder(
          agent,
          signal,
          this.records.failed(
            agent,
            turn,
            step,
            event.kind === 'budget' ? new SpawnBudgetReached(event.error) : new ProviderError(event.error, event.kind, event.status ?? undefined),
          ),
        );
      if (event.type === 'context_exceeded')
        throw await this.inOrder(
          agent,
          signal,
          this.records.tooLong(agent, turn, step, PromptTooLong.of(new ProviderError(event.error, 'request', 400)) ?? new PromptTooLong(event.error)),
        );
      // The recorded request delta, compared with this call's, verifies the request: no need to hash it again.
      if (budgets) request = budgets.asRecorded(agent, request, event.request);
      if (!isModelResponse(event.response))
        throw new DivergenceError(
          `event ${event.seq} (${agent}'s call ${step} of turn ${turn}) holds a response that is not a Messages API response conclave can use`,
        );
      const answer = this.answers.record(
        agent,
        turn,
        step,
        request,
        event.request_sha256,
        event.response,
        event.cached === true,
        false,
        event.provider ?? 'anthropic',
        event.batch,
      ).response;
      await journal.continueAfter(agent, signal);
      return answer;
    }
    await journal.live(signal);
    if (budgets) request = budgets.told(agent, request);
    const hash = requestHash(request, provider);
    const hit = await cache?.get(hash, signal);
    if (signal.aborted) throw new CallAborted();
    if (hit) return this.answers.record(agent, turn, step, request, hash, hit, true, false, provider).response;
    if (!this.options.liveCalls) {
      throw new NoRecordedAnswer(
        cache
          ? `offline: the cache holds no response for @${agent}'s turn ${turn}, call ${step} (request ${hash.slice(0, 12)}); run without --offline to fill it`
          : `the session holds no response for @${agent}'s turn ${turn}, call ${step}: this run asked for more than was recorded`,
        cache !== undefined,
      );
    }
    const inputTokens = inputTokensAtMost(requestBytes(request));
    const batches = batched ? this.options.batches : undefined;
    const warm = (batches ? undefined : await this.options.warming?.before(request, provider, signal)) ?? { streaming() {}, done() {} };
    let settle: Reservation;
    let worstUsd = 0;
    try {
      if (signal.aborted) throw new CallAborted();
      const worst = this.options.accounting.worstOfCall(request, inputTokens, provider, batches !== undefined);
      worstUsd = worst.usd;
      settle = await this.reserve(agent, worst, signal);
    } catch (e) {
      warm.done();
      throw e instanceof SpawnBudgetReached ? this.records.failed(agent, turn, step, e) : e;
    }
    let costUsd = 0;
    // What it costs follows whether a request left, not which signal stopped it: a prompt sent is billed.
    let requestLeft = false;
    try {
      // A batched call says nothing of its own: its batch's lines say it, once for all its calls.
      if (!batches) this.options.progress({ type: 'thinking', agent, step });
      const callSignal = interrupt ? AbortSignal.any([signal, interrupt]) : signal;
      const listeners: CallListeners = {
        ...callListeners(this.options, agent, turn, step, inputTokens),
        onSent: () => (requestLeft = true),
        onRepeated: () => (costUsd += this.records.abandoned(agent, turn, step, request, provider, inputTokens, 'worker_lost')),
        onStreaming: () => warm.streaming(),
        ...(this.options.diagnosis ? { diagnostics: this.options.diagnosis.of(agent) } : {}),
      };
      let batch: string | undefined;
      if (batches) this.options.progress({ type: 'batched', agent });
      const resubmitted = batches?.resubmits(hash);
      if (resubmitted)
        this.options.progress({
          type: 'warning',
          message:
            `@${agent}'s request is not one the run submitted before it stopped (in message batch ${resubmitted}): the workflow or what the run ` +
            `was given changed. It goes in a new batch, at most ${formatUsd(worstUsd)}; an answer of the earlier batch to a request that is not made again ` +
            'is paid and not used',
        });
      const made = batches
        ? batches
            .call(hash, request, callSignal, worstUsd, () => (requestLeft = true))
            .then((answer) => {
              // What the batch wrote to the prompt cache, or read (which keeps it), is there now.
              this.options.warming?.answered(request, provider);
              batch = answer.batch;
              return answer.response;
            })
        : (how.via ?? this.options.callModel)(request, callSignal, listeners, provider);
      const response = await made.catch((e: unknown) => {
        if (abortReason(callSignal) instanceof Interrupted) {
          // A batched request has left once its batch was created: the batch goes on, and the API bills it.
          const error = this.records.interrupted(agent, turn, step, request, provider, true, requestLeft ? inputTokens : 0, batches !== undefined);
          costUsd += error.costUsd;
          throw error;
        }
        // A batched call given up by a stopping run is not counted here: a parked run's batch is
        // answered and recorded on resume, any other's is cancelled.
        if (signal.aborted && requestLeft && !batches) costUsd += this.records.abandoned(agent, turn, step, request, provider, inputTokens, 'aborted');
        const tooLong = PromptTooLong.of(e);
        if (tooLong) throw this.records.tooLong(agent, turn, step, tooLong);
        if (e instanceof ProviderError) e.call ??= { step, model: request.model };
        // A spawned agent's failure ends only that agent: it is recorded, so that a resume meets it again. A spend
        // limit is the whole organisation's: it stops the run, which a resume goes on from.
        const ownFailure = e instanceof ProviderError && !(e instanceof SpendLimitReached) && !signal.aborted && this.options.failureIsRecorded?.(agent);
        throw ownFailure ? this.records.failed(agent, turn, step, e) : e;
      });
      // Answered: what it wrote is in the cache, whether or not its answer said when it started
      // streaming (a call made by a worker does not).
      warm.streaming();
      costUsd += this.answers.record(agent, turn, step, request, hash, response, false, true, provider, batch).costUsd;
      await cache?.set(hash, response, signal);
      return response;
    } finally {
      warm.done();
      await settle(costUsd);
    }
  }

  /**
   * Holds a live call's worst case under every ceiling it falls under: the spawned agents' budgets
   * above it, the run's budget, the spend pools. The first call of a process to draw from the
   * pools notes which, in the session.
   */
  private reserve(agent: string, worst: Worst, signal: AbortSignal): Promise<Reservation> {
    const { pools, journal, accounting, reservations } = this.options;
    if (pools && !this.poolsNoted) {
      this.poolsNoted = true;
      journal.append({ type: 'spend_pools', store: pools.store, pools: pools.specs.map((p) => ({ name: p.name, cap_usd: p.capUsd, per: p.per })) });
    }
    const ceilings = [...(this.options.carvesOf?.(agent) ?? []), accounting.ceiling, ...(pools ? [pools] : [])];
    return reservations.reserve(ceilings, worst, signal);
  }

  /** A recorded failure's error, once the run reaches the agent's next recorded event: its own events follow it as an answer's do, the others' first. */
  private async inOrder(agent: string, signal: AbortSignal, error: Error): Promise<Error> {
    await this.options.journal.continueAfter(agent, signal)?.catch(() => {});
    return error;
  }
}
