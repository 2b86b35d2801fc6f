import type { ModelResponse } from './messages.js';

/** The deepest a tool call's input may nest: deeper JSON cannot be written (JSON.stringify overflows the stack near 8,000). */
export const MAX_INPUT_DEPTH = 64;

/** The key a too-deep input is replaced with: the tool is not run, and the model is told why. */
export const TOO_DEEP = '__conclave_input_too_deep__';

/**
 * The response with each tool call whose input nests deeper than MAX_INPUT_DEPTH given an input
 * that says so instead, before it is recorded, cached or sent back: a hostile or broken answer
 * cannot make writing the session throw. Measured without recursion.
 */
export function withBoundedInputs(response: ModelResponse): ModelResponse {
  if (!response.content.some((b) => b.type === 'tool_use' && depthOver(b.input, MAX_INPUT_DEPTH))) return response;
  return {
    ...response,
    content: response.content.map((b) =>
      b.type === 'tool_use' && depthOver(b.input, MAX_INPUT_DEPTH) ? { ...b, input: { [TOO_DEEP]: `nested deeper than ${MAX_INPUT_DEPTH} levels` } } : b,
    ),
  };
}

function depthOver(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= limit) return true;
    for (const item of Array.isArray(v) ? v : Object.values(v)) stack.push([item, depth + 1]);
  }
  return false;
}
