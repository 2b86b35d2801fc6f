import type { ModelResponse } from './messages.js';

/** More tokens than any model reads or writes in one call: a figure past it is not a usage figure. */
const MAX_TOKENS_IN_ONE_CALL = 1_000_000_000;

/**
 * Whether a value from outside (a live answer, a batch's result, a cache entry any runner of the
 * organisation may have written, a session file's `model_call`) is a Messages API response
 * conclave can use: its blocks of the kinds a turn reads, each with the fields it reads, a stop
 * reason, and usage in whole numbers from 0 (a negative or fractional figure would make the
 * budget and the spend pools stop nothing). Anything else is refused, never followed into a TypeError.
 */
export function isModelResponse(value: unknown): value is ModelResponse {
  return responseProblem(value) === undefined;
}

/** What makes a value not a response conclave can use, in a few words; undefined when it is one. */
export function responseProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'it is not an object';
  if (!Array.isArray(value.content)) return 'it has no content list';
  if (!(value.stop_reason === null || typeof value.stop_reason === 'string')) return 'its stop_reason is not a string';
  if (value.usage !== undefined) {
    if (!isObject(value.usage)) return 'its usage is not an object';
    for (const field of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens']) {
      const n = value.usage[field];
      if (n !== undefined && n !== null && !(Number.isSafeInteger(n) && (n as number) >= 0 && (n as number) <= MAX_TOKENS_IN_ONE_CALL))
        return `its usage.${field} is ${JSON.stringify(n)}, not a whole number of tokens`;
    }
  }
  const block = value.content.findIndex((b) => !isBlock(b));
  return block === -1 ? undefined : `its content block ${block} is not one conclave reads`;
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
      // A block type added later is kept as it came (docs/workflow.md: current models), never read.
      return typeof block.type === 'string';
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
