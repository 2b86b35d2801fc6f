import { describe, expect, it } from 'vitest';
import { MAX_TOOL_STEPS, runTurn } from '../../src/agents/turn.js';
import type { AgentProfile } from '../../src/agents/profile.js';
import type { ToolContext } from '../../src/agents/tools/tool.js';
import { CallInterrupted } from '../../src/provider/provider-errors.js';

const PROFILE: AgentProfile = {
  name: 'lead',
  role: 'manager',
  isLead: true,
  reportsTo: null,
  description: '',
  provider: 'anthropic',
  model: 'claude-haiku-4-5',
  maxTokens: 1024,
  wake: 'all',
  queue: 'interrupt',
  compactAt: 150_000,
  turnOutputBudget: 30_000,
  system: ['You are @lead.'],
  cacheTtl: '5m',
  batch: false,
  tools: [],
};

describe('a turn under queue: interrupt', () => {
  it(`counts abandoned calls against its ${MAX_TOOL_STEPS} calls: interrupted without end, it stops there, leaving the messages for its next turn`, async () => {
    let calls = 0;
    const outcome = await runTurn(PROFILE, { messages: [], tokens: 0 } as never, [], 'status', {} as Omit<ToolContext, 'complete'>, {
      call: async () => {
        calls++;
        throw new CallInterrupted(0.001);
      },
      toolStarted: async () => {},
      external: async (_use, _readOnly, run) => run(),
      toolFinished: async () => {},
      steer: async () => [],
    });
    expect(calls).toBe(MAX_TOOL_STEPS);
    expect(outcome.steps).toBe(MAX_TOOL_STEPS);
    expect(outcome.text).toBe('');
  });
});
