import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic, type Reply } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow } from '../helpers/run-workflow.js';
import { VOTE_TEAM } from '../fixtures/model-responses.js';

/**
 * The scheduler's ways into the run from outside a turn (docs/ARCHITECTURE.md: one guarded way in):
 * a write it makes there that throws (a recording that differs, a full disk) stops the run with
 * one sentence, `--json` on stdout, the session closed and its lock released, never an unhandled
 * rejection with a stack.
 */
const VOTE = VOTE_TEAM;

let server: FakeAnthropic;
afterEach(() => server?.close());
const quiet: Reply = { text: '' };

/** A session's lines, one changed by `change`. */
function altered(session: string, out: string, change: (event: Record<string, unknown>) => boolean): void {
  let changed = 0;
  const lines = readFileSync(session, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const event = JSON.parse(line) as Record<string, unknown>;
      if (changed === 0 && change(event)) changed++;
      return JSON.stringify(event);
    });
  expect(changed).toBe(1);
  writeFileSync(out, `${lines.join('\n')}\n`);
}

function expectGuardedStop(result: { code: number; stdout: string; stderr: string }, dir: string, sentence: RegExp): void {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stderr).not.toMatch(/\n\s+at /);
  expect(result.stderr, result.stdout).toMatch(sentence);
  const json = JSON.parse(result.stdout) as { status: string; reason: string };
  expect(json.status).toBe('error');
  expect(json.reason).toMatch(sentence);
  const locks = readdirSync(join(dir, '.conclave', 'sessions')).filter((f) => f.endsWith('.lock'));
  expect(locks).toEqual([]);
}

describe('one guarded way into the run', () => {
  it("a reminder the scheduler writes differs from the recording's: the replay stops with one sentence, --json on stdout, no lock left", async () => {
    server = await startFakeAnthropic({
      lead: [
        { tools: [{ name: 'propose', input: { id: 'verdict', question: 'Approve?', options: ['approve', 'reject'], voters: ['a'] } }] },
        { text: 'Open.' },
        quiet,
        quiet,
      ],
      // a first answers without voting: the scheduler reminds it, outside any turn.
      a: [{ text: 'Still reading.' }, { tools: [{ name: 'vote', input: { proposal: 'verdict', option: 'approve' } }] }, quiet, quiet],
    });
    const run = await runWorkflow(server, VOTE);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    const session = join(run.dir, run.json.session as string);
    const out = join(run.dir, 'altered.jsonl');
    altered(session, out, (e) => {
      const message = e.message as { text?: string } | undefined;
      if (e.type !== 'message' || !message?.text?.includes('still waiting')) return false;
      message.text = 'Proposal "verdict" waits for you (as an older conclave worded it).';
      return true;
    });
    const replay = await conclave(['run', 'workflow.yml', '--replay', 'altered.jsonl', '--json'], { cwd: run.dir });
    expectGuardedStop(replay, run.dir, /the recording|differs|recorded/);
    expect(existsSync(`${out}.lock`)).toBe(false);
  });
});
