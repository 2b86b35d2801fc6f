import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { CRASH_WORKFLOW, crashScript } from '../fixtures/crash-team.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow } from '../helpers/run-workflow.js';

let server: FakeAnthropic;
let file: string;
let dir: string;

beforeAll(async () => {
  server = await startFakeAnthropic(crashScript(0));
  const run = await runWorkflow(server, CRASH_WORKFLOW);
  dir = run.dir;
  file = join(dir, '.conclave', 'sessions', readdirSync(join(dir, '.conclave', 'sessions'))[0]!);
});
afterAll(() => server.close());

describe('conclave show', () => {
  it('prints the transcript, the proposals, usage and the end as text', async () => {
    const shown = await conclave(['show', file], { cwd: dir });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('#1 kickoff → @lead\n    Check the three parts, then decide.');
    expect(shown.stdout).toContain('#2 @lead → @a, @b, @c\n    @a @b @c please check your part.');
    expect(shown.stdout).toContain('  verdict: Ship it? — decided "ship" (ship 2, hold 0; majority)');
    expect(shown.stdout).toMatch(/ {2}total +\d+ turns +\d+ calls +\d+ in +\d+ out {2}\$0\.\d{4}/);
    expect(shown.stdout).toContain('Ended: success (exit 0) — @lead completed the run');
    expect(shown.stdout).toContain('  output verdict: ship');
  });

  it('prints Markdown with tables', async () => {
    const shown = await conclave(['show', file, '--format', 'markdown'], { cwd: dir });
    expect(shown.stdout).toContain('| verdict | Ship it? | decided **ship** | ship: 2, hold: 0 |');
    expect(shown.stdout).toMatch(/\| \*\*total\*\* \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \| \$0\.\d{4} \|/);
  });

  it('prints JSON that adds up', async () => {
    const shown = await conclave(['show', file, '--format', 'json'], { cwd: dir });
    const summary = JSON.parse(shown.stdout);
    expect(summary.proposals[0]).toMatchObject({ id: 'verdict', status: 'decided', winner: 'ship', tally: { ship: 2, hold: 0 } });
    const agents = Object.values(summary.agents) as { calls: number; cost_usd: number }[];
    expect(summary.total.calls).toBe(agents.reduce((n, a) => n + a.calls, 0));
    expect(summary.total.calls).toBe(server.requests.length);
  });

  it('says plainly when the file is not a session', async () => {
    const shown = await conclave(['show', 'workflow.yml'], { cwd: dir });
    expect(shown.code).toBe(2);
    expect(shown.stderr).toBe('conclave: workflow.yml:1: not a conclave session file (its first line is not a JSON header)\n');
  });
});

describe('conclave show: votes', () => {
  it('lists each voter with the option and reason, and a vote refused after the decision', async () => {
    const voter =
      (option: string, reason: string, delayMs = 0) =>
      (r: { call: number }) =>
        r.call === 1 ? { tools: [{ name: 'vote', input: { proposal: 'verdict', option, reason } }], delayMs } : { text: '' };
    const votes = await startFakeAnthropic({
      lead: (r) =>
        r.call === 1
          ? { tools: [{ name: 'propose', input: { id: 'verdict', question: 'Ship it?', options: ['ship', 'hold'], voters: ['a', 'b', 'c'] } }] }
          : r.call === 2
            ? { text: '' }
            : { tools: [{ name: 'complete', input: { status: 'success', summary: 'shipped' } }], delayMs: 800 },
      a: voter('ship', 'tests pass'),
      b: voter('ship', 'looks fine'),
      c: voter('hold', 'too soon', 300),
    });
    try {
      const run = await runWorkflow(
        votes,
        'name: votes\nagents:\n  lead: { role: manager }\n  a: { role: worker }\n  b: { role: worker }\n  c: { role: worker }\nkickoff: Decide.\n',
      );
      expect(run.code, run.stderr).toBe(0);
      const session = join(run.dir, String((run.json as { session?: string }).session));
      const text = (await conclave(['show', session], { cwd: run.dir })).stdout;
      expect(text).toContain(
        '  verdict: Ship it? — decided "ship" (ship 2, hold 0; majority)\n    @a: ship — tests pass\n    @b: ship — looks fine\n    @c: hold (not counted: ',
      );
      const markdown = (await conclave(['show', session, '--format', 'markdown'], { cwd: run.dir })).stdout;
      expect(markdown).toContain('| @a: ship (tests pass); @b: ship (looks fine); @c: hold (not counted) |');
    } finally {
      await votes.close();
    }
  });
});
