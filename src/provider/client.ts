import { withBoundedInputs } from './input-depth.js';
import { APIError, APIUserAbortError } from '@anthropic-ai/sdk/core/error';
import type { Admission, Pacer, WaitListener, WaitReason } from './rates/pacer.js';
import type { ModelRequest, ModelResponse } from './messages.js';
import { CallAborted, CONTRACT_SPEND_LIMIT, ContractSpendLimit, isSpendLimit, ProviderError, SpendLimitReached } from './provider-errors.js';
import { inputTokensAtMost } from './pricing.js';
import { cloudModelId, type ProviderName } from './clouds.js';
import type { Connection, MessagesClient } from './connect.js';
import type { BatchApi } from './batch-api.js';
import { httpFetch, type Fetch } from './http-fetch.js';
import { responseProblem } from './response-shape.js';
import { SendSlices } from './send-slices.js';
import { betasOf, countedOf } from './api-controls.js';

export type { ModelRequest, ModelResponse } from './messages.js';

/** Retries of a call, and how long one request may take: the same wherever a call is made. */
export const CALL_RETRIES = 4;
export const REQUEST_TIMEOUT_MS = 10 * 60_000;
/** A token count is a small request: one that takes longer is given up (the estimate then goes by length). */
const COUNT_TIMEOUT_MS = 30_000;

export interface ProviderOptions {
  /** The providers the run's agents use, their credentials checked (connect.ts). */
  connections: readonly Connection[];
  /** Retries of the SDK for HTTP errors (429, 529, 5xx, connection), and ours for errors mid-stream. */
  maxRetries: number;
  /** One request's time limit, in milliseconds. */
  requestTimeoutMs: number;
  /** Paces every HTTP request, the SDK's retries included, under the API's rate limits. */
  pacer?: Pacer;
}

/** Told before each retry of ours, with the error and the wait. */
export type RetryListener = (error: string, waitMs: number, attempt: number) => void;

/** What a call is told as it goes, and what its pacing needs to know. */
export interface CallListeners {
  onRetry?: RetryListener;
  /** A request starts to wait for a rate limit. */
  onWait?: WaitListener;
  /** A request went after waiting this long, last for this reason. */
  onPaced?: (waitedMs: number, reason: WaitReason) => void;
  /** The request's input tokens at most, as its budget reservation measured them. */
  inputTokens?: number;
  /** An HTTP request of the call is about to leave: from here on, its prompt may be billed. */
  onSent?: () => void;
  /** The call is made again (its worker stopped after its request had left): that first request may have been billed. */
  onRepeated?: () => void;
  /** The answer started streaming: what the request wrote to the prompt cache can be read from now on. */
  onStreaming?: () => void;
  /**
   * Anthropic's cache diagnosis (beta): the earlier answer this request's prompt is compared with;
   * its answer's `diagnostics.cache_miss_reason` says why the cache could not reuse that prefix.
   * Sent beside the request, never in it: the request, its hash and the session stay as they were.
   */
  diagnostics?: { previous_message_id: string | null };
}

/**
 * The call an HTTP request belongs to, for its pacing: the SDK's fetch is one for every call, and
 * hands it the call's own fetch options (an AsyncLocalStorage did this before, at the price of a
 * hook on every promise of the process on Node 20).
 */
const CALL = Symbol('conclave call');

interface PacedCall {
  provider: ProviderName;
  request: ModelRequest;
  listeners: CallListeners;
  /** The HTTP request that answered, once one did, and what it asked of the limits. */
  admission?: Admission;
  need?: { input_tokens: number; output_tokens: number };
}

/**
 * The Messages API through Anthropic's SDK, or a cloud's through its companion SDK (bedrock-sdk,
 * vertex-sdk, foundry-sdk), streaming. Each SDK reads its base URL variable (ANTHROPIC_BASE_URL,
 * ANTHROPIC_BEDROCK_BASE_URL, ...), which is also how the tests reach their fake endpoints.
 */
export class Provider {
  private readonly clients = new Map<ProviderName, MessagesClient>();
  /** One HTTP request, on the run's keep-alive connections. */
  private readonly send: Fetch = httpFetch();
  /** A burst of calls leaves in slices, the first on the wire while the rest are built. */
  private readonly slices = new SendSlices();

  constructor(private readonly options: ProviderOptions) {
    const pacer = options.pacer;
    for (const connection of options.connections) {
      this.clients.set(
        connection.provider,
        connection.client({
          maxRetries: options.maxRetries,
          timeout: options.requestTimeoutMs,
          // conclave makes its own spans of every call (docs/traces.md); the SDK's would be doubles,
          // and building them costs each request its headers twice.
          openTelemetry: false,
          fetch: pacer ? (url, init) => this.pacedFetch(pacer, url, init) : (url, init) => this.sent(url, init),
        }),
      );
    }
  }

  /** One call to `provider`, the request's model named as that provider knows it. */
  async call(request: ModelRequest, signal: AbortSignal, listeners: CallListeners = {}, provider: ProviderName = 'anthropic'): Promise<ModelResponse> {
    const client = this.clients.get(provider);
    if (!client) throw new Error(`no connection to provider ${provider}`);
    // The diagnosis is Anthropic's own (generally available: no beta header, docs/pricing.md): the clouds' APIs are sent the request as it is.
    const diagnosis = provider === 'anthropic' ? listeners.diagnostics : undefined;
    const sent = { ...request, model: cloudModelId(provider, request.model), ...(diagnosis ? { diagnostics: diagnosis } : {}) };
    // The beta controls a request uses name their headers (api-controls.ts); a request that uses none sends none.
    const betas = betasOf(request);
    const headers = betas.length > 0 ? { headers: { 'anthropic-beta': betas.join(',') } } : {};
    await this.slices.enter();
    for (let attempt = 1; ; attempt++) {
      try {
        const call: PacedCall = { provider, request, listeners };
        let message: ModelResponse;
        try {
          const stream = client.messages.stream(sent as ModelRequest, { signal, fetchOptions: { [CALL]: call } as object, ...headers });
          if (listeners.onStreaming) stream.on('streamEvent', (event) => event.type === 'message_start' && listeners.onStreaming!());
          message = await stream.finalMessage();
        } catch (e) {
          // A stream that broke or was aborted: settled as having used all it asked for, so the gate keeps no entry
          // for it (a retry is admitted anew). One answered with an error status was settled when it was observed.
          if (call.admission && call.need && !(e instanceof APIError && e.status !== undefined)) this.options.pacer?.settle(call.admission, call.need);
          throw e;
        }
        // An answer whose figures cannot be trusted is settled as having used all it asked for, and retried as a broken stream is.
        const problem = responseProblem(message);
        if (call.admission) this.options.pacer?.settle(call.admission, problem ? call.need! : message.usage);
        if (problem) throw new Error(`the API answered with a response conclave cannot use: ${problem}`);
        return withBoundedInputs(message);
      } catch (e) {
        if (signal.aborted) throw new CallAborted();
        const retryable = isMidStreamFailure(e) && attempt <= this.options.maxRetries;
        if (!retryable) throw classify(e);
        const waitMs = Math.min(500 * 2 ** (attempt - 1), 8000) * (0.75 + Math.random() * 0.25);
        listeners.onRetry?.(describe(e), waitMs, attempt);
        await sleep(waitMs, signal);
      }
    }
  }

  /** The Message Batches API of Anthropic's own client (engine/batches/batch-calls.ts); the clouds' SDKs have none here. */
  batchApi(): BatchApi | undefined {
    const batches = this.clients.get('anthropic')?.messages.batches;
    if (!batches) return undefined;
    // Its errors are the provider's errors, classified as a call's are (exit 4 for an outage, one sentence).
    const classified = <T>(made: () => Promise<T>): Promise<T> =>
      made().catch((e: unknown) => {
        throw classify(e);
      });
    return {
      create: (body) => {
        // A batch is sent with every beta header one of its requests needs.
        const betas = [...new Set(body.requests.flatMap((r) => betasOf(r.params)))];
        const headers = betas.length > 0 ? { headers: { 'anthropic-beta': betas.join(',') } } : undefined;
        return classified(() => batches.create(body as Parameters<typeof batches.create>[0], headers));
      },
      retrieve: (id) => classified(() => batches.retrieve(id)),
      results: (id) => classified(async (): Promise<AsyncIterable<unknown>> => await batches.results(id)),
      cancel: (id) => classified(() => batches.cancel(id)),
      list: () => classifiedPages(batches.list({ limit: 100 })),
    };
  }

  /**
   * The input tokens of `request` as the provider's free token-counting endpoint counts them
   * (`conclave estimate`), or undefined where the provider's SDK has none (Bedrock's).
   */
  async countTokens(request: ModelRequest, provider: ProviderName = 'anthropic', signal?: AbortSignal): Promise<number | undefined> {
    const messages = this.clients.get(provider)?.messages;
    // Bedrock's SDK has no token counting (its own CountTokens API is not the Messages API's).
    if (provider === 'bedrock' || !messages?.countTokens) return undefined;
    const { max_tokens: _max, stream: _stream, ...counted } = countedOf(request) as ModelRequest & { stream?: boolean };
    let answer: unknown;
    try {
      answer = await messages.countTokens({ ...counted, model: cloudModelId(provider, request.model) } as Parameters<typeof messages.countTokens>[0], {
        timeout: COUNT_TIMEOUT_MS,
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      throw classify(e);
    }
    const tokens = (answer as { input_tokens?: unknown } | null)?.input_tokens;
    if (typeof tokens !== 'number' || !Number.isSafeInteger(tokens) || tokens < 0)
      throw new ProviderError(`the API answered a token count conclave cannot use: input_tokens is ${JSON.stringify(tokens) ?? 'missing'}`, 'outage');
    return tokens;
  }

  /** One HTTP request, its call told that bytes leave. */
  private async sent(url: string | URL | Request, init?: RequestInit): Promise<Response> {
    (init as { [CALL]?: PacedCall } | undefined)?.[CALL]?.listeners.onSent?.();
    const response = await this.send(url, init);
    return response.status === 429 ? finalIfSpendLimit(response) : response;
  }

  /** One HTTP request of a call, first and retried alike: it waits its turn, and its response's headers are read. */
  private async pacedFetch(pacer: Pacer, url: string | URL | Request, init?: RequestInit): Promise<Response> {
    const call = (init as { [CALL]?: PacedCall } | undefined)?.[CALL];
    if (!call) return this.send(url, init);
    const { provider, request, listeners } = call;
    const inputTokens = listeners.inputTokens ?? inputTokensAtMost(typeof init?.body === 'string' ? Buffer.byteLength(init.body) : 0);
    const need = { requests: 1, input_tokens: inputTokens, output_tokens: request.max_tokens };
    const admission = await pacer.admit(request.model, need, init?.signal ?? new AbortController().signal, listeners.onWait, provider);
    if (admission.waitedMs > 0 && admission.reason) listeners.onPaced?.(admission.waitedMs, admission.reason);
    try {
      const response = await this.sent(url, init);
      pacer.observe(admission, response);
      call.admission = admission;
      call.need = need;
      return response;
    } catch (e) {
      pacer.observe(admission);
      throw e;
    }
  }
}

/** An error event inside an otherwise successful stream, or a connection lost mid-stream: the SDK does not retry these. */
function isMidStreamFailure(e: unknown): boolean {
  if (e instanceof APIUserAbortError) return false;
  if (e instanceof APIError) return e.status === undefined;
  return e instanceof Error;
}

/**
 * A 429 that says the organisation's spend limit is reached is marked not to be retried (the SDK
 * honours `x-should-retry: false`): waiting cannot help, and each retry is a request more.
 */
async function finalIfSpendLimit(response: Response): Promise<Response> {
  const body = await response.text();
  const headers = new Headers(response.headers);
  if (isSpendLimit(body)) headers.set('x-should-retry', 'false');
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** A paged list's items, its errors classified as a call's are. */
async function* classifiedPages<T>(pages: AsyncIterable<T>): AsyncIterable<T> {
  try {
    yield* pages;
  } catch (e) {
    throw classify(e);
  }
}

function classify(e: unknown): ProviderError {
  const message = describe(e);
  if (e instanceof APIError && (e.error as { error?: { type?: unknown } } | undefined)?.error?.type === CONTRACT_SPEND_LIMIT)
    return new ContractSpendLimit(message, 'outage', e.status);
  if (e instanceof APIError && e.status === 429 && isSpendLimit(message)) return new SpendLimitReached(message, 'outage', 429);
  if (e instanceof APIError && e.status !== undefined) {
    if (e.status === 401 || e.status === 403) return new ProviderError(message, 'auth', e.status);
    if (e.status === 408 || e.status === 409 || e.status === 429 || e.status >= 500) return new ProviderError(message, 'outage', e.status);
    return new ProviderError(message, 'request', e.status);
  }
  return new ProviderError(message, 'outage');
}

function describe(e: unknown): string {
  if (e instanceof APIError) {
    // The API's body is { error: { type, message } }; Bedrock's is { message } (its type in a header).
    const body = e.error as { error?: { type?: string; message?: string }; message?: unknown } | undefined;
    const type = body?.error?.type;
    const detail = body?.error?.message ?? (typeof body?.message === 'string' ? body.message : e.message);
    return [e.status, type, detail].filter((part) => part !== undefined && part !== '').join(' ');
  }
  return e instanceof Error ? e.message : String(e);
}

/** Waits `ms` unless the agent's signal ends it first; the signal outlives the wait, so its listener goes with it. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new CallAborted());
    };
    const timer = setTimeout(() => (signal.removeEventListener('abort', onAbort), resolve()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
