import type { Channel, ProposalView } from '../channel/channel.js';
import type { ChannelEvent } from '../channel/channel-events.js';
import { isPerson } from '../session/person.js';
import type { Journal } from './journal.js';
import type { ProgressListener } from './progress-events.js';
import type { TrustPolicy } from './trust.js';
import type { AgentProfile } from '../agents/profile.js';
import type { Scope } from '../workflow/evaluate.js';
import type { LocatedTemplate, Workflow } from '../workflow/load.js';

/** Tools whose result says only what they did, not what they read. */
const WRITES_ONLY = new Set(['write_file', 'annotate']);

/** A tool call as the gate sees it. */
interface Use {
  name: string;
  input: unknown;
}

/**
 * Which agents have read text from outside the team (docs/security.md: untrusted content). An
 * agent is tainted for the rest of the run once its prompts, its inbox or a tool's result holds
 * such text: untrusted sources in its prompts, the kickoff filled from them, a message from a
 * tainted agent, what a tool read in a stranger's workspace. A proposal a tainted agent opens does
 * not taint its voters: they are asked to judge it, and the ballot shows the exact action. Each
 * taint is an `agent_tainted` event. A tainted agent's tools that change something outside the
 * run go through only with `untrusted: allow`, or once per proposal that names the exact call,
 * decided "allow" by votes of agents that are not tainted or of people.
 */
export class Taints {
  private readonly why = new Map<string, string>();
  /** Why a document makes its readers tainted, when one does. */
  private untrustedDocument: string | undefined;
  /** The kickoff's untrusted sources, known once it is filled. */
  private kickoffSources: string[] = [];
  /** Consents used: proposals whose action went through. */
  private readonly used = new Set<string>();

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

  taint(agent: string, why: string): void {
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
      if (sources.length && !this.untrustedDocument) this.untrustedDocument = `document "${name}" holds ${sources.join(', ')}`;
    }
    if (this.untrustedDocument) for (const agent of agents) this.taint(agent, this.untrustedDocument);
  }

  /** A channel event: what it brings into an inbox may be untrusted. */
  noticed(event: ChannelEvent): void {
    if (event.type !== 'message') return;
    const m = event.message;
    let from: string | undefined;
    if (m.kind === 'agent' && this.has(m.sender)) from = `a message from @${m.sender}, who read untrusted text`;
    else if (m.kind === 'kickoff' && this.kickoffSources.length) from = `the kickoff, which holds ${this.kickoffSources.join(', ')}`;
    if (from) for (const r of m.recipients) this.taint(r, from);
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
    const consent = channel.allProposals().find((p) => this.consents(p, use));
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
    if (p.action.tool !== use.name || canonical(p.action.input) !== canonical(use.input ?? {})) return false;
    const allowing = Object.entries(p.votes).filter(([, v]) => v.option === 'allow');
    return allowing.length > 0 && allowing.every(([voter]) => isPerson(voter) || !this.has(voter));
  }
}

/** JSON with every object's keys in order: two inputs that mean the same compare equal. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
