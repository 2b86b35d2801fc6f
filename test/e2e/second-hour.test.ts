import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { fresh } from '../helpers/attack.js';
import { BIN, conclave, NODE } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

/** What a new user still hit in the second hour (issue 23), each through the CLI. */

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const env = () => ({ ANTHROPIC_BASE_URL: server!.url, ANTHROPIC_API_KEY: TEST_API_KEY });

describe('inputs', () => {
  it('an optional input with no default, not given, is empty in env:, the kickoff, a prompt and setup (as GitHub has it)', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'done' }] });
    const dir = fresh('optional-input');
    writeFileSync(
      join(dir, 'workflow.yml'),
      'name: opt\ninputs:\n  x: { type: string }\n  n: { type: integer }\nenv:\n  FROM_X: "[$<< inputs.x >>]"\nsetup:\n  - id: s\n    run: echo "env=$FROM_X input=[$INPUT_X]"\nagents:\n  lead: { role: manager, system: "x is [$<< inputs.x >>], n is [$<< inputs.n || \'none\' >>]" }\nkickoff: "Go [$<< inputs.x >>] $<< setup.s >>"\n',
    );
    const run = await conclave(['run', 'workflow.yml', '--json'], { cwd: dir, env: env() });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    const request = server.of('lead')[0]!.body;
    expect(JSON.stringify(request.system)).toContain('x is [], n is [none]');
    expect(JSON.stringify(request.messages)).toContain('Go [] env=[] input=[]');
  });

  it('a run missing two required inputs names both', async () => {
    const dir = fresh('two-required');
    writeFileSync(
      join(dir, 'workflow.yml'),
      'name: req\ninputs:\n  pr: { type: integer, required: true, description: The PR }\n  repo: { type: string, required: true }\nagents:\n  lead: { role: manager }\nkickoff: Go.\n',
    );
    const run = await conclave(['run', 'workflow.yml'], { cwd: dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('inputs "pr" (The PR), "repo" are required: give them with -i pr=VALUE -i repo=VALUE');
  });
});

describe('the result says what the exit code says', () => {
  it('a request the API refuses (400) is not suggested for resume, which would only send it again; an outage is', async () => {
    const yml = 'name: refused\nagents:\n  lead: { role: manager }\nkickoff: Go.\n';
    const dir = fresh('refused-request');
    writeFileSync(join(dir, 'workflow.yml'), yml);
    server = await startFakeAnthropic({ lead: [{ error: { status: 400, type: 'invalid_request_error', message: 'model: unknown model' } }] });
    const refused = await conclave(['run', 'workflow.yml'], { cwd: dir, env: env() });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/@lead failed: 400 invalid_request_error model: unknown model/);
    expect(refused.stdout).not.toContain('to continue: conclave resume');
    await server.close();
    const outage = { error: { status: 529, type: 'overloaded_error', message: 'overloaded' } };
    server = await startFakeAnthropic({ lead: Array.from({ length: 6 }, () => outage) });
    const down = await conclave(['run', 'workflow.yml'], { cwd: dir, env: env() });
    expect(down.code).toBe(4);
    expect(down.stdout).toContain('to continue: conclave resume');
  }, 60_000);

  it('an output that cannot be evaluated: status error (not success) with exit 1, in the text, --json and the Action outputs; no resume hint', async () => {
    const yml = 'name: outs\nagents:\n  lead: { role: manager }\nkickoff: Go.\noutputs:\n  winner: $<< proposals.nope.winner >>\n  ok: $<< result.summary >>\n';
    const script = () => ({ lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: 'did it' } }] }] });
    const dir = fresh('output-error');
    writeFileSync(join(dir, 'workflow.yml'), yml);
    server = await startFakeAnthropic(script());
    const text = await conclave(['run', 'workflow.yml'], { cwd: dir, env: env() });
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^conclave: error — @lead completed the run, but an output could not be evaluated/m);
    expect(text.stdout).toContain('output error:');
    expect(text.stdout).not.toContain('to continue: conclave resume');
    await server.close();
    server = await startFakeAnthropic(script());
    writeFileSync(join(dir, 'out.txt'), '');
    const json = await conclave(['run', 'workflow.yml', '--json'], {
      cwd: dir,
      env: { ...env(), GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: join(dir, 'out.txt') },
    });
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'error', exit_code: 1, outputs: { ok: 'did it' } });
    const outputs = readFileSync(join(dir, 'out.txt'), 'utf8');
    expect(outputs).toMatch(/status<<.*\nerror\n/);
    expect(outputs).toMatch(/exit-code<<.*\n1\n/);
  });

  it('GITHUB_OUTPUT and GITHUB_STEP_SUMMARY that cannot be written are warnings; the run stands', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'done' }] });
    const dir = fresh('gh-files');
    writeFileSync(join(dir, 'workflow.yml'), 'name: files\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
    const run = await conclave(['run', 'workflow.yml'], {
      cwd: dir,
      env: { ...env(), GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: join(dir, 'no/such/dir/out'), GITHUB_STEP_SUMMARY: join(dir, 'no/such/dir/summary') },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('::warning::cannot write the step outputs to GITHUB_OUTPUT');
    expect(run.stdout).toContain('::warning::cannot write the job summary to GITHUB_STEP_SUMMARY');
    expect(run.stdout + run.stderr).not.toMatch(/internal error|\n\s+at /);
  });
});

describe('a closed pipe', () => {
  it('conclave run … | head -2: the team goes on to its end, the session is closed and unlocked', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@helper go' }, { tools: [{ name: 'complete', input: { status: 'success', summary: 'done' } }] }],
      helper: [{ text: 'did it', delayMs: 300 }],
    });
    const dir = fresh('epipe');
    writeFileSync(join(dir, 'workflow.yml'), 'name: pipe\nagents:\n  lead: { role: manager }\n  helper: { role: worker }\nkickoff: Go.\n');
    const child = spawn(NODE, [BIN, 'run', 'workflow.yml'], { cwd: dir, env: { ...process.env, ...env() }, stdio: ['ignore', 'pipe', 'pipe'] });
    // The reader takes the first lines, then goes away, as `head -2` does.
    for (const stream of [child.stdout, child.stderr]) stream.once('data', () => stream.destroy());
    const code = await new Promise<number | null>((done) => child.on('close', done));
    expect(code).toBe(0);
    const sessions = readdirSync(join(dir, '.conclave', 'sessions'));
    expect(sessions.filter((f) => f.endsWith('.lock'))).toEqual([]);
    const events = readFileSync(join(dir, '.conclave', 'sessions', sessions.find((f) => f.endsWith('.jsonl'))!), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.at(-1)).toMatchObject({ type: 'run_ended', status: 'success' });
    expect(server.requests).toHaveLength(3);
    expect(existsSync(join(dir, '.conclave'))).toBe(true);
  });
});

describe('validate says more, sooner', () => {
  it('warns of $<< >> inside double quotes in run:, and does not where it is outside them', async () => {
    const dir = fresh('double-quotes');
    writeFileSync(
      join(dir, 'q.yml'),
      'name: q\ninputs:\n  n: { type: integer }\nsetup:\n  - id: s\n    run: |\n      echo "Issue #$<< inputs.n >>"\n      echo "Issue #"$<< inputs.n >>\nagents:\n  lead: { role: manager }\nkickoff: hi\n',
    );
    const r = await conclave(['validate', 'q.yml'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter((l) => l.includes('warning:'))).toEqual([
      `q.yml:7:20: warning: $<< inputs.n >> stands inside double quotes: its value reaches the shell single-quoted, so that it stays data, and those quotes show (a value 42 prints as '42'); close the double quotes around it: "…"$<< inputs.n >>"…"`,
    ]);
  });
});

describe('the command line', () => {
  it('--budget suggests --budget-usd (an option it begins), not --quiet', async () => {
    const r = await conclave(['run', 'x.yml', '--budget', '1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown option '--budget'\n(Did you mean --budget-usd?)");
  });

  it('validate --connect takes -i for what the servers need, and names an unknown input at inputs', async () => {
    const dir = fresh('connect-inputs');
    const everything = join(process.cwd(), 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
    writeFileSync(
      join(dir, 'w.yml'),
      `name: c\ninputs:\n  greet: { type: string, required: true }\nmcp_servers:\n  e: { command: node, args: [${JSON.stringify(everything)}], env: { GREETING: "$<< inputs.greet >>" } }\nagents:\n  lead: { role: manager, tools: [e.echo] }\nkickoff: hi\n`,
    );
    const ok = await conclave(['validate', '--connect', 'w.yml', '-i', 'greet=hello'], { cwd: dir });
    expect(ok.stdout + ok.stderr).toBe('w.yml: ok\n');
    expect(ok.code).toBe(0);
    const wrong = await conclave(['validate', '--connect', 'w.yml', '-i', 'gret=hello'], { cwd: dir });
    expect(wrong.code).toBe(2);
    expect(wrong.stdout).toMatch(/^w\.yml:2:1: the workflow has no input "gret" \(did you mean "greet"\?\)/m);
  });
});

describe('resume', () => {
  it('warns, naming the input, when a secret input is given again with another value; not when it is the same', async () => {
    const yml =
      'name: sec\ninputs:\n  token: { type: string, secret: true }\nlimits: { max_turns: 1 }\nagents:\n  lead: { role: manager }\n  helper: { role: worker }\nkickoff: Go.\n';
    server = await startFakeAnthropic({ lead: [{ text: '@helper go' }], helper: [{ text: 'done' }] });
    const dir = fresh('secret-changed');
    writeFileSync(join(dir, 'workflow.yml'), yml);
    const first = await conclave(['run', 'workflow.yml', '--json', '-i', 'token=first-secret-value'], { cwd: dir, env: env() });
    expect(first.code, first.stderr).toBe(3);
    const session = JSON.parse(first.stdout).session as string;
    const header = JSON.parse(readFileSync(join(dir, session), 'utf8').split('\n')[0]!);
    expect(header.secret_checks.token).toMatch(/^scrypt\$/);
    expect(JSON.stringify(header)).not.toContain('first-secret-value');
    const same = await conclave(['resume', session, '-i', 'token=first-secret-value', '--max-turns', '2'], { cwd: dir, env: env() });
    expect(same.stderr).not.toContain('warning: secret input');
    const other = await conclave(['resume', session, '-i', 'token=other-secret-value', '--max-turns', '3'], { cwd: dir, env: env() });
    expect(other.stderr).toContain('conclave: warning: secret input "token" is not the value the run was recorded with');
  });
});
