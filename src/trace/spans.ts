import { createHash } from 'node:crypto';
import type { SessionEvent, SessionHeader } from '../session/format.js';
import { listCacheSavingUsd } from '../provider/pricing.js';
import type { CacheTtl } from '../workflow/types.js';
import { chatAttributes, type FailedCall, failedChat } from './chat-spans.js';
import { firstLine, type TraceSpan } from './trace-span.js';

export type { AttributeValue, TraceSpan } from './trace-span.js';

export interface SpanOptions {
  /** --trace-content: prompts, completions and tool input and output as attributes. */
  content?: boolean;
}

/**
 * Makes a run's spans from its session's events, one event at a time, as the run writes them or
 * as a file is read: `add` gives the spans an event ends, `finish` ends the rest. Ids are derived
 * from the run id and each span's place in the run, so the same session gives the same spans
 * whenever it is exported, and a resumed run's spans continue its trace.
 */
export class SpanBuilder {
  readonly traceId: string;
  private readonly open = new Map<string, TraceSpan>();
  /** How often each key has opened a span. */
  private readonly keysSeen = new Map<string, number>();
  private readonly workflow: TraceSpan;
  /** Each agent's latest time in its turn: where its next model call began. */
  private readonly lastAt = new Map<string, number>();
  /** The span a spawned agent's turns go under: the turn of its spawner that spawned it. */
  private readonly spawnedUnder = new Map<string, string>();
  private readonly models = new Map<string, string>();
  private readonly waits = new Map<string, number>();
  /** Each agent's current turn. */
  private readonly turns = new Map<string, number>();
  private latest: number;
  /** What the prompt cache read, wrote and saved (list prices), for the workflow's span. */
  private readonly promptCache = { read_tokens: 0, written_tokens: 0, saved_usd: 0 };
  private cacheTtl: CacheTtl = '5m';

  constructor(
    private readonly header: SessionHeader,
    private readonly options: SpanOptions = {},
  ) {
    this.traceId = hashHex(`trace\0${header.run_id}`, 32);
    this.latest = Date.parse(header.started_at) || 0;
    this.workflow = this.span('workflow', undefined, 'invoke_workflow', this.latest, 'internal', {
      'gen_ai.operation.name': 'invoke_workflow',
      'conclave.run_id': header.run_id,
      'conclave.workflow.path': header.workflow.path,
    });
  }

  /** The spans this event ends. An event without a time (a file from before traces) takes the latest time seen. */
  add(e: SessionEvent): TraceSpan[] {
    const at = e.at_ms ?? this.latest;
    this.latest = Math.max(this.latest, at);
    switch (e.type) {
      case 'run_started':
        this.workflow.name = `invoke_workflow ${e.workflow}`;
        this.workflow.attributes['gen_ai.agent.name'] = e.workflow;
        this.cacheTtl = e.cache_ttl ?? '5m';
        return [];
      case 'agent_spawned': {
        const spawner = this.open.get(turnKey(e.parent, this.turnOf(e.parent)));
        if (spawner) {
          this.spawnedUnder.set(e.agent, spawner.spanId);
          spawner.events.push({ name: 'agent_spawned', atMs: at, attributes: { 'gen_ai.agent.name': e.agent, 'conclave.template': e.template } });
        }
        return [];
      }
      case 'turn_started': {
        const parent = this.spawnedUnder.get(e.agent) ?? this.workflow.spanId;
        this.lastAt.set(e.agent, at);
        this.turns.set(e.agent, e.turn);
        this.span(turnKey(e.agent, e.turn), parent, `invoke_agent ${e.agent}`, at, 'internal', {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': e.agent,
          'conclave.turn': e.turn,
          'conclave.messages': e.messages.length,
        });
        return [];
      }
      case 'rate_waited':
        this.waits.set(callKey(e.agent, e.turn, e.step), e.waited_ms);
        return [];
      case 'model_call':
        return [this.modelCall(e, at)];
      case 'call_failed':
      case 'call_interrupted':
      case 'call_abandoned':
      case 'context_exceeded':
        return [this.failedCall(e, at)];
      case 'context_compacted':
        this.open.get(turnKey(e.agent, e.turn))?.events.push({
          name: 'context_compacted',
          atMs: at,
          attributes: {
            'conclave.reason': e.reason,
            'conclave.tokens_before': e.tokens_before,
            'conclave.tokens_after': e.tokens_after,
            'conclave.cleared': e.cleared,
          },
        });
        this.lastAt.set(e.agent, at);
        return [];
      case 'tool_call': {
        const parent = this.open.get(turnKey(e.agent, e.turn))?.spanId ?? this.workflow.spanId;
        this.span(toolKey(e.agent, e.turn, e.tool_use_id), parent, `execute_tool ${e.tool}`, at, 'internal', {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': e.tool,
          'gen_ai.tool.call.id': e.tool_use_id,
          ...(this.options.content ? { 'gen_ai.tool.call.arguments': JSON.stringify(e.input) } : {}),
        });
        return [];
      }
      case 'tool_result': {
        this.lastAt.set(e.agent, at);
        const span = this.close(toolKey(e.agent, e.turn, e.tool_use_id), at, e.is_error ? { code: 'error', message: firstLine(e.content) } : { code: 'unset' });
        if (span && this.options.content) span.attributes['gen_ai.tool.call.result'] = e.content;
        if (span && e.is_error) span.attributes['error.type'] = 'tool_error';
        return span ? [span] : [];
      }
      case 'proposal_opened':
        this.span(`proposal\0${e.proposal.id}`, this.workflow.spanId, `proposal ${e.proposal.id}`, at, 'internal', {
          'conclave.proposal.question': e.proposal.question,
          'conclave.proposal.proposer': e.proposal.proposer,
          'conclave.proposal.options': e.proposal.options,
          'conclave.proposal.rule': e.proposal.rule,
        });
        return [];
      case 'vote':
        this.open
          .get(`proposal\0${e.proposal}`)
          ?.events.push({ name: 'vote', atMs: at, attributes: { 'gen_ai.agent.name': e.voter, 'conclave.option': e.option } });
        return [];
      case 'proposal_closed': {
        const span = this.close(`proposal\0${e.proposal}`, at, { code: 'unset' });
        if (span) Object.assign(span.attributes, { 'conclave.proposal.status': e.status, ...(e.winner ? { 'conclave.proposal.winner': e.winner } : {}) });
        return span ? [span] : [];
      }
      case 'edit_proposed':
        this.span(`edit\0${e.edit.id}`, this.workflow.spanId, `edit ${e.edit.id}`, at, 'internal', {
          'conclave.document.name': e.edit.document,
          'conclave.edit.author': e.edit.author,
          'conclave.edit.base_version': e.edit.base,
        });
        return [];
      case 'edit_closed': {
        const span = this.close(`edit\0${e.edit}`, at, { code: 'unset' });
        if (span) Object.assign(span.attributes, { 'conclave.edit.status': e.status, 'conclave.edit.reviewer': e.reviewer });
        return span ? [span] : [];
      }
      case 'turn_ended':
        return this.endTurn(e.agent, e.turn, at, { code: 'unset' });
      case 'turn_failed': {
        // The model call that failed the turn is a failed call, as a spawned agent's is (`call_failed`).
        if (e.call) this.models.set(e.agent, e.call.model);
        const failed = e.call ? [this.failedCall({ type: 'call_failed', seq: e.seq, agent: e.agent, turn: e.turn, error: e.error, ...e.call }, at)] : [];
        return [...failed, ...this.endTurn(e.agent, e.turn, at, { code: 'error', message: firstLine(e.error) }, 'turn_failed')];
      }
      case 'run_ended':
        this.workflow.status = e.status === 'success' ? { code: 'ok' } : { code: 'error', message: firstLine(e.reason) };
        Object.assign(this.workflow.attributes, {
          'conclave.status': e.status,
          'conclave.exit_code': e.exit_code,
          ...(e.usage ? { 'conclave.cost_usd': e.usage.costUsd } : {}),
          'conclave.prompt_cache.read_tokens': this.promptCache.read_tokens,
          'conclave.prompt_cache.written_tokens': this.promptCache.written_tokens,
          'conclave.prompt_cache.saved_usd': Number(this.promptCache.saved_usd.toFixed(6)),
        });
        if (e.status !== 'success') this.workflow.attributes['error.type'] = e.status;
        this.workflow.endMs = at;
        return [];
      default:
        return [];
    }
  }

  /** Ends every span still open at the latest time seen (a run cut short by a crash), the workflow's last. */
  finish(): TraceSpan[] {
    const ended = [...this.open.values()].filter((s) => s !== this.workflow);
    for (const span of ended) {
      span.endMs = Math.max(span.startMs, this.latest);
      if (span.status.code === 'unset') span.status = { code: 'error', message: 'not finished: the run stopped before it ended' };
    }
    this.open.clear();
    this.workflow.endMs = Math.max(this.workflow.endMs, this.latest);
    return [...ended, this.workflow];
  }

  private turnOf(agent: string): number {
    return this.turns.get(agent) ?? 0;
  }

  private modelCall(e: Extract<SessionEvent, { type: 'model_call' }>, at: number): TraceSpan {
    const requested = typeof e.request.model === 'string' ? e.request.model : undefined;
    if (requested) this.models.set(e.agent, requested);
    const model = this.models.get(e.agent) ?? String((e.response as { model?: unknown }).model ?? 'unknown');
    const usage = e.response.usage ?? {};
    this.promptCache.read_tokens += usage.cache_read_input_tokens ?? 0;
    this.promptCache.written_tokens += usage.cache_creation_input_tokens ?? 0;
    this.promptCache.saved_usd += listCacheSavingUsd(usage, model, this.cacheTtl);
    return this.callSpan(e.agent, e.turn, e.step, `chat ${model}`, at, chatAttributes(e, model, this.options.content === true));
  }

  private failedCall(e: FailedCall, at: number): TraceSpan {
    const model = this.models.get(e.agent) ?? 'unknown';
    const { attributes, status } = failedChat(e, model);
    const span = this.callSpan(e.agent, e.turn, e.step, `chat ${model}`, at, attributes);
    span.status = status;
    return span;
  }

  /** A model call's span: from the agent's previous step to the answer, the wait for rate limits in it. */
  private callSpan(agent: string, turn: number, step: number, name: string, at: number, attributes: TraceSpan['attributes']): TraceSpan {
    const parent = this.open.get(turnKey(agent, turn))?.spanId ?? this.workflow.spanId;
    const start = Math.min(this.lastAt.get(agent) ?? at, at);
    const waited = this.waits.get(callKey(agent, turn, step));
    const key = callKey(agent, turn, step);
    const span = this.span(key, parent, name, start, 'client', { ...attributes, ...(waited ? { 'conclave.rate_waited_ms': waited } : {}) });
    this.lastAt.set(agent, at);
    return this.close(key, at, span.status)!;
  }

  private endTurn(agent: string, turn: number, at: number, status: TraceSpan['status'], errorType?: string): TraceSpan[] {
    const span = this.close(turnKey(agent, turn), at, status);
    if (span && errorType) span.attributes['error.type'] = errorType;
    return span ? [span] : [];
  }

  private span(
    key: string,
    parentSpanId: string | undefined,
    name: string,
    startMs: number,
    kind: TraceSpan['kind'],
    attributes: TraceSpan['attributes'],
  ): TraceSpan {
    // A key met again (a model that reuses a tool_use id) gets an id of its own: no two spans share one.
    const seen = this.keysSeen.get(key) ?? 0;
    this.keysSeen.set(key, seen + 1);
    const span: TraceSpan = {
      traceId: this.traceId,
      spanId: hashHex(`span\0${this.header.run_id}\0${key}${seen > 0 ? `\0${seen}` : ''}`, 16),
      ...(parentSpanId ? { parentSpanId } : {}),
      name,
      kind,
      startMs,
      endMs: startMs,
      attributes,
      events: [],
      status: { code: 'unset' },
    };
    this.open.set(key, span);
    return span;
  }

  private close(key: string, at: number, status: TraceSpan['status']): TraceSpan | undefined {
    const span = this.open.get(key);
    if (!span) return undefined;
    this.open.delete(key);
    span.endMs = Math.max(span.startMs, at);
    span.status = status;
    return span;
  }
}

const turnKey = (agent: string, turn: number) => `turn\0${agent}\0${turn}`;
const callKey = (agent: string, turn: number, step: number) => `call\0${agent}\0${turn}\0${step}`;
const toolKey = (agent: string, turn: number, id: string) => `tool\0${agent}\0${turn}\0${id}`;

function hashHex(text: string, length: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

/** Every span of a session, as `conclave trace` exports them. */
export function spansOf(header: SessionHeader, events: readonly SessionEvent[], options: SpanOptions = {}): TraceSpan[] {
  const builder = new SpanBuilder(header, options);
  const spans = events.flatMap((e) => builder.add(e));
  return [...spans, ...builder.finish()];
}
