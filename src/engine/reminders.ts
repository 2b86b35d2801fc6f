import type { Channel, ProposalView } from '../channel/channel.js';
import { peopleSeatsOpen } from '../session/ballot.js';

/** Something a member owes the run (a vote, a review), keyed so that it is reminded of once. */
interface Owed<T> {
  key: string;
  who: string;
  what: T;
}

/** What can be owed, how its reminders read, and what becomes of it once reminding is over. */
interface Debts<T> {
  owed(): Owed<T>[];
  /** The messages that remind of `fresh` (not reminded of before, owed by members who can take a turn). */
  remind(fresh: Owed<T>[]): { text: string; to: string[] }[];
  /** Nothing left to remind of, and `owed` still owed: what the run does about it; whether anything changed. */
  lapse?(owed: Owed<T>[]): boolean;
}

/**
 * When nothing else runs and members still owe something (a vote, an edit's review), each who can
 * still take a turn is reminded once (docs/workflow.md: proposals, documents). What is owed after
 * that lapses: a proposal closes with the votes cast, so that a run cannot hang on it; an edit
 * stays open, and the run ends with it open (`open_edits`).
 */
export class Reminders<T> {
  private readonly reminded = new Set<string>();

  constructor(
    private readonly channel: Channel,
    private readonly debts: Debts<T>,
  ) {}

  /** Reminds of what is owed, or lets it lapse. Returns whether anything changed. */
  settle(canTakeTurn: (agent: string) => boolean): boolean {
    const owed = this.debts.owed();
    const fresh = owed.filter((o) => canTakeTurn(o.who) && !this.reminded.has(`${o.key}\0${o.who}`));
    for (const o of fresh) this.reminded.add(`${o.key}\0${o.who}`);
    for (const { text, to } of this.debts.remind(fresh)) this.channel.postSystem(text, to);
    if (fresh.length > 0) return true;
    return owed.length > 0 && (this.debts.lapse?.(owed) ?? false);
  }
}

/** Votes not cast by agents who took their turn: one reminder per proposal; then the proposals close (`onClosed`), unless people are still to vote. */
export function voteReminders(channel: Channel, onClosed: (p: ProposalView) => void): Reminders<string> {
  return new Reminders(channel, {
    owed: () => channel.waitingVoters().flatMap(({ proposal, voters }) => voters.map((who) => ({ key: proposal, who, what: proposal }))),
    remind: (fresh) =>
      [...groupBy(fresh, (o) => o.what)].map(([proposal, voters]) => ({
        text: `Proposal "${proposal}" is still waiting for your vote: ${channel.proposal(proposal)!.question} Use the vote tool.`,
        to: voters.map((o) => o.who),
      })),
    // A proposal that also waits for people stays open: the run waits for them (people-votes.ts).
    lapse: (owed) => {
      const people = new Set(
        channel
          .allProposals()
          .filter((p) => peopleSeatsOpen(p).length > 0)
          .map((p) => p.id),
      );
      const lapsing = [...new Set(owed.map((o) => o.what))].filter((proposal) => !people.has(proposal));
      for (const proposal of lapsing) onClosed(channel.expire(proposal));
      return lapsing.length > 0;
    },
  });
}

/** Edits that wait for their owner's review: one reminder per owner, of all its edits; then they stay open. */
export function editReminders(channel: Channel): Reminders<{ id: string; document: string; author: string }> {
  return new Reminders(channel, {
    owed: () => channel.documents.openEdits().map((edit) => ({ key: edit.id, who: edit.owner, what: edit })),
    remind: (fresh) =>
      [...groupBy(fresh, (o) => o.who)].map(([owner, owed]) => {
        const one = owed.length === 1;
        const list = owed.map(({ what: e }) => `${e.id} of "${e.document}" from @${e.author}`).join(', ');
        return {
          text:
            `${one ? 'Edit' : 'Edits'} ${list} still ${one ? 'waits' : 'wait'} for your review: accept or reject ` +
            `${one ? 'it' : 'each'} with review_edit (read_document shows the edits that wait).`,
          to: [owner],
        };
      }),
  });
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}
