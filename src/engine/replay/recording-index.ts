import type { EventOf, SessionEvent } from '../../session/format.js';
import type { CacheTtl } from '../../workflow/types.js';

/**
 * What a recording holds, found by what asks for it (an agent's call, a tool use, a setup step, a
 * document, a batch), as positions in the recording: the journal releases each when its cursor
 * reaches it. Built once when a run resumes, forks or replays; empty for a new run.
 */
export class RecordingIndex {
  private readonly responses = new Map<string, number>();
  private readonly toolCalls = new Map<string, number>();
  /** By agent, turn and tool use id; a list, as nothing stops a model from using one id twice. */
  private readonly toolResults = new Map<string, number[]>();
  private readonly setups = new Map<string, number>();
  private readonly mcpListings = new Map<string, number>();
  /** The first text of each document the recording opened, by name. */
  private readonly documents = new Map<string, string>();
  /** The shared texts the recording keeps (by sha256): a resumed run does not keep them again. */
  readonly texts = new Set<string>();
  /** The message batch each recorded batched request went in, by its custom id. */
  private readonly batches = new Map<string, string>();
  /** Requests whose batch was being created when the recorded process stopped, with no batch noted for them. */
  private readonly creating = new Set<string>();
  private readonly creatingGroups: string[][] = [];
  /** Where each recorded turn started, by agent and turn. */
  private readonly turnStarts = new Map<string, number>();
  /** When each recorded proposal opened (epoch milliseconds), by id: a deadline for people counts from it. */
  private readonly proposalsOpened = new Map<string, number>();
  /** The prompt cache's ttl the recorded run kept its writes for, if a run was recorded. */
  readonly cacheTtl: CacheTtl | undefined;
  /** Whether the recorded run sent its agents the team's coordination tools as one list, if a run was recorded (profiles.ts). */
  readonly sharedTools: boolean | undefined;
  /** What the recorded run was estimated to cost before its first call, if it was. */
  readonly estimate: EventOf<'estimate'> | undefined;

  constructor(private readonly recording: readonly SessionEvent[]) {
    const started = recording.find((event): event is EventOf<'run_started'> => event.type === 'run_started');
    this.cacheTtl = started ? (started.cache_ttl ?? '5m') : undefined;
    this.sharedTools = started ? started.shared_tools === true : undefined;
    this.estimate = recording.findLast((event): event is EventOf<'estimate'> => event.type === 'estimate');
    recording.forEach((event, index) => {
      if (event.type === 'model_call' || event.type === 'context_exceeded' || event.type === 'call_failed' || event.type === 'call_interrupted')
        this.responses.set(callKey(event.agent, event.turn, event.step), index);
      else if (event.type === 'steered') this.responses.set(callKey(event.agent, event.turn, `steer ${event.step}`), index);
      else if (event.type === 'turn_started') this.turnStarts.set(callKey(event.agent, event.turn, 'start'), index);
      else if (event.type === 'tool_call') this.toolCalls.set(callKey(event.agent, event.turn, event.tool_use_id), index);
      else if (event.type === 'tool_result') {
        const key = callKey(event.agent, event.turn, event.tool_use_id);
        this.toolResults.set(key, [...(this.toolResults.get(key) ?? []), index]);
      } else if (event.type === 'setup_finished') this.setups.set(event.id, index);
      else if (event.type === 'mcp_tools') this.mcpListings.set(event.server, index);
      else if (event.type === 'document_opened') this.documents.set(event.document.name, event.document.text);
      else if (event.type === 'shared_text') this.texts.add(event.sha256);
      else if (event.type === 'proposal_opened' && event.at_ms !== undefined) this.proposalsOpened.set(event.proposal.id, event.at_ms);
      else if (event.type === 'batch_creating') {
        for (const id of event.custom_ids) this.creating.add(id);
        this.creatingGroups.push(event.custom_ids);
      } else if (event.type === 'batch_submitted')
        for (const id of event.custom_ids) {
          this.batches.set(id, event.batch_id);
          this.creating.delete(id);
        }
    });
  }

  /** When a recorded proposal opened, if the recording says. */
  proposalOpenedAt(id: string): number | undefined {
    return this.proposalsOpened.get(id);
  }

  /** Where the answer to an agent's call is (a response, a refusal as too long, a failure, an interruption). */
  response(agent: string, turn: number, step: number): number | undefined {
    return this.responses.get(callKey(agent, turn, step));
  }

  /** Where `queue: steer` joined messages to a call. */
  steered(agent: string, turn: number, step: number): number | undefined {
    return this.responses.get(callKey(agent, turn, `steer ${step}`));
  }

  turnStart(agent: string, turn: number): number | undefined {
    return this.turnStarts.get(callKey(agent, turn, 'start'));
  }

  /** Whether a tool call was recorded as started. */
  hasToolCall(agent: string, turn: number, toolUseId: string): boolean {
    return this.toolCalls.has(callKey(agent, turn, toolUseId));
  }

  /** Where the next result of a tool use is; each is taken once. */
  takeToolResult(agent: string, turn: number, toolUseId: string): number | undefined {
    return this.toolResults.get(callKey(agent, turn, toolUseId))?.shift();
  }

  setupOutput(id: string): number | undefined {
    return this.setups.get(id);
  }

  mcpTools(server: string): number | undefined {
    return this.mcpListings.get(server);
  }

  /** The text a recorded run opened document `name` with, if it did. */
  openedDocument(name: string): string | undefined {
    return this.documents.get(name);
  }

  /** How many recorded requests may be in a batch that no event names (the process was killed while creating it). */
  get batchesInDoubt(): number {
    return this.creating.size;
  }

  /** The calls of the batch a recorded run was creating with this request in it, when no event names that batch. */
  inDoubt(customId: string): readonly string[] | undefined {
    if (!this.creating.has(customId)) return undefined;
    return this.creatingGroups.findLast((group) => group.includes(customId));
  }

  /**
   * The requests a recorded run submitted in a batch and has no answer to, by custom id (the
   * request hash), each with its batch: what a parked run waits for.
   */
  unansweredBatched(): Map<string, string> {
    const answered = new Set(this.recording.flatMap((e) => (e.type === 'model_call' ? [e.request_sha256] : [])));
    return new Map([...this.batches].filter(([id]) => !answered.has(id)));
  }

  /** The message batch a recorded run submitted this request in (by its hash), if it did. */
  submittedBatch(customId: string): string | undefined {
    return this.batches.get(customId);
  }
}

function callKey(agent: string, turn: number, step: number | string): string {
  return `${agent}\0${turn}\0${step}`;
}
