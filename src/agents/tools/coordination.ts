import { ChannelError } from '../../channel/channel-error.js';
import { formatWithId } from '../../channel/message.js';
import { RULES, type ProposalRequest } from '../../channel/proposal.js';
import { outputsSchema } from '../../workflow/typed-outputs.js';
import { checkOutputs } from './outputs-check.js';
import type { TypedOutput } from '../../workflow/types.js';
import { numberArg, stringArg, ToolInputError, type AgentTool, type ToolResult } from './tool.js';

/** A channel action's ChannelError or bad input becomes a tool error the model reads; anything else is a bug. */
function asToolResult(act: () => string): ToolResult {
  try {
    return { content: act() };
  } catch (e) {
    if (e instanceof ChannelError || e instanceof ToolInputError) return { content: e.message, isError: true };
    throw e;
  }
}

/** A channel action whose result the model reads as JSON. */
function channelAction(act: () => unknown): ToolResult {
  return asToolResult(() => JSON.stringify(act(), null, 1));
}

export const propose: AgentTool = {
  readOnly: false,
  external: false,
  definition: {
    name: 'propose',
    description:
      'Open a proposal for the team to vote on. The voters are told the question at once; the result is posted to you and them when the rule decides it or the deadline passes.',
    input_schema: {
      type: 'object',
      properties: {
        question: { type: 'string', description: 'What is being decided.' },
        options: { type: 'array', items: { type: 'string' }, minItems: 2, description: 'The choices, at least two.' },
        id: { type: 'string', description: 'A short id such as "verdict" (default: p1, p2, …).' },
        voters: { type: 'array', items: { type: 'string' }, description: 'Agent names (default: every agent but you).' },
        rule: { type: 'string', enum: [...RULES], description: 'plurality, majority (default) or unanimous.' },
        quorum: { type: 'integer', minimum: 1, description: 'Votes needed for any decision (default 1).' },
        deadline_turns: { type: 'integer', minimum: 1, description: 'Close after this many more agent turns.' },
      },
      required: ['question', 'options'],
    },
  },
  run: (input, { agent, channel }) => channelAction(() => channel.propose(agent, input as unknown as ProposalRequest)),
};

export const vote: AgentTool = {
  readOnly: false,
  external: false,
  definition: {
    name: 'vote',
    description: 'Vote on an open proposal. You may change your vote until the proposal is decided.',
    input_schema: {
      type: 'object',
      properties: {
        proposal: { type: 'string', description: 'The proposal id.' },
        option: { type: 'string', description: 'One of its options, exactly.' },
        reason: { type: 'string', description: 'Why, in a sentence.' },
      },
      required: ['proposal', 'option'],
    },
  },
  run: (input, { agent, channel }) =>
    channelAction(() => channel.vote(agent, stringArg(input, 'proposal'), stringArg(input, 'option'), stringArg(input, 'reason', ''))),
};

export const cancelProposal: AgentTool = {
  readOnly: false,
  external: false,
  definition: {
    name: 'cancel_proposal',
    description: 'Cancel a proposal you opened.',
    input_schema: { type: 'object', properties: { proposal: { type: 'string' } }, required: ['proposal'] },
  },
  run: (input, { agent, channel }) => channelAction(() => channel.cancel(agent, stringArg(input, 'proposal'))),
};

export const channelHistory: AgentTool = {
  readOnly: true,
  external: false,
  definition: {
    name: 'channel_history',
    description: 'Read earlier messages of the team channel, including ones not addressed to you.',
    input_schema: {
      type: 'object',
      properties: {
        sender: { type: 'string', description: 'Only messages from this agent (or "system").' },
        last: { type: 'integer', minimum: 1, maximum: 200, description: 'How many of the latest messages (default 20).' },
      },
    },
  },
  run: (input, { channel }) =>
    asToolResult(() => {
      const sender = input.sender === undefined ? undefined : stringArg(input, 'sender');
      const messages = channel.history({ sender, last: numberArg(input, 'last', 20) });
      return messages.length ? messages.map(formatWithId).join('\n\n') : 'No messages.';
    }),
};

/** The lead's `complete`; with typed outputs (docs/design.md: outputs and the Action), it takes their values, checked against their declarations. */
export function completeTool(typed: Record<string, TypedOutput> = {}): AgentTool {
  const names = Object.keys(typed);
  return {
    readOnly: false,
    external: false,
    definition: {
      name: 'complete',
      description: `End the whole run, as the lead: give the status and a summary of the outcome${names.length ? `, and the run's outputs (${names.join(', ')})` : ''}. Nothing runs after this.`,
      input_schema: {
        type: 'object',
        properties: {
          status: { type: 'string', enum: ['success', 'failure'] },
          summary: { type: 'string', description: 'The result, for the people who started the run.' },
          ...(names.length ? { outputs: { ...outputsSchema(typed), description: 'The values of the run\'s outputs, as declared: required for success.' } } : {}),
        },
        required: ['status', 'summary'],
      },
    },
    run: async (input, context) => {
      const status = input.status;
      if (status !== 'success' && status !== 'failure') return { content: 'status must be "success" or "failure"', isError: true };
      const summary = typeof input.summary === 'string' ? input.summary : '';
      const problem = names.length ? await checkOutputs(outputsSchema(typed), input.outputs, context.signal) : undefined;
      // A success gives every output as declared; a failure gives them only if it can.
      if (problem && status === 'success') return { content: `Not complete: ${problem}. Call complete again with outputs that fit.`, isError: true };
      context.complete(status, summary, names.length && !problem ? (input.outputs as Record<string, unknown>) : undefined);
      return { content: 'The run is complete.' };
    },
  };
}
