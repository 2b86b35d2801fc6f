import type { ModelRequest, ModelResponse } from './messages.js';

/** The part of the SDK's `client.messages.batches` conclave uses. */
export interface BatchApi {
  create(body: { requests: { custom_id: string; params: ModelRequest }[] }): Promise<{ id: string }>;
  retrieve(id: string): Promise<{ id: string; processing_status: string; created_at: string }>;
  /** The results file's lines, as the API sent them: each is checked before it is read (engine/batches/batch-calls.ts). */
  results(id: string): Promise<AsyncIterable<unknown>>;
  cancel(id: string): Promise<unknown>;
  /** The workspace's batches, newest first (the API pages them), as the API sent them: each is checked before it is read. */
  list(): AsyncIterable<unknown>;
}

export type BatchResult =
  | { type: 'succeeded'; message: ModelResponse }
  | { type: 'errored'; error: { type?: string; error?: { type?: string; message?: string } } }
  | { type: 'canceled' }
  | { type: 'expired' };
