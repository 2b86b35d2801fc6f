import { closeSync, constants, fstatSync, readFileSync } from 'node:fs';
import { openLast, openParents } from '../../agents/tools/descriptor-walk.js';
import { holdsJson } from '../../engine/replay/same-json.js';
import { DocumentHistories } from '../../session/document-history.js';
import type { EventOf, SessionEvent } from '../../session/format.js';
import type { Position } from '../../workflow/diagnostic.js';
import type { CaseRun } from './test-case-run.js';
import { changedRequest } from './changed-request.js';
import type { Workflow } from '../../workflow/load.js';
import type { Expectation, MessageMatch, TestCase, TextMatch, ToolMatch } from './expectations.js';
import { gradeSession, type GraderResult } from '../../session/graders/graders.js';
import { thousands } from '../../thousands.js';

/** An expectation that did not hold, where the test file writes it. */
export interface Failure {
  expectation: string;
  /** The file the failure is in, when it is not the test file: the workflow line a changed workflow changed. */
  file?: string;
  line: number;
  column: number;
  message: string;
}

/** What a case's run is checked against beside its own events: its recording, and the files the workflow's documents are written to. */
export interface CheckContext {
  recording: readonly SessionEvent[];
  /** The recording's file, for the command that shows a recorded call. */
  recordingFile?: string;
  /** The case's workflow, to find the line a change is on. */
  workflow: Workflow;
  /** Each document's `write_to`, by the document's name. */
  documentFiles: Record<string, string>;
}

const failure = (expectation: string, at: Position, message: string): Failure => ({ expectation, line: at.line, column: at.col, message });

/** Every expectation of the case that its run does not meet; a run that is not the recorded one (the workflow changed) fails once, saying where. */
export function checkCase(testCase: TestCase, run: CaseRun, context: CheckContext): Failure[] {
  const { result } = run;
  if (!result) {
    const said =
      run.broken ??
      (run.stderr
        .trim()
        .split('\n')
        .slice(-3)
        .join(' ')
        .replace(/^conclave: /, '') ||
        `conclave exited with ${run.code}`);
    return [failure('run', testCase.at, `the run gave no result: ${said}`)];
  }
  if (result.status === 'error' && result.divergence) {
    const changed = changedRequest(result.divergence, context.recording, context.recordingFile ?? 'the recording', context.workflow);
    const at = changed.at ?? testCase.at;
    return [{ ...failure('recording', at, changed.message), ...(changed.at ? { file: changed.at.file } : {}) }];
  }
  if (result.status === 'error' && /^the (recording cannot answer the run|run differs from the session at)/.test(result.reason))
    return [failure('recording', testCase.at, result.reason.replace(/^the run differs from the session/, 'the run differs from the recording'))];
  // An outage stops the run before the team could do what the rest expect: it fails once, with the API's error.
  if (result.status === 'provider_error') {
    const status = testCase.expect.find((e) => e.kind === 'status');
    return [
      failure(
        status ? 'status' : 'run',
        status?.at ?? testCase.at,
        `${status ? `expected status ${status.status}, got` : 'the run stopped on a'} provider_error: ${result.reason}`,
      ),
    ];
  }
  return testCase.expect.flatMap((e) => checkOne(e, run, context));
}

function checkOne(e: Expectation, run: CaseRun, context: CheckContext): Failure[] {
  const result = run.result!;
  switch (e.kind) {
    case 'status':
      return result.status === e.status ? [] : [failure('status', e.at, `expected status ${e.status}, got ${result.status}: ${result.reason}`)];
    case 'output': {
      const value = result.outputs[e.name];
      if (value === undefined) return [failure(`outputs.${e.name}`, e.at, `the run gave no output "${e.name}" (it gave ${namesOf(result.outputs)})`)];
      return matches(value, e.match) ? [] : [failure(`outputs.${e.name}`, e.at, `output "${e.name}" is ${clip(value)}, not ${describe(e.match)}`)];
    }
    case 'proposal': {
      const proposal = result.proposals?.find((p) => p.id === e.id);
      if (!proposal)
        return [
          failure(`proposals.${e.id}`, e.at, `no proposal "${e.id}" was opened (opened: ${(result.proposals ?? []).map((p) => p.id).join(', ') || 'none'})`),
        ];
      if (proposal.winner === e.winner) return [];
      const got = proposal.winner ? `"${proposal.winner}" won` : `it ended ${proposal.status} with no winner`;
      return [failure(`proposals.${e.id}`, e.at, `proposal "${e.id}": expected "${e.winner}" to win, but ${got}`)];
    }
    case 'tools':
      return toolsInOrder(e.calls, toolCalls(run.events));
    case 'not_tool': {
      const found = toolCalls(run.events).find((c) => callMatches(c, e.call));
      return found ? [failure('not_tools', e.at, `@${found.agent} called ${found.tool} ${clip(JSON.stringify(found.input))} in turn ${found.turn}`)] : [];
    }
    case 'message':
      return run.events.some((m) => m.type === 'message' && messageMatches(m, e.message))
        ? []
        : [failure('messages', e.at, `no message ${describeMessage(e.message)} (${messagesOf(run.events, e.message)})`)];
    case 'file': {
      const text = run.workspace ? fileIn(run.workspace, e.path) : writtenFiles(run.events, context.documentFiles).get(e.path);
      if (text === undefined) return [failure(`files.${e.path}`, e.at, `the run wrote no file ${e.path}`)];
      return matches(text, e.match) ? [] : [failure(`files.${e.path}`, e.at, `${e.path} holds ${clip(text)}, not ${describe(e.match)}`)];
    }
    case 'cost':
      return result.usage.cost_usd <= e.maxUsd
        ? []
        : [failure('cost_usd', e.at, `the run cost $${result.usage.cost_usd.toFixed(4)}, over the $${e.maxUsd} expected at most`)];
    case 'not_message': {
      const found = run.events.find((m): m is EventOf<'message'> => m.type === 'message' && messageMatches(m, e.message));
      if (!found) return [];
      const { sender, recipients, text } = found.message;
      return [failure('not_messages', e.at, `@${sender} wrote to ${recipients.map((r) => `@${r}`).join(', ') || 'no one'}: ${clip(text)}`)];
    }
    case 'vote': {
      const seat = e.voter.replace(/^@/, '');
      const votes = run.events.filter((v): v is EventOf<'vote'> => v.type === 'vote' && v.voter.replace(/^@/, '') === seat);
      if (votes.some((v) => v.option === e.option)) return [];
      const cast = votes.map((v) => `"${v.option}" on ${v.proposal}`).join(', ');
      return [failure(`votes.${e.voter}`, e.at, `@${seat} did not vote "${e.option}" (${cast ? `it voted ${cast}` : 'it cast no vote'})`)];
    }
    case 'count': {
      const value = gradersOf(run)[e.what]?.value ?? 0;
      const shown = e.what === 'wall_s' ? `${value.toFixed(1)} s` : `${thousands(value)} ${e.what}`;
      if (e.max !== undefined && value > e.max) return [failure(e.what, e.at, `the run took ${shown}, over the ${e.max} expected at most`)];
      if (e.min !== undefined && value < e.min) return [failure(e.what, e.at, `the run took ${shown}, under the ${e.min} expected at least`)];
      return [];
    }
    case 'grader':
      return graderFailure(e, gradersOf(run)[e.id]);
  }
}

/** The run's graders (docs/graders.md), computed once per run from its session; the counts of a run's size are graders too. */
const graded = new WeakMap<CaseRun, Record<string, GraderResult>>();
function gradersOf(run: CaseRun): Record<string, GraderResult> {
  let results = graded.get(run);
  // A run that wrote no session has no graders: each expected one says it has no value.
  if (!results) graded.set(run, (results = run.header ? gradeSession({ header: run.header, events: run.events, effective: run.events }) : {}));
  return results;
}

function graderFailure(e: Extract<Expectation, { kind: 'grader' }>, result: GraderResult | undefined): Failure[] {
  const name = `graders.${e.id}`;
  const value = result?.value;
  const expected =
    e.min === e.max
      ? `${e.min}`
      : [e.min !== undefined ? `at least ${e.min}` : '', e.max !== undefined ? `at most ${e.max}` : ''].filter(Boolean).join(' and ');
  if (value === null || value === undefined)
    return [failure(name, e.at, `grader ${e.id} has no value for this run (${e.id} needs what the run did not do), expected ${expected}`)];
  if (e.min === e.max && value !== e.min) return [failure(name, e.at, `grader ${e.id} is ${value}, not ${e.min}${detailOf(result!)}`)];
  if (e.max !== undefined && value > e.max) return [failure(name, e.at, `grader ${e.id} is ${value}, over the ${e.max} expected at most${detailOf(result!)}`)];
  if (e.min !== undefined && value < e.min)
    return [failure(name, e.at, `grader ${e.id} is ${value}, under the ${e.min} expected at least${detailOf(result!)}`)];
  return [];
}

/** What a grader's value stands on, clipped: the findings, agents or calls behind it. */
function detailOf(result: GraderResult): string {
  const { value: _v, ...rest } = result;
  const text = JSON.stringify(rest);
  return text === '{}' ? '' : ` (${text.length > 300 ? `${text.slice(0, 299)}…` : text})`;
}

type Call = EventOf<'tool_call'>;

const toolCalls = (events: readonly SessionEvent[]): Call[] => events.filter((e): e is Call => e.type === 'tool_call');

/** Each agent's expected calls appear among its calls in the order written (calls that name no agent: among everyone's). */
function toolsInOrder(expected: readonly ToolMatch[], calls: readonly Call[]): Failure[] {
  const next = new Map<string, number>();
  const failures: Failure[] = [];
  for (const want of expected) {
    const key = want.agent ?? '';
    const own = calls.filter((c) => want.agent === undefined || c.agent === want.agent);
    const from = next.get(key) ?? 0;
    const found = own.findIndex((c, i) => i >= from && callMatches(c, want));
    if (found !== -1) {
      next.set(key, found + 1);
      continue;
    }
    const earlier = own.slice(0, from).some((c) => callMatches(c, want)) ? ' (it came before the call listed above it)' : '';
    const made = own.map((c) => c.tool).join(', ') || 'none';
    failures.push(failure('tools', want.at, `no call of ${describeCall(want)}${earlier}; ${want.agent ? `@${want.agent}` : 'the team'} called: ${made}`));
  }
  return failures;
}

function callMatches(call: Call, want: ToolMatch): boolean {
  return call.tool === want.name && (want.agent === undefined || call.agent === want.agent) && (want.input === undefined || holdsJson(call.input, want.input));
}

function messageMatches(e: EventOf<'message'>, want: MessageMatch): boolean {
  const { sender, recipients, text } = e.message;
  return (
    (want.from === undefined || sender === want.from) &&
    (want.to === undefined || recipients.includes(want.to)) &&
    (want.contains === undefined || text.includes(want.contains))
  );
}

function messagesOf(events: readonly SessionEvent[], want: MessageMatch): string {
  const from = events.filter((e): e is EventOf<'message'> => e.type === 'message' && (want.from === undefined || e.message.sender === want.from));
  return `${from.length} message${from.length === 1 ? '' : 's'}${want.from ? ` from @${want.from}` : ''} in the run`;
}

/** The files a run wrote, by its session: write_file calls that succeeded, and documents written to their `write_to`. */
function writtenFiles(events: readonly SessionEvent[], documentFiles: Record<string, string>): Map<string, string> {
  const files = new Map<string, string>();
  const failed = new Set(events.filter((e) => e.type === 'tool_result' && e.is_error).map((e) => (e as EventOf<'tool_result'>).tool_use_id));
  const documents = new DocumentHistories();
  for (const e of events) {
    if (e.type === 'tool_call' && e.tool === 'write_file' && !failed.has(e.tool_use_id)) {
      const { path, content } = (e.input ?? {}) as { path?: unknown; content?: unknown };
      if (typeof path === 'string' && typeof content === 'string') files.set(path.replace(/^\.\//, ''), content);
    }
    if (e.type === 'document_opened' || e.type === 'document_changed' || e.type === 'document_appended') documents.apply(e);
  }
  for (const d of documents.all()) if (documentFiles[d.name]) files.set(documentFiles[d.name]!.replace(/^\.\//, ''), d.text);
  return files;
}

/**
 * A file of a live run's copy, each step opened inside the one before and no link followed (as
 * the workspace tools read): a name or a link that leads out of the copy reads nothing.
 */
function fileIn(workspace: string, path: string): string | undefined {
  const steps = path.split('/').filter((step) => step !== '' && step !== '.');
  if (steps.length === 0 || steps.includes('..')) return undefined;
  try {
    const dir = openParents(workspace, path, steps, false);
    try {
      const fd = openLast(path, dir, steps.at(-1)!, constants.O_RDONLY);
      try {
        return fstatSync(fd).isFile() ? readFileSync(fd, 'utf8') : undefined;
      } finally {
        closeSync(fd);
      }
    } finally {
      closeSync(dir.fd);
    }
  } catch {
    return undefined;
  }
}

function matches(text: string, match: TextMatch): boolean {
  if ('equals' in match) return text === match.equals;
  if ('contains' in match) return text.includes(match.contains);
  return match.matches.test(text);
}

function describe(match: TextMatch): string {
  if ('equals' in match) return JSON.stringify(match.equals);
  if ('contains' in match) return `one containing ${JSON.stringify(match.contains)}`;
  return `one matching ${String(match.matches)}`;
}

function describeCall(want: ToolMatch): string {
  return `${want.name}${want.agent ? ` by @${want.agent}` : ''}${want.input ? ` with input ${JSON.stringify(want.input)}` : ''}`;
}

function describeMessage(want: MessageMatch): string {
  return [want.from && `from @${want.from}`, want.to && `to @${want.to}`, want.contains !== undefined && `containing ${JSON.stringify(want.contains)}`]
    .filter(Boolean)
    .join(' ');
}

function namesOf(outputs: Record<string, string>): string {
  const names = Object.keys(outputs);
  return names.length === 0 ? 'none' : names.map((n) => `"${n}"`).join(', ');
}

function clip(text: string): string {
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 119)}…` : text);
}
