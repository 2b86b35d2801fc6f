import { formatWithId } from '../../channel/message.js';
import { RULES, type ProposalRequest } from '../../channel/proposal.js';
import { outputsSchema } from '../../workflow/typed-outputs.js';
import { checkOutputs } from './outputs-check.js';
import type { TypedOutput } from '../../workflow/types.js';
import { defineTool, input } from './define-tool.js';
import type { AgentTool, ToolResult } from './tool.js';

/** A channel action whose result the model reads as JSON (a ChannelError becomes a tool error, in defineTool). */
function channelAction(act: () => unknown): ToolResult {
  return { content: JSON.stringify(act(), null, 1) };
}

const PROPOSAL_INPUT = {
  question: input.string({ description: 'What is being decided.' }),
  options: input.strings({ minItems: 2, description: 'The choices, at least two.' }),
  id: input.string({ description: 'A short id such as "verdict" (default: p1, p2, …).' }).optional(),
  voters: input.strings({ description: 'Agent names (default: every agent but you).' }).optional(),
  rule: input.string({ enum: RULES, description: 'plurality, majority (default) or unanimous.' }).optional(),
  quorum: input.integer({ minimum: 1, description: 'Votes needed for any decision (default 1).' }).optional(),
  deadline_turns: input.integer({ minimum: 1, description: 'Close after this many more agent turns.' }).optional(),
};

/** `propose`; in a run with untrusted text, with `action`: the exact tool call a tainted agent asks consent for (engine/trust/taints.ts). */
function proposeTool(consent: boolean) {
  return defineTool({
    name: 'propose',
    description:
      'Open a proposal for the team to vote on. The voters are told the question at once; the result is posted to you and them when the rule decides it or ' +
      'the deadline passes.',
    readOnly: false,
    external: false,
    input: consent
      ? {
          ...PROPOSAL_INPUT,
          action: input
            .action({
              description:
                'The exact tool call this proposal asks consent for, { tool, input }: with options ["allow", "deny"], it goes through once ' +
                'when decided "allow".',
            })
            .optional(),
        }
      : PROPOSAL_INPUT,
    // The channel checks the proposal as a whole (distinct options, known voters, the id's form).
    run: (request, { agent, channel }) => channelAction(() => channel.propose(agent, withoutUndefined(request) as ProposalRequest)),
  });
}

export const propose = proposeTool(false);
export const proposeWithConsent = proposeTool(true);

export const vote = defineTool({
  name: 'vote',
  description: 'Vote on an open proposal. You may change your vote until the proposal is decided.',
  readOnly: false,
  external: false,
  input: {
    proposal: input.string({ description: 'The proposal id.' }),
    option: input.string({ description: 'One of its options, exactly.' }),
    reason: input.string({ description: 'Why, in a sentence.' }).optional(),
  },
  run: ({ proposal, option, reason = '' }, { agent, channel, shown }) => {
    const result = channelAction(() => channel.vote(agent, proposal, option, reason));
    // The answer shows every vote's reason.
    shown?.({ proposal });
    return result;
  },
});

export const cancelProposal = defineTool({
  name: 'cancel_proposal',
  description: 'Cancel a proposal you opened.',
  readOnly: false,
  external: false,
  input: { proposal: input.string() },
  run: ({ proposal }, { agent, channel }) => channelAction(() => channel.cancel(agent, proposal)),
});

export const channelHistory = defineTool({
  name: 'channel_history',
  description: 'Read earlier messages of the team channel, including ones not addressed to you.',
  readOnly: true,
  external: false,
  input: {
    sender: input.string({ description: 'Only messages from this agent (or "system").' }).optional(),
    last: input.integer({ minimum: 1, maximum: 200, description: 'How many of the latest messages (default 20).' }).optional(),
  },
  run: ({ sender, last = 20 }, { channel, shown }) => {
    const messages = channel.history({ sender, last });
    shown?.({ messages: messages.map((m) => m.id) });
    return { content: messages.length ? messages.map(formatWithId).join('\n\n') : 'No messages.' };
  },
});

/** The fields the model gave (an optional field left out stays out, as the channel expects). */
function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The lead's `complete`; with typed outputs (docs/design.md: outputs and the Action), it takes their values, checked against their declarations. */
/** `decide`: the proposal ids that are the people's (people.decide): a success waits until each was opened and closed by them or its deadline. */
export function completeTool(typed: Record<string, TypedOutput> = {}, decide: readonly string[] = []): AgentTool {
  const names = Object.keys(typed);
  return {
    readOnly: false,
    external: false,
    definition: {
      name: 'complete',
      description:
        `End the whole run, as the lead: give the status and a summary of the ` +
        `outcome${names.length ? `, and the run's outputs (${names.join(', ')})` : ''}. Nothing runs after this.`,
      input_schema: {
        type: 'object',
        properties: {
          status: { type: 'string', enum: ['success', 'failure'] },
          summary: { type: 'string', description: 'The result, for the people who started the run.' },
          ...(names.length ? { outputs: { ...outputsSchema(typed), description: "The values of the run's outputs, as declared: required for success." } } : {}),
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
      const theirs = status === 'success' ? decide.find((id) => (context.channel.proposal(id)?.status ?? 'open') === 'open') : undefined;
      if (theirs !== undefined)
        return {
          content: context.channel.proposal(theirs)
            ? `Not complete: proposal "${theirs}" is the people's to decide (people.decide) and still open, so the run cannot end in success yet. ` +
              'End your turn: the run waits for their vote, and you are told how it closed.'
            : `Not complete: "${theirs}" is the people's to decide (people.decide) and no proposal "${theirs}" was opened, so the run cannot end in ` +
              `success without their decision. Open it with propose (id "${theirs}"), then end your turn.`,
          isError: true,
        };
      context.complete(status, summary, names.length && !problem ? (input.outputs as Record<string, unknown>) : undefined);
      return { content: 'The run is complete.' };
    },
  };
}
