import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeAnthropic } from '../fake-anthropic/server.js';
import { BIN, conclave, type CliResult } from './cli.js';

export const TEST_API_KEY = 'sk-ant-test-0123456789abcdef';

/** A lead and one helper, with `extra` (such as limits) at the top level. */
export const PAIR = (extra = '') => `
name: pair
${extra}
defaults: { max_tokens: 4096 }
agents:
  lead: { role: manager }
  helper: { role: worker }
kickoff: Start.
`;

export interface WorkflowRun extends CliResult {
  dir: string;
  /** The session file's events (the header excluded). */
  events: { seq: number; type: string; [key: string]: unknown }[];
  /** The parsed --json result. */
  json: { status: string; exit_code: number; reason: string; outputs: Record<string, string>; [key: string]: unknown };
}

/** Writes `workflow` into a fresh directory and runs `conclave run` there against the fake API. */
export async function runWorkflow(
  server: FakeAnthropic,
  workflow: string,
  args: string[] = [],
  options: { env?: NodeJS.ProcessEnv; files?: Record<string, string>; dir?: string } = {},
): Promise<WorkflowRun> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'conclave-run-'));
  writeFileSync(join(dir, 'workflow.yml'), workflow);
  for (const [name, content] of Object.entries(options.files ?? {})) writeFileSync(join(dir, name), content);
  const result = await conclave(['run', 'workflow.yml', '--json', ...args], {
    cwd: dir,
    env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY, ...options.env },
  });
  const json = parseJson(result.stdout);
  const events = typeof json.session === 'string' ? eventsOf(join(dir, json.session)) : sessionEvents(dir);
  return { ...result, dir, events, json };
}

export function sessionEvents(dir: string): WorkflowRun['events'] {
  let files: string[];
  try {
    files = readdirSync(join(dir, '.conclave', 'sessions'));
  } catch {
    return [];
  }
  if (files.length !== 1) return [];
  return eventsOf(join(dir, '.conclave', 'sessions', files[0]!));
}

function eventsOf(file: string): WorkflowRun['events'] {
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  return lines.slice(1).map((line) => JSON.parse(line));
}

function parseJson(stdout: string): WorkflowRun['json'] {
  try {
    return JSON.parse(stdout);
  } catch {
    return { status: '(no JSON)', exit_code: -1, reason: stdout, outputs: {} };
  }
}

/** The channel as recorded: [sender, recipients, text] of every message. */
export function channelOf(run: WorkflowRun): [string, string[], string][] {
  return run.events
    .filter((e) => e.type === 'message')
    .map((e) => {
      const m = e.message as { sender: string; recipients: string[]; text: string };
      return [m.sender, m.recipients, m.text];
    });
}

/**
 * Starts `conclave run workflow.yml` in `dir` against the fake API and kills it with SIGKILL as
 * soon as its session file's text satisfies `reached` (or it ends first); the session file's path.
 */
export async function runUntilKilled(server: FakeAnthropic, dir: string, reached: (session: string) => boolean, pollMs = 5): Promise<string> {
  const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
  const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--quiet'], { cwd: dir, env: { ...process.env, ...env }, stdio: 'ignore' });
  const closed = new Promise((resolve) => child.on('close', resolve));
  const sessions = join(dir, '.conclave', 'sessions');
  const name = () => (existsSync(sessions) ? readdirSync(sessions).find((f) => f.endsWith('.jsonl')) : undefined);
  while (child.exitCode === null && !(name() !== undefined && reached(readFileSync(join(sessions, name()!), 'utf8'))))
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  child.kill('SIGKILL');
  await closed;
  return join(sessions, name()!);
}
