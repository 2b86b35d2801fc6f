import { createTwoFilesPatch } from 'diff';
import type { SessionEvent } from '../../session/format.js';
import type { Position } from '../../workflow/diagnostic.js';
import type { Workflow } from '../../workflow/load.js';
import type { LocatedText } from '../../workflow/located.js';
import { repoPath } from '../github/sarif.js';

/** Where a replayed run first produced something else than its recording (`run --json`'s `divergence`). */
export interface RunDivergence {
  event: number;
  path: string;
  recorded: unknown;
  now: unknown;
}

/** A changed workflow's failure: the sentence, the diff of the field that changed, how to see the recorded call, and the workflow's line that changed. */
export interface ChangedRequest {
  message: string;
  /** The workflow line the change is on, when it can be found in the workflow's texts. */
  at?: Position & { file: string };
}

const DIFF_LINES = 40;

/**
 * What a case whose workflow changed is told (docs/testing-workflows.md: when the workflow
 * changed): which agent's call differs and where in the request, a unified diff of that part of
 * the request (recorded against now), and `conclave show REC --event N` to see the whole call.
 */
export function changedRequest(divergence: RunDivergence, recording: readonly SessionEvent[], recordingFile: string, workflow: Workflow): ChangedRequest {
  const recorded = recording.find((e) => e.seq === divergence.event);
  const place = divergence.path.replace(/^request\./, '') || 'the event';
  const what =
    recorded?.type === 'model_call'
      ? `the workflow changed: @${recorded.agent}'s model call ${recorded.step} of turn ${recorded.turn} differs from the recording at ${place}`
      : `the run differs from the recording at event #${divergence.event} (${recorded ? recorded.type : 'the end of the recording'}): ${place}`;
  const thing = recorded?.type === 'model_call' ? 'call' : 'event';
  const show = `see the recorded ${thing}: conclave show ${repoPath(process.cwd(), recordingFile)} --event ${divergence.event}`;
  const at = changedLine(divergence, workflow);
  return { message: [what, ...unifiedDiff(place, divergence.recorded, divergence.now), show].join('\n'), ...(at ? { at } : {}) };
}

/** The two values as a unified diff (3 lines of context), the recorded one first; cut after DIFF_LINES lines. */
export function unifiedDiff(label: string, recorded: unknown, now: unknown): string[] {
  const patch = createTwoFilesPatch(`recorded ${label}`, `now ${label}`, asLines(recorded), asLines(now), '', '', { context: 3 });
  const lines = patch
    .split('\n')
    .filter((l) => !/^(=+|Index:.*|\\ No newline at end of file)$/.test(l))
    .map((l) => l.replace(/\t$/, ''));
  while (lines.length && lines[lines.length - 1] === '') lines.pop();
  return lines.length > DIFF_LINES ? [...lines.slice(0, DIFF_LINES), `… ${lines.length - DIFF_LINES} more lines`] : lines;
}

function asLines(value: unknown): string {
  const text = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value, null, 2);
  return text.endsWith('\n') || text === '' ? text : `${text}\n`;
}

/**
 * The workflow line a change is on: the first line of the new text that differs, found in one of
 * the workflow's texts (a prompt, the kickoff, a description; `$<< … >>` parts match anything);
 * for a plain value (a model, a number), the first line of the workflow that sets a key to it.
 */
function changedLine(divergence: RunDivergence, workflow: Workflow): (Position & { file: string }) | undefined {
  const texts: LocatedText[] = [...workflow.templates.values(), ...workflow.prompts];
  if (typeof divergence.now === 'string' && typeof divergence.recorded === 'string') {
    const now = divergence.now.split('\n');
    const recorded = divergence.recorded.split('\n');
    let i = 0;
    while (i < now.length && i < recorded.length && now[i] === recorded[i]) i++;
    for (const line of [now[i], now[i - 1]]) {
      const found = line?.trim() ? lineInTexts(line.trim(), texts) : undefined;
      if (found) return found;
    }
  }
  const value = divergence.now;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    const escaped = String(value).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const lines = workflow.text.split('\n');
    const index = lines.findIndex((l) => new RegExp(`:\\s*["']?${escaped}["']?\\s*(#.*)?$`).test(l));
    if (index >= 0) return { file: workflow.file, line: index + 1, col: lines[index]!.search(/\S/) + 1 };
  }
  return undefined;
}

function lineInTexts(line: string, texts: readonly LocatedText[]): (Position & { file: string }) | undefined {
  return lineWhere(texts, (raw) => raw === line) ?? lineWhere(texts, (raw) => matchesTemplateLine(raw, line));
}

function lineWhere(texts: readonly LocatedText[], matches: (raw: string) => boolean): (Position & { file: string }) | undefined {
  for (const text of texts) {
    let offset = 0;
    for (const raw of text.text.split('\n')) {
      if (raw.trim() && matches(raw.trim())) {
        const start = offset + raw.search(/\S/);
        return { file: text.file, ...text.locate(start, start + raw.trim().length, start) };
      }
      offset += raw.length + 1;
    }
  }
  return undefined;
}

/**
 * Whether a line as the run rendered it is this line of a workflow text, its `$<< … >>` parts
 * standing for any value; the line's own words must be at least half of it (a line that is only an
 * expression matches anything).
 */
function matchesTemplateLine(template: string, rendered: string): boolean {
  if (!template.includes('$<<')) return false;
  const literal = template.split(/\$<<[\s\S]*?>>/);
  if (literal.join('').trim().length * 2 < rendered.length) return false;
  const pattern = literal.map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${pattern}$`).test(rendered);
}
