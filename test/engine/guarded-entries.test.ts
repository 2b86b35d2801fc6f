import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchCalls } from '../../src/engine/batches/batch-calls.js';
import { Journal } from '../../src/engine/replay/journal.js';
import { Run } from '../../src/engine/run.js';
import { Scheduler } from '../../src/engine/scheduler.js';
import type { RunOptions } from '../../src/engine/run-options.js';
import type { BatchApi } from '../../src/provider/batch-api.js';
import type { ModelRequest, ModelResponse } from '../../src/provider/client.js';
import type { EventInput } from '../../src/session/format.js';
import { SessionWriteError } from '../../src/session/writer.js';
import { loadWorkflow } from '../../src/workflow/load.js';
import { reply, VOTE_TEAM } from '../fixtures/model-responses.js';

/**
 * The run's ways in from outside a turn (docs/ARCHITECTURE.md: one guarded way in): a turn's end,
 * a batch's poll, a batched call's wait, the people's deadline timer and an interrupt each go through
 * Run.step, whose catch stops the run with the throw's sentence. A throw is injected at each: the
 * run ends `error` with that sentence, start() resolves, the session is closed, and nothing
 * reaches the process as an unhandled rejection. (A turn guards itself (turn-runner.ts), a worker's
 * report answers a call inside a turn, and the journal's stall is driven through the CLI in
 * test/e2e/replay.test.ts; the CLI's side, `--json` and the lock, in test/e2e/guarded-entries.test.ts.)
 */

const FULL = 'cannot write the session file s: the disk is full';

const text = (t: string) => reply([{ type: 'text', text: t, citations: null }]);
const tool = (name: string, input: unknown) => reply([{ type: 'tool_use', id: `toolu_${name}`, name, input }], 'tool_use');

/** Each agent's answers in order, then an empty text; an agent is known by its system prompt. */
function scripted(answers: Record<string, ModelResponse[]>): (request: ModelRequest) => Promise<ModelResponse> {
  return async (request) => {
    const system = typeof request.system === 'string' ? request.system : JSON.stringify(request.system);
    const agent = /You are @([\w-]+)/.exec(system)![1]!;
    return answers[agent]?.shift() ?? text('');
  };
}

interface Harness {
  yaml: string;
  call?: (request: ModelRequest) => Promise<ModelResponse>;
  batches?: BatchApi;
  /** The write that fails, as a full disk would fail it. */
  failOn?: (event: EventInput) => boolean;
  options?: Partial<RunOptions>;
  started?: (run: Run) => void;
}

const unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => unhandled.push(e);
process.on('unhandledRejection', onUnhandled);
afterEach(() => {
  vi.restoreAllMocks();
  expect(unhandled).toEqual([]);
});

async function runWith(h: Harness) {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-entries-'));
  writeFileSync(join(dir, 'workflow.yml'), h.yaml);
  const { workflow, diagnostics } = await loadWorkflow(join(dir, 'workflow.yml'));
  expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  const written: EventInput[] = [];
  let closed = false;
  // As the session's writer fails (session/writer.ts): once a write failed, every later one fails the same way.
  let full = false;
  const journal = new Journal({
    write: (event) => {
      full ||= h.failOn?.(event) === true;
      if (full) throw new SessionWriteError(FULL);
      written.push(event);
    },
    sync: () => {},
    lineOf: (e) => JSON.stringify(e),
  });
  const close = journal.close.bind(journal);
  journal.close = () => ((closed = true), close());
  const run = new Run({
    workflow: workflow!,
    inputs: {},
    identity: { runId: 'r', sessionPath: 's' },
    place: { workspace: dir, env: {} },
    answers: { call: h.call ?? scripted({}), ...(h.batches ? { batches: h.batches } : {}) },
    recording: { journal, limits: workflow!.limits },
    progress: () => {},
    ...h.options,
  });
  h.started?.(run);
  const result = await run.start();
  // A rejection let go would surface on a later turn of the event loop.
  await new Promise((r) => setTimeout(r, 50));
  return { result, written, closed };
}

function expectStoppedBy(outcome: Awaited<ReturnType<typeof runWith>>, sentence: string) {
  expect(outcome.result.status, outcome.result.reason).toBe('error');
  expect(outcome.result.reason).toContain(sentence);
  expect(outcome.closed).toBe(true);
}

/** A Message Batches API that keeps a batch in progress for `polls` polls, then answers every request with `answer`. */
function slowBatches(polls: number, answer: ModelResponse, onCreate?: () => void): BatchApi {
  const requests: { custom_id: string }[] = [];
  let seen = 0;
  return {
    create: async (body) => (requests.push(...body.requests), onCreate?.(), { id: 'msgbatch_1' }),
    retrieve: async () => ({ id: 'msgbatch_1', processing_status: ++seen > polls ? 'ended' : 'in_progress', created_at: new Date().toISOString() }),
    results: async () =>
      (async function* () {
        for (const r of requests) yield { custom_id: r.custom_id, result: { type: 'succeeded' as const, message: answer } };
      })(),
    cancel: async () => ({}),
  };
}

const VOTE = VOTE_TEAM;

describe('one guarded way into the run: a throw at each entry stops it with its sentence', () => {
  it("a turn's end: the reminder the scheduler writes after it fails to be written", async () => {
    const outcome = await runWith({
      yaml: VOTE,
      call: scripted({
        lead: [tool('propose', { id: 'verdict', question: 'Approve?', options: ['approve', 'reject'], voters: ['a'] }), text('Open.')],
        a: [text('Still reading.'), tool('vote', { proposal: 'verdict', option: 'approve' })],
      }),
      failOn: (e) => e.type === 'message' && JSON.stringify(e).includes('still waiting'),
    });
    expectStoppedBy(outcome, FULL);
  });

  it("the people's deadline timer: the proposal's close fails to be written", async () => {
    const outcome = await runWith({
      yaml: `${VOTE}people: { voters: ["@octocat"], deadline: 1s }\n`,
      call: scripted({
        lead: [tool('propose', { id: 'verdict', question: 'Approve?', options: ['approve', 'reject'], voters: ['@octocat'] }), text('Waiting.')],
      }),
      options: { people: { votes: [], run: 'r' } },
      failOn: (e) => e.type === 'proposal_closed',
    });
    expectStoppedBy(outcome, FULL);
    expect(outcome.written.some((e) => e.type === 'proposal_opened' || e.type === 'proposal')).toBe(true);
  });

  it("a batch's poll: what the scheduler does when a batch is still being processed throws", async () => {
    const parkIfStuck = vi.spyOn(Run.prototype as unknown as { parkIfStuck(): void }, 'parkIfStuck').mockImplementation(() => {
      // Only the poll's way in (the batch was created and is still in progress) is faulted.
      throw new SessionWriteError(FULL);
    });
    const outcome = await runWith({
      yaml: 'name: batched\ndefaults: { batch: true }\nagents:\n  lead: { role: manager }\nkickoff: Go.\n',
      batches: slowBatches(1, text('done')),
    });
    expect(parkIfStuck).toHaveBeenCalled();
    expectStoppedBy(outcome, FULL);
  });

  it("a batched call's wait: the turn its free slot lets start fails to start", async () => {
    const startEligible = vi.spyOn(Scheduler.prototype, 'startEligible');
    const original = startEligible.getMockImplementation();
    let calls = 0;
    startEligible.mockImplementation(function (this: unknown, ignoreFanIn: boolean) {
      // The first is the run's start; the second, the lead's call going to its batch.
      if (++calls === 2) throw new SessionWriteError(FULL);
      return (original ?? (() => {})).call(this, ignoreFanIn);
    });
    const outcome = await runWith({
      yaml: 'name: batched\ndefaults: { batch: true }\nagents:\n  lead: { role: manager }\nkickoff: Go.\n',
      batches: slowBatches(1, text('done')),
    });
    expect(calls).toBeGreaterThanOrEqual(2);
    expectStoppedBy(outcome, FULL);
  });

  it('an interrupt: what Ctrl-C leaves of the batches fails to be noted', async () => {
    vi.spyOn(BatchCalls.prototype, 'park').mockImplementation(() => {
      throw new SessionWriteError(FULL);
    });
    let run: Run | undefined;
    const outcome = await runWith({
      yaml: 'name: batched\ndefaults: { batch: true }\nagents:\n  lead: { role: manager }\nkickoff: Go.\n',
      batches: slowBatches(1_000, text('done'), () => setTimeout(() => run!.interrupt('SIGINT'), 20)),
      started: (r) => (run = r),
    });
    expectStoppedBy(outcome, FULL);
  });
});
