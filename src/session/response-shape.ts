import type { ModelResponse } from '../provider/client.js';
import { isObject } from './schema.js';

/**
 * Whether a value read from outside (a cache entry any runner of the organisation may have
 * written, or a session file's `model_call`) is a Messages API response conclave can use: its
 * blocks of the kinds a turn reads, each with the fields it reads, a stop reason, and usage in
 * whole numbers. Anything else is taken for a miss, never followed into a TypeError.
 */
export function isModelResponse(value: unknown): value is ModelResponse {
  if (!isObject(value) || !Array.isArray(value.content)) return false;
  if (!(value.stop_reason === null || typeof value.stop_reason === 'string')) return false;
  if (value.usage !== undefined && !isUsage(value.usage)) return false;
  return value.content.every(isBlock);
}

function isBlock(block: unknown): boolean {
  if (!isObject(block)) return false;
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string';
    case 'tool_use':
      return typeof block.id === 'string' && typeof block.name === 'string' && isObject(block.input);
    case 'thinking':
      return typeof block.thinking === 'string' && typeof block.signature === 'string';
    case 'redacted_thinking':
      return typeof block.data === 'string';
    default:
      return false;
  }
}

function isUsage(usage: unknown): boolean {
  if (!isObject(usage)) return false;
  for (const field of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens']) {
    const n = usage[field];
    if (n !== undefined && n !== null && !(Number.isSafeInteger(n) && (n as number) >= 0)) return false;
  }
  return true;
}
