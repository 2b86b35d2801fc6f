import { voterLabel } from '../../session/person.js';
import type { SessionSummary } from '../../session/summary.js';
import { codeCell, fenced, inline } from '../markdown-tables.js';

/**
 * The proposals that wait for people (docs/github-action.md: votes from people): the question, the
 * votes so far, whom it waits for, and for each option the command that votes for it, in a code
 * block. `safe` makes a model's text inert where the lines are read (a pull request comment).
 */
export function ballotsSection(s: Pick<SessionSummary, 'ballots'>, heading: string, safe: (text: string) => string = (t) => t): string[] {
  return s.ballots.flatMap((b) => [
    `${heading} 🗳️ Waiting for a vote: ${inline(b.proposal)}`,
    '',
    `**${safe(inline(b.question))}** — proposed by ${safe(`@${inline(b.proposer)}`)}; options ${b.options.map((o) => safe(codeCell(o))).join(', ')}; ` +
      `rule: ${inline(b.rule)}${b.deadline ? `; closes by its rule at ${inline(b.deadline)} if undecided` : ''}.`,
    '',
    ...(b.action ? ['It asks consent for this exact tool call:', '', fenced(JSON.stringify(b.action, null, 1), 'json'), ''] : []),
    `Waiting for ${b.waiting_for.join(', ')}.${Object.keys(b.votes).length ? ' Votes so far:' : ''}`,
    '',
    ...Object.entries(b.votes).map(
      ([voter, v]) => `- ${inline(voterLabel(voter))}: ${safe(codeCell(v.option))}${v.reason ? ` — ${safe(inline(v.reason))}` : ''}`,
    ),
    ...(Object.keys(b.votes).length ? [''] : []),
    ...(b.advice
      ? [
          "The team's advice (this decision is yours: the agents' votes decide nothing):",
          '',
          ...Object.entries(b.advice).map(([agent, v]) => `- ${inline(agent)}: ${safe(codeCell(v.option))}${v.reason ? ` — ${safe(inline(v.reason))}` : ''}`),
          '',
        ]
      : []),
    `To vote, comment on the pull request with exactly one of these lines, then a reason if you like (digest \`${b.digest}\` binds the vote to ` +
      'the proposal as shown):',
    '',
    fenced(Object.values(b.commands).join('\n')),
    '',
  ]);
}
