import { withBoundedInputs } from './input-depth.js';
import Anthropic from '@anthropic-ai/sdk';
import type { Message, MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages';
import { CallAborted, ProviderError } from './provider-errors.js';

export type ModelRequest = Omit<MessageCreateParamsNonStreaming, 'stream'>;
export type ModelResponse = Message;

export interface ProviderOptions {
  apiKey: string;
  /** Retries of the SDK for HTTP errors (429, 529, 5xx, connection), and ours for errors mid-stream. */
  maxRetries: number;
  /** One request's time limit, in milliseconds. */
  requestTimeoutMs: number;
}

/** Told before each retry of ours, with the error and the wait. */
export type RetryListener = (error: string, waitMs: number, attempt: number) => void;

/**
 * The Anthropic Messages API through the official SDK, streaming. The base URL comes from
 * ANTHROPIC_BASE_URL (the SDK reads it), which is also how the tests reach the fake server.
 */
export class Provider {
  private readonly client: Anthropic;

  constructor(private readonly options: ProviderOptions) {
    this.client = new Anthropic({ apiKey: options.apiKey, maxRetries: options.maxRetries, timeout: options.requestTimeoutMs });
  }

  async call(request: ModelRequest, signal: AbortSignal, onRetry?: RetryListener): Promise<ModelResponse> {
    for (let attempt = 1; ; attempt++) {
      try {
        return withBoundedInputs(await this.client.messages.stream(request, { signal }).finalMessage());
      } catch (e) {
        if (signal.aborted) throw new CallAborted();
        const retryable = isMidStreamFailure(e) && attempt <= this.options.maxRetries;
        if (!retryable) throw classify(e);
        const waitMs = Math.min(500 * 2 ** (attempt - 1), 8000) * (0.75 + Math.random() * 0.25);
        onRetry?.(describe(e), waitMs, attempt);
        await sleep(waitMs, signal);
      }
    }
  }
}

/** An error event inside an otherwise successful stream, or a connection lost mid-stream: the SDK does not retry these. */
function isMidStreamFailure(e: unknown): boolean {
  if (e instanceof Anthropic.APIUserAbortError) return false;
  if (e instanceof Anthropic.APIError) return e.status === undefined;
  return e instanceof Error;
}

function classify(e: unknown): ProviderError {
  const message = describe(e);
  if (e instanceof Anthropic.APIError && e.status !== undefined) {
    if (e.status === 401 || e.status === 403) return new ProviderError(message, 'auth', e.status);
    if (e.status === 408 || e.status === 409 || e.status === 429 || e.status >= 500) return new ProviderError(message, 'outage', e.status);
    return new ProviderError(message, 'request', e.status);
  }
  return new ProviderError(message, 'outage');
}

function describe(e: unknown): string {
  if (e instanceof Anthropic.APIError) {
    const body = e.error as { error?: { type?: string; message?: string } } | undefined;
    const type = body?.error?.type;
    const detail = body?.error?.message ?? e.message;
    return [e.status, type, detail].filter((part) => part !== undefined && part !== '').join(' ');
  }
  return e instanceof Error ? e.message : String(e);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new CallAborted());
    }, { once: true });
  });
}
