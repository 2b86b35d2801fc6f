import type { ThinkingConfigParam } from '@anthropic-ai/sdk/resources/messages';
import type { ProviderName } from '../provider/clouds.js';
import type { CacheTtl, Effort, QueueMode } from '../workflow/types.js';
import type { AgentTool } from './tools/tool.js';

/** Everything one agent's turns need to know about it, fixed for the run. */
export interface AgentProfile {
  name: string;
  role: 'manager' | 'worker';
  isLead: boolean;
  reportsTo: string | null;
  description: string;
  /** Where its calls go (docs/providers.md). */
  provider: ProviderName;
  model: string;
  maxTokens: number;
  /** Sent as `output_config.effort` when set. */
  effort?: Effort;
  /** Sent as `thinking` when set; otherwise the model thinks as it does by default. */
  thinking?: ThinkingConfigParam;
  wake: 'all' | 'each';
  /** What happens to messages that arrive during a turn. */
  queue: QueueMode;
  /** The conversation is compacted before a request would pass this many tokens (docs/design.md: context). */
  compactAt: number;
  /** What one turn's tool results may hold together, in tokens. */
  turnOutputBudget: number;
  /** The system prompt's blocks (agents/preamble.ts): the workflow's context first when it has one. */
  system: readonly string[];
  /** How long the prompt cache keeps what the agent's requests write (the workflow's `cache.ttl`). */
  cacheTtl: CacheTtl;
  /** Its calls go through the Message Batches API (engine/batches/batch-calls.ts). */
  batch: boolean;
  /** Sent as `fallbacks` (provider/api-controls.ts): the models the API answers a declined request with. */
  fallbacks?: 'default' | readonly string[];
  /** `auto`: each call is sent the agent's remaining task budget (engine/calls/task-budget.ts). */
  taskBudget?: 'auto';
  /** Sent as `speed` when fast. */
  speed?: 'fast';
  /** The untrusted sources its prompts hold (`inputs.body`, `setup.diff`): it is tainted from its start (engine/trust/taints.ts). */
  untrusted?: string[];
  /** The tools it may call. */
  tools: AgentTool[];
  /**
   * With a `context:`, the tools its requests are sent when they are more than its own: the team's
   * coordination tools, then its own workspace and MCP tools (engine/teams/team-tools.ts). It may call only its own.
   */
  offered?: readonly AgentTool[];
}

/** The tools an agent's requests are sent. */
export function sentTools(profile: Pick<AgentProfile, 'tools' | 'offered'>): readonly AgentTool[] {
  return profile.offered ?? profile.tools;
}
