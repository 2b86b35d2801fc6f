import { describe, expect, it } from 'vitest';
import { charTokens, toolsTokens } from '../../src/agents/context.js';
import { cancelProposal, channelHistory, completeTool, propose, vote } from '../../src/agents/tools/coordination.js';
import { WORKSPACE_TOOL_BY_NAME } from '../../src/agents/tools/workspace-tools.js';

describe('the tokens of a tool list', () => {
  const lists = [
    [],
    [vote],
    [propose, vote, cancelProposal, channelHistory],
    [propose, vote, cancelProposal, channelHistory, completeTool(), ...Object.values(WORKSPACE_TOOL_BY_NAME)],
  ];

  it.each(lists.map((list) => [list.length, list] as const))('%i tools: the same as the whole list written out, asked twice', (_n, list) => {
    const written = charTokens(list.map((t) => t.definition));
    expect(toolsTokens(list)).toBe(written);
    expect(toolsTokens(list)).toBe(written); // measured once, the same the second time
  });
});
