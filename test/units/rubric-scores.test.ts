import { describe, expect, it } from 'vitest';
import type { Channel } from '../../src/channel/channel.js';
import type { ModelCalls } from '../../src/engine/calls/model-calls.js';
import { ending, NoRecordedAnswer } from '../../src/engine/ending.js';
import type { ProgressEvent } from '../../src/engine/progress-events.js';
import type { Journal } from '../../src/engine/replay/journal.js';
import { scoreRubrics } from '../../src/engine/rubric-scores.js';
import { ProviderError } from '../../src/provider/provider-errors.js';
import type { Workflow } from '../../src/workflow/load.js';
import { DEFAULT_MODEL } from '../../src/workflow/limits.js';

/** The rubric graders' scoring step (docs/graders.md: rubric graders), on stubs of the run's parts. */

type Asked = {
  agent: string;
  turn: number;
  step: number;
  request: { model: string; tool_choice: unknown; system: { text: string }[]; messages: { content: { text: string }[] }[] };
};

const workflowOf = (graders: Record<string, { rubric: string; model?: string }> | undefined, model?: string) =>
  ({ spec: { ...(graders ? { graders } : {}), ...(model ? { defaults: { model } } : {}) } }) as unknown as Workflow;

function parts(answer: (asked: Asked) => unknown, options: { diverged?: boolean; messages?: unknown[]; signal?: AbortSignal } = {}) {
  const asked: Asked[] = [];
  const appended: unknown[] = [];
  const told: ProgressEvent[] = [];
  const calls = {
    call: async (agent: string, turn: number, step: number, request: Asked['request']) => {
      const one = { agent, turn, step, request };
      asked.push(one);
      return answer(one);
    },
  } as unknown as ModelCalls;
  const journal = { diverged: options.diverged === true, append: (e: unknown) => appended.push(e) } as unknown as Journal;
  const channel = { history: () => options.messages ?? [] } as unknown as Channel;
  return {
    asked,
    appended,
    told,
    parts: { calls, journal, channel, progress: (e: ProgressEvent) => told.push(e), signal: options.signal ?? new AbortController().signal },
  };
}

const scored = (score: unknown, reason: unknown = 'why') => ({ content: [{ type: 'tool_use', id: 't', name: 'score', input: { score, reason } }] });
const done = { ...ending('success', 'complete', 'one injection at src/app.js:3'), outputs: { verdict: 'request-changes' } };
const MESSAGES = [
  { id: 1, kind: 'kickoff', sender: 'system', recipients: ['lead'], text: 'Review it.' },
  { id: 2, kind: 'agent', sender: 'lead', recipients: ['a', 'b'], text: '@a @b look' },
  { id: 3, kind: 'agent', sender: 'a', recipients: [], text: 'done' },
];

describe('scoring the rubric graders', () => {
  it('nothing without graders, or when the lead did not complete', async () => {
    const none = parts(() => scored(1));
    expect(await scoreRubrics(workflowOf(undefined), done, none.parts)).toBeUndefined();
    expect(await scoreRubrics(workflowOf({}), done, none.parts)).toBeUndefined();
    for (const status of ['limit', 'error', 'interrupted', 'waiting', 'idle'] as const) {
      const end = status === 'interrupted' ? { ...done, status } : { ...ending(status, 'r') };
      expect(await scoreRubrics(workflowOf({ clear: { rubric: 'r' } }), end, none.parts)).toBeUndefined();
    }
    expect(none.asked).toEqual([]);
    expect(none.appended).toEqual([]);
    // A failure the lead completed with is scored.
    const failed = parts(() => scored(0.2));
    await scoreRubrics(workflowOf({ clear: { rubric: 'r' } }), ending('failure', 'r'), failed.parts);
    expect(failed.appended).toHaveLength(1);
  });

  it('one call per rubric, as agent grader-ID: the rubric, the ending, the summary, the outputs and the transcript; the score tool forced; a score recorded', async () => {
    const run = parts((a) => (a.agent === 'grader-clear' ? scored(0.123456, 'names the line') : scored(1, 'fine')), { messages: MESSAGES });
    const graders = { clear: { rubric: 'Does it name the line?' }, tone: { rubric: 'Is it kind?', model: 'claude-haiku-4-5' } };
    expect(await scoreRubrics(workflowOf(graders, 'claude-opus-5'), done, run.parts)).toBeUndefined();
    expect(run.asked.map((a) => [a.agent, a.turn, a.step, a.request.model])).toEqual([
      ['grader-clear', 1, 1, 'claude-opus-5'],
      ['grader-tone', 1, 1, 'claude-haiku-4-5'],
    ]);
    const first = run.asked[0]!.request;
    expect(first.tool_choice).toEqual({ type: 'tool', name: 'score' });
    expect(first.system[0]!.text).toMatch(/^You grade the work of a team of AI agents against a rubric\./);
    expect(first.messages[0]!.content[0]!.text).toBe(
      'The rubric:\nDoes it name the line?\n\nThe run ended: success.\n\n' +
        "The lead's summary:\none injection at src/app.js:3\n\n" +
        'The outputs:\n{\n  "verdict": "request-changes"\n}\n\n' +
        'The transcript:\n[#1 kickoff → @lead]\nReview it.\n\n[#2 @lead → @a, @b]\n@a @b look\n\n[#3 @a → no one]\ndone',
    );
    expect(run.appended).toEqual([
      { type: 'grader_scored', grader: 'clear', value: 0.1235, reason: 'names the line', model: 'claude-opus-5' },
      { type: 'grader_scored', grader: 'tone', value: 1, reason: 'fine', model: 'claude-haiku-4-5' },
    ]);
    // No default model in the workflow: conclave's.
    const plain = parts(() => scored(0));
    await scoreRubrics(workflowOf({ clear: { rubric: 'r' } }), { ...ending('success', 'r') }, plain.parts);
    expect(plain.asked[0]!.request.model).toBe(DEFAULT_MODEL);
    expect(plain.asked[0]!.request.messages[0]!.content[0]!.text).toContain("The lead's summary:\n(none)\n\nThe outputs:\n{}\n\nThe transcript:\n");
  });

  it('a score out of 0..1, or none, is null with why; a reason that is no text is empty', async () => {
    for (const [answer, value, reason] of [
      [scored(1.5), null, 'the model gave no score from 0 to 1'],
      [scored(-0.1), null, 'the model gave no score from 0 to 1'],
      [scored('0.5'), null, 'the model gave no score from 0 to 1'],
      [{ content: [{ type: 'text', text: '0.9' }] }, null, 'the model gave no score from 0 to 1'],
      [{ content: [{ type: 'tool_use', id: 't', name: 'other', input: { score: 0.9 } }] }, null, 'the model gave no score from 0 to 1'],
      [scored(0, 42), 0, ''],
      [scored(1, 'full'), 1, 'full'],
    ] as const) {
      const run = parts(() => answer);
      await scoreRubrics(workflowOf({ clear: { rubric: 'r' } }), done, run.parts);
      expect(run.appended, JSON.stringify(answer)).toEqual([{ type: 'grader_scored', grader: 'clear', value, reason, model: DEFAULT_MODEL }]);
    }
  });

  it("a call that fails scores null with why and warns, and the next rubric is scored; the run's ending stands", async () => {
    const run = parts((a) => {
      if (a.agent === 'grader-clear') throw new ProviderError('Overloaded', 'outage', 529);
      return scored(0.5);
    });
    expect(await scoreRubrics(workflowOf({ clear: { rubric: 'r' }, tone: { rubric: 't' } }), done, run.parts)).toBeUndefined();
    expect(run.appended).toEqual([
      { type: 'grader_scored', grader: 'clear', value: null, reason: 'it could not be scored: Overloaded', model: DEFAULT_MODEL },
      { type: 'grader_scored', grader: 'tone', value: 0.5, reason: 'why', model: DEFAULT_MODEL },
    ]);
    expect(run.told).toEqual([{ type: 'warning', message: 'the rubric grader clear it could not be scored: Overloaded' }]);
  });

  it('a recording that cannot answer, or a replay that differs, ends the run as an error; a signal stops the scoring and records nothing', async () => {
    const unanswered = parts(() => {
      throw new NoRecordedAnswer('no recorded answer for grader-clear', false);
    });
    expect(await scoreRubrics(workflowOf({ clear: { rubric: 'r' } }), done, unanswered.parts)).toMatchObject({
      status: 'error',
      reason: 'no recorded answer for grader-clear',
    });
    expect(unanswered.appended).toEqual([]);
    const diverged = parts(
      () => {
        throw new Error('differs');
      },
      { diverged: true },
    );
    expect(await scoreRubrics(workflowOf({ clear: { rubric: 'r' } }), done, diverged.parts)).toMatchObject({ status: 'error' });
    const controller = new AbortController();
    const stopped = parts(
      () => {
        controller.abort();
        throw new Error('aborted');
      },
      { signal: controller.signal },
    );
    expect(await scoreRubrics(workflowOf({ clear: { rubric: 'r' }, tone: { rubric: 't' } }), done, stopped.parts)).toBeUndefined();
    expect(stopped.appended).toEqual([]);
    expect(stopped.asked).toHaveLength(1);
  });

  it('a long transcript is read by its start and its end', async () => {
    const long = Array.from({ length: 400 }, (_, i) => ({ id: i, kind: 'agent', sender: 'a', recipients: [], text: `${i}:${'x'.repeat(300)}` }));
    const run = parts(() => scored(1), { messages: long });
    await scoreRubrics(workflowOf({ clear: { rubric: 'r' } }), done, run.parts);
    const text = run.asked[0]!.request.messages[0]!.content[0]!.text;
    const transcript = text.slice(text.indexOf('The transcript:\n') + 'The transcript:\n'.length);
    expect(transcript).toMatch(/^\[#0 @a → no one\]\n0:x/);
    expect(transcript).toMatch(/\n\n\[… \d+ characters left out …\]\n\n/);
    expect(transcript.endsWith(`399:${'x'.repeat(300)}`)).toBe(true);
    const left = Number(/\[… (\d+) characters left out …\]/.exec(transcript)![1]);
    expect(transcript.length).toBe(60_000 + `\n\n[… ${left} characters left out …]\n\n`.length);
  });
});
