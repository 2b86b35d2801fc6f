import { elapsedOf } from '../recording.js';
import type { Grader } from './grader.js';

const usd = (n: number) => Math.round(n * 1e6) / 1e6;

/** The measures every runner of agents has, in the graders' one vocabulary. */
export const COMMON_GRADERS: readonly Grader[] = [
  {
    id: 'status',
    means: 'how the run ended: 1 for success, 0 for any other ending (status says which)',
    total: 'mean',
    grade: ({ summary }) => ({ value: summary.end ? (summary.end.status === 'success' ? 1 : 0) : null, status: summary.end?.status ?? 'not ended' }),
  },
  {
    id: 'cost_usd',
    means: 'what the run cost in dollars, every model call counted at its price',
    total: 'sum',
    grade: ({ summary }) => ({ value: usd(summary.total.cost_usd) }),
  },
  { id: 'calls', means: 'model calls', total: 'sum', grade: ({ summary }) => ({ value: summary.total.calls }) },
  { id: 'turns', means: 'turns the agents began', total: 'sum', grade: ({ summary }) => ({ value: summary.total.turns }) },
  {
    id: 'tokens',
    means: 'tokens of every call: input, output, read from and written to the prompt cache',
    total: 'sum',
    grade: ({ summary }) => {
      const t = summary.total;
      return { value: t.input_tokens + t.output_tokens + t.cache_read_input_tokens + t.cache_creation_input_tokens };
    },
  },
  {
    id: 'wall_s',
    means: "seconds from the run's start to the end of its last turn",
    total: 'sum',
    grade: ({ events }) => ({ value: elapsedOf(events) / 1000 }),
  },
  {
    id: 'tool_errors',
    means: 'tool calls whose result was an error',
    total: 'sum',
    grade: ({ events }) => {
      const errors = events.filter((e) => e.type === 'tool_result' && e.is_error);
      return { value: errors.length, tools: [...new Set(errors.map((e) => (e as { tool: string }).tool))] };
    },
  },
  {
    id: 'refusals',
    means: 'model calls the model declined to answer (stop reason refusal)',
    total: 'sum',
    grade: ({ events }) => {
      const refused = events.filter((e) => e.type === 'model_call' && e.response.stop_reason === 'refusal');
      return { value: refused.length, agents: [...new Set(refused.map((e) => (e as { agent: string }).agent))] };
    },
  },
  {
    id: 'cache_breaks',
    means: 'calls whose prompt the API diagnosed as missing the cache',
    total: 'sum',
    grade: ({ summary }) => ({ value: summary.cache_misses.length, agents: [...new Set(summary.cache_misses.map((m) => m.agent))] }),
  },
];
