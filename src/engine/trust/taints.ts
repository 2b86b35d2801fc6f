import type { Channel, ProposalView } from '../../channel/channel.js';
import type { ChannelEvent } from '../../channel/channel-events.js';
import { isPerson } from '../../session/person.js';
import type { Journal } from '../replay/journal.js';
import type { ProgressListener } from '../progress-events.js';
import type { TrustPolicy } from './trust.js';
import { TextOrigins } from './text-origins.js';
import { sameJson } from '../replay/same-json.js';
import type { Shown } from '../../agents/tools/tool.js';
import type { AgentProfile } from '../../agents/profile.js';
import type { Scope } from '../../workflow/evaluate.js';
import type { LocatedTemplate, Workflow } from '../../workflow/load.js';

/** Tools whose result says only what they did, not what they read. */
const WRITES_ONLY = new Set(['write_file', 'annotate']);

/** A tool call as the gate sees it. */
interface Use {
  name: string;
  input: unknown;
}

/**
 * Which agents have read text from outside the team (docs/security.md: untrusted content). An
 * agent is tainted for the rest of the run once anything in front of it holds such text, by
 * whatever way it came: its prompts, the kickoff, a message or a notice in its inbox, the
 * channel's history, a document, a proposal, what a tool read in a stranger's workspace
 * (text-origins.ts says which of the run's texts hold it). Each taint is an `agent_tainted` event.
 * A tainted agent's tools that change something outside the run go through only with
 * `untrusted: allow`, or once per proposal that names the exact call, decided "allow" by people
 * or by agents that had read nothing from outside when it opened and until they voted: reading
 * the proposal itself taints a voter for its own writes, not for its vote.
 */
export class Taints {
  private readonly why = new Map<string, string>();
  private readonly origins = new TextOrigins((agent) => this.has(agent));
  /** Whether any document makes its readers tainted from the start. */
  private untrustedDocument: string | undefined;
  /** The kickoff's untrusted sources, known once it is filled. */
  private kickoffSources: string[] = [];
  /** Consents used: proposals whose action went through. */
  private readonly used = new Set<string>();
  /** Per open proposal, its agent voters that have read nothing from outside but the proposal. */
  private readonly clean = new Map<string, Set<string>>();
  /** Per proposal, the voters whose last vote was cast while clean for it. */
  private readonly cleanVotes = new Map<string, Set<string>>();

  constructor(
    /** Where text comes from (trust.ts). */
    readonly policy: TrustPolicy,
    private readonly journal: Journal,
    private readonly allow: boolean,
    private readonly progress: ProgressListener,
  ) {}

  has(agent: string): boolean {
    return this.why.has(agent);
  }

  /** `agent` read untrusted text; `proposal` when the text was that proposal's own, which does not spoil its vote on it. */
  taint(agent: string, why: string, proposal?: string): void {
    for (const [id, voters] of this.clean) if (id !== proposal) voters.delete(agent);
    if (this.why.has(agent)) return;
    this.why.set(agent, why);
    this.journal.append({ type: 'agent_tainted', agent, why });
    this.progress({ type: 'warning', message: `@${agent} read untrusted text (${why}): its writes outside the run need consent` });
  }

  /** The kickoff, filled with its untrusted values fenced: its recipients are tainted when it holds any. */
  kickoff(template: LocatedTemplate, scope: Scope): string {
    const { text, sources } = this.policy.fill(template, scope);
    this.kickoffSources = sources;
    return text;
  }

  /** An agent joins: tainted from its start when its prompts hold untrusted values, or a document it can read does. */
  joined(profile: Pick<AgentProfile, 'name' | 'untrusted'>): void {
    if (profile.untrusted) this.taint(profile.name, `its prompts hold ${profile.untrusted.join(', ')}`);
    else if (this.untrustedDocument) this.taint(profile.name, this.untrustedDocument);
  }

  /**
   * The documents are open: one whose first text holds an untrusted value (or is a file of a
   * stranger's workspace) can be read by every agent, so every agent is tainted. Its text is not
   * fenced: it is the document, which `write_to` writes back as it is.
   */
  documentsOpened(workflow: Workflow, agents: Iterable<string>): void {
    for (const [name, declared] of Object.entries(workflow.spec.documents ?? {})) {
      const template = workflow.templates.get(`documents.${name}.text`);
      const sources = template ? this.policy.sourcesOf(template) : declared.file && this.policy.strangersWorkspace ? ['a file of the workspace'] : [];
      if (!sources.length) continue;
      const why = `document "${name}" holds ${sources.join(', ')}`;
      this.origins.documentHolds(name, why);
      this.untrustedDocument ??= why;
    }
    if (this.untrustedDocument) for (const agent of agents) this.taint(agent, this.untrustedDocument);
  }

  /** A channel event: a message's recipients are tainted when its text holds a stranger's words. */
  noticed(event: ChannelEvent): void {
    if (event.type === 'proposal_opened') {
      const { id, voters } = event.proposal;
      this.clean.set(id, new Set(voters.filter((v) => !isPerson(v) && !this.has(v))));
    }
    if (event.type === 'vote') {
      const votes = this.cleanVotes.get(event.proposal) ?? new Set<string>();
      this.cleanVotes.set(event.proposal, votes);
      if (this.clean.get(event.proposal)?.has(event.voter)) votes.add(event.voter);
      else votes.delete(event.voter);
    }
    if (event.type === 'proposal_closed') this.clean.delete(event.proposal);
    const kickoff = this.kickoffSources.length ? `the kickoff, which holds ${this.kickoffSources.join(', ')}` : undefined;
    const origin = this.origins.noticed(event, kickoff);
    if (origin && event.type === 'message') for (const r of event.message.recipients) this.taint(r, origin.why, origin.proposal);
  }

  /** A tool showed `agent` texts the run keeps (the channel's history, a document, a proposal): it is tainted when they hold a stranger's words. */
  shown(agent: string, shown: Shown): void {
    const origin = this.origins.of(shown);
    if (origin) this.taint(agent, origin.why, origin.proposal);
  }

  /** A tool's result came back: in a stranger's workspace, what a tool read (or a command printed) there is untrusted. */
  read(agent: string, tool: string): void {
    if (this.policy.strangersWorkspace && !WRITES_ONLY.has(tool)) this.taint(agent, `what ${tool} read in the workspace of ${this.policy.event!.why}`);
  }

  /** Whether the agent's commands get only the minimal environment: it is tainted, or the workspace (the code a command runs) is a stranger's. */
  stripsEnv(agent: string): boolean {
    return this.has(agent) || this.policy.strangersWorkspace;
  }

  /** Why a tool call that changes something outside the run may not go through now; undefined when it may. */
  refusal(agent: string, use: Use, readOnly: boolean, channel: Channel): string | undefined {
    if (readOnly || this.allow || !this.has(agent)) return undefined;
    const consent = channel.allProposals().find((p) => p.proposer === agent && this.consents(p, use));
    if (consent) {
      this.used.add(consent.id);
      return undefined;
    }
    return (
      `Not run: you read untrusted text (${this.why.get(agent)}), so ${use.name} needs the team's consent. Open a proposal with ` +
      `action {"tool": ${JSON.stringify(use.name)}, "input": <this exact input>} and options ["allow", "deny"] for voters who have not read ` +
      'untrusted text (agents that are not tainted, or people); once it is decided "allow", this exact call goes through, once.'
    );
  }

  private consents(p: ProposalView, use: Use): boolean {
    if (p.status !== 'decided' || p.winner !== 'allow' || !p.action || this.used.has(p.id)) return false;
    if (p.action.tool !== use.name || !sameJson(p.action.input, use.input ?? {})) return false;
    const allowing = Object.entries(p.votes).filter(([, v]) => v.option === 'allow');
    const clean = this.cleanVotes.get(p.id);
    return allowing.length > 0 && allowing.every(([voter]) => isPerson(voter) || clean?.has(voter) === true);
  }
}
