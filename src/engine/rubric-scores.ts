import type { Channel } from '../channel/channel.js';
import type { ModelRequest } from '../provider/client.js';
import { rubricAgent } from '../session/graders/grader-ids.js';
import type { Workflow } from '../workflow/load.js';
import { DEFAULT_MODEL } from '../workflow/limits.js';
import type { ModelCalls } from './calls/model-calls.js';
import { type Ending, endingOfError, NoRecordedAnswer } from './ending.js';
import type { ProgressListener } from './progress-events.js';
import type { Journal } from './replay/journal.js';

/** How long one scoring call may take: the run's own timeout has stopped with its team. */
const SCORE_TIMEOUT_MS = 180_000;
/** How much of the run's transcript a scoring call reads: its start and its end, when it is longer. */
const TRANSCRIPT_CHARS = 60_000;
const SYSTEM =
  'You grade the work of a team of AI agents against a rubric. Read the run below, then call the score tool once: ' +
  'a score from 0 (the run does not meet the rubric at all) to 1 (it meets it fully), and one or two sentences of why.';
const SCORE_TOOL = {
  name: 'score',
  description: 'Give the score of the run against the rubric.',
  input_schema: {
    type: 'object' as const,
    properties: { score: { type: 'number', minimum: 0, maximum: 1 }, reason: { type: 'string' } },
    required: ['score', 'reason'],
  },
};

/**
 * The workflow's rubric graders (docs/graders.md: rubric graders): when the team stopped with the
 * lead's `complete`, each rubric is scored by a model call recorded like any other (agent
 * `grader-ID`, turn 1, call 1), then a `grader_scored` event. A replay answers it from the
 * recording, so a recorded score is graded again offline for nothing. A call that fails (an
 * outage, a limit) scores null and says why; one the recording cannot answer ends the run as a
 * replay that differs.
 */
export async function scoreRubrics(
  workflow: Workflow,
  end: Ending,
  parts: { calls: ModelCalls; journal: Journal; channel: Channel | undefined; progress: ProgressListener; signal: AbortSignal },
): Promise<Ending | undefined> {
  const graders = Object.entries(workflow.spec.graders ?? {});
  if (graders.length === 0 || (end.status !== 'success' && end.status !== 'failure')) return undefined;
  const run = runText(end, parts.channel);
  for (const [id, grader] of graders) {
    const model = grader.model ?? workflow.spec.defaults?.model ?? DEFAULT_MODEL;
    const request: ModelRequest = {
      model,
      max_tokens: 1024,
      system: [{ type: 'text', text: SYSTEM }],
      tools: [SCORE_TOOL],
      tool_choice: { type: 'tool', name: 'score' },
      messages: [{ role: 'user', content: [{ type: 'text', text: `The rubric:\n${grader.rubric}\n\n${run}` }] }],
    };
    let value: number | null = null;
    let reason: string;
    try {
      const response = await parts.calls.call(rubricAgent(id), 1, 1, request, AbortSignal.any([parts.signal, AbortSignal.timeout(SCORE_TIMEOUT_MS)]));
      const use = response.content.find((b) => b.type === 'tool_use' && b.name === 'score');
      const input = use?.type === 'tool_use' ? (use.input as { score?: unknown; reason?: unknown }) : undefined;
      const score = input?.score;
      if (typeof score === 'number' && score >= 0 && score <= 1) value = Math.round(score * 10_000) / 10_000;
      reason = value === null ? 'the model gave no score from 0 to 1' : typeof input?.reason === 'string' ? input.reason : '';
    } catch (e) {
      if (parts.journal.diverged || e instanceof NoRecordedAnswer) return endingOfError(e);
      // A signal stops the scoring: what was not scored is not recorded, and the run ends as it had.
      if (parts.signal.aborted) return undefined;
      reason = `it could not be scored: ${e instanceof Error ? e.message : String(e)}`;
      parts.progress({ type: 'warning', message: `the rubric grader ${id} ${reason}` });
    }
    parts.journal.append({ type: 'grader_scored', grader: id, value, reason, model });
  }
  return undefined;
}

/** The run as the scoring model reads it: how it ended, the lead's summary and outputs, and the transcript. */
function runText(end: Ending, channel: Channel | undefined): string {
  const messages = (channel?.history() ?? []).map(
    (m) => `[#${m.id} ${m.kind === 'agent' ? `@${m.sender}` : m.kind} → ${m.recipients.map((r) => `@${r}`).join(', ') || 'no one'}]\n${m.text}`,
  );
  let transcript = messages.join('\n\n');
  const left = transcript.length - TRANSCRIPT_CHARS;
  if (left > 0) transcript = `${transcript.slice(0, TRANSCRIPT_CHARS / 2)}\n\n[… ${left} characters left out …]\n\n${transcript.slice(-TRANSCRIPT_CHARS / 2)}`;
  return [
    `The run ended: ${end.status}.`,
    `The lead's summary:\n${end.summary || '(none)'}`,
    `The outputs:\n${JSON.stringify(end.outputs ?? {}, null, 2)}`,
    `The transcript:\n${transcript}`,
  ].join('\n\n');
}
