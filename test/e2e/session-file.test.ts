import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { CRASH_WORKFLOW, crashScript } from '../fixtures/crash-team.js';
import { BIN, conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { readEvents } from '../helpers/session.js';

let server: FakeAnthropic;
afterEach(() => server?.close());

const sessionOf = (dir: string) => {
  const sessions = join(dir, '.conclave', 'sessions');
  return join(sessions, readdirSync(sessions).find((f) => f.endsWith('.jsonl'))!);
};
const env = () => ({ ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY });

/** A finished run of the crash team, with its session file. */
async function finishedRun() {
  server = await startFakeAnthropic(crashScript(0));
  const run = await runWorkflow(server, CRASH_WORKFLOW);
  expect(run.code).toBe(0);
  return { run, file: sessionOf(run.dir) };
}

/** Cuts a finished session back to its first `lines` lines (the header included), as a crash would leave it. */
function cutTo(file: string, lines: number, extraBytes = 0) {
  const text = readFileSync(file, 'utf8');
  const keep = `${text.split('\n').slice(0, lines).join('\n')}\n`;
  const next = text.split('\n')[lines] ?? '';
  truncateSync(file, Buffer.byteLength(keep) + Math.min(extraBytes, Buffer.byteLength(next)));
}

describe('the session file', () => {
  it('repairs a line torn by a crash mid-write, keeps it aside, and resumes to the same outputs', async () => {
    const { run, file } = await finishedRun();
    const lines = readFileSync(file, 'utf8').split('\n').length;
    cutTo(file, Math.floor(lines / 2), 40);
    const torn = readFileSync(file, 'utf8').split('\n').at(-1)!;
    expect(torn.length).toBe(40);
    const resumed = await conclave(['resume', file, '--json', '--quiet'], { cwd: run.dir, env: env() });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).outputs).toEqual(run.json.outputs);
    const kept = readdirSync(join(run.dir, '.conclave', 'sessions')).filter((f) => f.includes('.torn-'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(run.dir, '.conclave', 'sessions', kept[0]!), 'utf8')).toBe(torn);
    const repair = readEvents(file).find((e) => e.type === 'repair')!;
    expect(repair).toMatchObject({ torn_bytes: 40 });
  });

  it('refuses a broken line in the middle, naming its line', async () => {
    const { run, file } = await finishedRun();
    const lines = readFileSync(file, 'utf8').split('\n');
    lines[5] = lines[5]!.slice(0, 20);
    writeFileSync(file, lines.join('\n'));
    const result = await conclave(['resume', file], { cwd: run.dir, env: env() });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`conclave: ${file}:6: this line is not a valid session event (broken JSON in the middle of the file)\n`);
  });

  it('refuses a gap in the sequence numbers', async () => {
    const { run, file } = await finishedRun();
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.splice(4, 1);
    writeFileSync(file, lines.join('\n'));
    const result = await conclave(['resume', file], { cwd: run.dir, env: env() });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`conclave: ${file}:5: the sequence jumps from 3 to 5; events are missing\n`);
  });

  it('refuses a file of a newer format', async () => {
    const { run, file } = await finishedRun();
    const text = readFileSync(file, 'utf8').replace('"format":1', '"format":2');
    writeFileSync(file, text);
    const result = await conclave(['resume', file], { cwd: run.dir, env: env() });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/written in session format 2 by conclave .*; this conclave reads format 1 and older: upgrade conclave/);
  });

  it('will not resume a run that ended, but forks it from any point', async () => {
    const { run, file } = await finishedRun();
    const again = await conclave(['resume', file], { cwd: run.dir, env: env() });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('records a run that already ended (success: @lead completed the run); fork it');
    const events = readEvents(file);
    const proposed = events.find((e) => e.type === 'proposal_opened')!;
    const before = server.requests.length;
    const fork = await conclave(['resume', file, '--at', String(proposed.seq), '--out', 'fork.jsonl', '--json', '--quiet'], { cwd: run.dir, env: env() });
    expect(fork.code, fork.stderr).toBe(0);
    expect(JSON.parse(fork.stdout).outputs).toEqual(run.json.outputs);
    const header = JSON.parse(readFileSync(join(run.dir, 'fork.jsonl'), 'utf8').split('\n')[0]!);
    expect(header.forked_from).toEqual({ path: file, seq: proposed.seq });
    // The fork re-made only the calls after the fork point.
    const after = readEvents(file).filter((e) => e.type === 'model_call' && e.seq > proposed.seq).length;
    expect(server.requests.length - before).toBeLessThanOrEqual(after + 1);
    expect(server.requests.length - before).toBeGreaterThan(0);
  });

  it('refuses a changed workflow unless told to go on', async () => {
    server = await startFakeAnthropic(crashScript(0));
    const dir = (await runWorkflow(server, CRASH_WORKFLOW, [], {})).dir;
    const file = sessionOf(dir);
    const events = readEvents(file);
    cutTo(file, 1 + events.findIndex((e) => e.type === 'proposal_opened'));
    appendFileSync(join(dir, 'workflow.yml'), '# a comment changes the file\n');
    const refused = await conclave(['resume', file], { cwd: dir, env: env() });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe('conclave: workflow.yml changed since the session was recorded; resume with --allow-changed-workflow to continue it anyway\n');
    const allowed = await conclave(['resume', file, '--allow-changed-workflow', '--json', '--quiet'], { cwd: dir, env: env() });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(JSON.parse(allowed.stdout).outputs.verdict).toBe('ship');
  });

  it('refuses to resume while another conclave writes the session, and takes over a stale lock', async () => {
    const { run, file } = await finishedRun();
    cutTo(file, 10);
    writeFileSync(`${file}.lock`, String(process.pid));
    const locked = await conclave(['resume', file], { cwd: run.dir, env: env() });
    expect(locked.code).toBe(2);
    expect(locked.stderr).toBe(`conclave: ${file} is being written by another conclave (process ${process.pid}); wait for it to end, or stop it\n`);
    writeFileSync(`${file}.lock`, '999999999');
    const stale = await conclave(['resume', file, '--quiet'], { cwd: run.dir, env: env() });
    expect(stale.code, stale.stderr).toBe(0);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('leaves a session that resumes to completion after %s', async (signal, code) => {
    server = await startFakeAnthropic(crashScript(300));
    const work = mkdtempSync(join(tmpdir(), 'conclave-signal-'));
    writeFileSync(join(work, 'workflow.yml'), CRASH_WORKFLOW);
    const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--quiet'], { cwd: work, env: { ...process.env, ...env() }, stdio: 'ignore' });
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    while (!server.requests.some((r) => r.agent === 'a')) await new Promise((r) => setTimeout(r, 10));
    child.kill(signal);
    expect(await closed).toBe(code);
    const file = sessionOf(work);
    expect(readEvents(file).at(-1)).toMatchObject({ type: 'run_ended', status: 'interrupted', exit_code: code });
    const resumed = await conclave(['resume', file, '--json', '--quiet'], { cwd: work, env: env() });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).outputs).toEqual({ verdict: 'ship', summary: 'verdict ship', answers: 'part a ok / part b ok / part c ok' });
    expect(statSync(file).size).toBeGreaterThan(0);
  });
});

describe('secrets', () => {
  it('never writes the API key, a secret input or a secret-looking variable to the session file', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'I saw hunter2-secret-value and tok_9f8e7d6c5b4a' }] });
    const run = await runWorkflow(
      server,
      `
name: secrets
inputs:
  password: { type: string, secret: true }
setup:
  - id: echo
    run: echo "pw=$INPUT_PASSWORD deploy=$DEPLOY_TOKEN"
agents:
  lead: { role: manager, system: "The password is $<< inputs.password >>." }
kickoff: "Setup said: $<< setup.echo >>"
`,
      ['-i', 'password=hunter2-secret-value'],
      { env: { DEPLOY_TOKEN: 'tok_9f8e7d6c5b4a' } },
    );
    expect(run.code).toBe(0);
    const text = readFileSync(sessionOf(run.dir), 'utf8');
    expect(text).not.toContain(TEST_API_KEY);
    expect(text).not.toContain('hunter2-secret-value');
    expect(text).not.toContain('tok_9f8e7d6c5b4a');
    expect(text).toContain('pw=*** deploy=***');
    expect(JSON.parse(text.split('\n')[0]!).inputs).toEqual({ password: '***' });
  });

  it('asks for secret inputs again on resume', async () => {
    server = await startFakeAnthropic({ lead: [{ hang: true }] });
    const workflow = `
name: secret-resume
inputs:
  password: { type: string, secret: true }
limits: { timeout: 1s }
agents:
  lead: { role: manager }
kickoff: go
`;
    const run = await runWorkflow(server, workflow, ['-i', 'password=hunter2-secret-value']);
    expect(run.code).toBe(3);
    const result = await conclave(['resume', sessionOf(run.dir)], { cwd: run.dir, env: env() });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('conclave: secret input "password" is not in the session file: give it again with -i password=VALUE\n');
  });
});
