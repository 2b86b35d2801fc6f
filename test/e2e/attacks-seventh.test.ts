import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic, type Reply } from '../fake-anthropic/server.js';
import { startFakeGitHub, type FakeGitHub } from '../fake-github/server.js';
import { fresh } from '../helpers/attack.js';
import { BIN, conclave, NODE } from '../helpers/cli.js';
import { HEAD, PULL, pullRequestJob, REPOSITORY } from '../helpers/pull-request-job.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

/**
 * The seventh round of attacks (issue 79): the paths a test file names leave the folder through
 * links; the repeats' batch server is open to any local process; a lead cancels the people's
 * decision or takes a person's name; a recording's tail satisfies expectations; a test file's
 * workflow quotes credentials; a report's -o names the session through a link. Each with its control.
 */

let server: FakeAnthropic | undefined;
let github: FakeGitHub | undefined;
afterEach(async () => {
  await server?.close();
  await github?.close();
  server = github = undefined;
});

const env = (s: FakeAnthropic) => ({ ANTHROPIC_BASE_URL: s.url, ANTHROPIC_API_KEY: TEST_API_KEY });
const complete = (summary: string): Reply => ({ tools: [{ name: 'complete', input: { status: 'success', summary } }] });
const write = (path: string, content: string): Reply => ({ tools: [{ name: 'write_file', input: { path, content } }] });

/** A project in `root/project` (root holds what lies outside it): a workflow whose lead may write files, and a test file. */
function project(testFile: string, workflow = WRITER): { root: string; dir: string } {
  const root = fresh('seventh');
  const dir = join(root, 'project');
  mkdirSync(dir);
  writeFileSync(join(dir, 'writer.yml'), workflow);
  writeFileSync(join(dir, 'writer.test.yml'), testFile);
  return { root, dir };
}

const WRITER = `
name: writer
agents:
  lead: { role: manager, tools: [write_file] }
kickoff: Write out.txt, then complete with the summary "done".
outputs:
  answer: $<< result.summary >>
`;

const CASE = (extra: string) => `
workflow: writer.yml
cases:
  - name: writes
${extra}
    expect:
      status: success
`;

describe("a test file's paths stay below the folder, wherever their links lead", () => {
  it('a recording folder that is a link out: --live --update refuses it (exit 2), nothing is written outside; a real folder records', async () => {
    const { root, dir } = project(CASE('    session: rec/writes.session.jsonl'));
    mkdirSync(join(root, 'outside'));
    symlinkSync('../outside', join(dir, 'rec'));
    server = await startFakeAnthropic({ lead: [write('out.txt', 'hi'), complete('done'), write('out.txt', 'hi'), complete('done')] });
    const refused = await conclave(['test', '--live', '--update'], { cwd: dir, env: env(server) });
    expect(refused.code, refused.stdout + refused.stderr).toBe(2);
    expect(refused.stderr).toContain('the recording rec/writes.session.jsonl leaves the current folder through a link: keep it below it');
    expect(readdirSync(join(root, 'outside'))).toEqual([]);
    expect(server.requests).toHaveLength(0);
    // The offline test does not read a recording there either.
    writeFileSync(join(root, 'outside', 'writes.session.jsonl'), '{}\n');
    const offline = await conclave(['test'], { cwd: dir, env: env(server) });
    expect(offline.code).toBe(2);
    expect(offline.stderr).toContain('leaves the current folder through a link');
    // Control: a folder of the project's own.
    const { dir: plain } = project(CASE('    session: rec/writes.session.jsonl'));
    const recorded = await conclave(['test', '--live', '--update'], { cwd: plain, env: env(server) });
    expect(recorded.code, recorded.stdout + recorded.stderr).toBe(0);
    expect(readdirSync(join(plain, 'rec'))).toEqual(['writes.session.jsonl']);
  });

  it('a workspace that is a link out: refused, and the real folder is never run in; a folder of its own runs on a copy', async () => {
    const { root, dir } = project(CASE('    workspace: ws'));
    mkdirSync(join(root, 'realws'));
    writeFileSync(join(root, 'realws', 'keep.txt'), 'untouched');
    symlinkSync('../realws', join(dir, 'ws'));
    server = await startFakeAnthropic({ lead: [write('out.txt', 'hi'), complete('done'), write('out.txt', 'hi'), complete('done')] });
    const refused = await conclave(['test', '--live'], { cwd: dir, env: env(server) });
    expect(refused.code, refused.stdout + refused.stderr).toBe(2);
    expect(refused.stderr).toContain('the workspace ws leaves the current folder through a link');
    expect(readdirSync(join(root, 'realws'))).toEqual(['keep.txt']);
    // Control: a workspace folder inside the project is copied; what the agent writes stays in the copy.
    const { dir: plain } = project(CASE('    workspace: ws'));
    mkdirSync(join(plain, 'ws'));
    const ran = await conclave(['test', '--live'], { cwd: plain, env: env(server) });
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect(readdirSync(join(plain, 'ws'))).toEqual([]);
  });

  it('a workflow that is a link out is refused; so is one that is not a workflow file, unquoted (.git/config, /proc/self/environ)', async () => {
    const credential = 'c2VjcmV0LXRva2VuLWFiY2RlZmdoaWprbG1ub3A=';
    const { root, dir } = project(CASE('    session: writes.session.jsonl'));
    mkdirSync(join(root, 'outside'));
    writeFileSync(join(root, 'outside', 'writer.yml'), WRITER);
    symlinkSync('../outside/writer.yml', join(dir, 'linked.yml'));
    mkdirSync(join(dir, '.git'));
    writeFileSync(join(dir, '.git', 'config'), `[http]\n\textraheader = AUTHORIZATION: basic ${credential}\n`);
    symlinkSync('/proc/self/environ', join(dir, 'env.yml'));
    const key = 'sk-ant-api03-Zq9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBa1';
    for (const [workflow, said] of [
      ['linked.yml', 'the workflow the cases run linked.yml leaves the current folder through a link'],
      ['.git/config', 'the workflow the cases run .git/config is not a workflow file (.yml or .yaml)'],
      ['env.yml', 'the workflow the cases run env.yml leaves the current folder through a link'],
    ]) {
      writeFileSync(join(dir, 'writer.test.yml'), CASE('    session: writes.session.jsonl').replace('writer.yml', workflow!));
      const refused = await conclave(['test', 'writer.test.yml'], { cwd: dir, env: { ANTHROPIC_API_KEY: key, GITHUB_ACTIONS: 'true' } });
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stdout + refused.stderr).toContain(said!);
      expect(refused.stdout + refused.stderr).not.toContain(credential.slice(0, 12));
      expect(refused.stdout + refused.stderr).not.toContain(key.slice(0, 12));
    }
    // A workflow file whose text is the key itself: masked before the message cuts it short (a cut secret no longer matches its mask).
    writeFileSync(join(dir, 'scalar.yml'), `${key}${'x'.repeat(30)}\n`);
    const quoted = await conclave(['validate', 'scalar.yml'], { cwd: dir, env: { ANTHROPIC_API_KEY: key } });
    expect(quoted.code).toBe(2);
    expect(quoted.stdout).toContain('the workflow must be a mapping; found the string "***xxxxx');
    expect(quoted.stdout + quoted.stderr).not.toContain(key.slice(0, 12));
  });

  it("files: a path out of the run's copy is refused when read; a link in the copy reads nothing; a file the run wrote is read", async () => {
    const outside = (root: string) => join(root, 'credentials');
    const { root, dir } = project(
      CASE('    workspace: ws').replace('status: success', 'status: success\n      files: { "../../../credentials": { contains: "x" } }'),
    );
    writeFileSync(outside(root), 'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY');
    mkdirSync(join(dir, 'ws'));
    server = await startFakeAnthropic({ lead: () => complete('done') });
    const refused = await conclave(['test', '--live'], { cwd: dir, env: env(server) });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`files names a file of the run's workspace: "../../../credentials" leaves it`);
    // A link inside the workspace, copied with it, is not followed when the file is read.
    symlinkSync(outside(root), join(dir, 'ws', 'notes.txt'));
    writeFileSync(
      join(dir, 'writer.test.yml'),
      CASE('    workspace: ws').replace('status: success', 'status: success\n      files: { notes.txt: { contains: "wJal" } }'),
    );
    const linked = await conclave(['test', '--live', '--json'], { cwd: dir, env: env(server) });
    expect(linked.code).toBe(1);
    expect(linked.stdout).toContain('the run wrote no file notes.txt');
    expect(linked.stdout).not.toContain('wJalrXUtnFEMI');
    // Control: the file the run wrote in its copy is read.
    await server.close();
    server = await startFakeAnthropic({ lead: [write('out.txt', 'hello there'), complete('done')] });
    writeFileSync(
      join(dir, 'writer.test.yml'),
      CASE('    workspace: ws').replace('status: success', 'status: success\n      files: { out.txt: { contains: "hello" } }'),
    );
    const read = await conclave(['test', '--live'], { cwd: dir, env: env(server) });
    expect(read.code, read.stdout + read.stderr).toBe(0);
  });
});

/** The TCP ports a process listens on (read from /proc, as any local process can). */
function listeningPorts(pid: number): number[] {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  const inodes = new Set(
    fds.flatMap((fd) => {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        return m ? [m[1]!] : [];
      } catch {
        return [];
      }
    }),
  );
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[3] === '0A' && inodes.has(f[9]!))
    .map((f) => Number.parseInt(f[1]!.split(':')[1]!, 16));
}

describe('the repeats’ batch server serves only the runs its command started', () => {
  it("a keyless local process's batch is refused (403) and never reaches the API; the repeats still share one batch", async () => {
    const { dir } = project(
      `workflow: writer.yml\ncases:\n  - name: says done\n    expect:\n      outputs: { answer: done }\n`,
      'name: writer\ndefaults: { batch: true }\nagents:\n  lead: { role: manager }\nkickoff: Complete.\noutputs:\n  answer: $<< result.summary >>\n',
    );
    server = await startFakeAnthropic({ lead: () => complete('done') }, { batches: { endsAfterMs: 300 } });
    const child = spawn(NODE, [BIN, 'test', '--live', '--repeat', '2'], { cwd: dir, env: { ...process.env, ...env(server) } });
    let stdout = '';
    child.stdout.on('data', (c) => (stdout += c));
    const closed = new Promise<number | null>((done) => child.on('close', done));
    let port: number | undefined;
    for (let i = 0; i < 400 && port === undefined; i++) {
      port = listeningPorts(child.pid!)[0];
      if (port === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    expect(port).toBeDefined();
    const PROMPT = 'a stranger asks on the user’s key';
    const body = JSON.stringify({
      requests: [{ custom_id: 'mine', params: { model: 'claude-sonnet-5-5', max_tokens: 16, messages: [{ role: 'user', content: PROMPT }] } }],
    });
    const answer = await fetch(`http://127.0.0.1:${port}/v1/messages/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body,
      signal: AbortSignal.timeout(15_000),
    }).catch(() => undefined);
    expect(answer?.status).toBe(403);
    expect(await closed, stdout).toBe(0);
    expect(JSON.stringify(server.batches)).not.toContain(PROMPT);
    expect(server.batches).toHaveLength(1);
    expect(server.batches[0]!.requests).toHaveLength(2);
  });
});

const jobEnv = (dir: string): NodeJS.ProcessEnv => pullRequestJob(dir, github!.url);

const PEOPLE = (extra = '') => `
name: verdict
people: { voters: ["@octocat"], decide: [verdict] }
${extra}
agents:
  lead: { role: manager }
kickoff: Decide whether the change goes in.
outputs:
  verdict: $<< proposals.verdict.winner >>
`;
const propose = (extra: Record<string, unknown> = {}): Reply => ({
  tools: [{ name: 'propose', input: { id: 'verdict', question: 'Merge?', options: ['approve', 'reject'], ...extra } }],
});
const quiet: Reply = { text: '' };

describe("the people's decision is closed only by the people (or its deadline)", () => {
  async function run(workflow: string, lead: Reply[]) {
    server = await startFakeAnthropic({ lead: [...lead, quiet, quiet] });
    github = await startFakeGitHub(REPOSITORY, PULL);
    github.people.head = HEAD;
    const dir = fresh('decide');
    return runWorkflow(server, workflow, ['--park'], { dir, env: jobEnv(dir) });
  }
  const resultOf = (r: Awaited<ReturnType<typeof run>>, tool: string) => r.events.find((e) => e.type === 'tool_result' && e.tool === tool)!;

  it('the lead cannot cancel it, nor close it by a turn deadline, nor then complete in success: the run parks for the people', async () => {
    const r = await run(PEOPLE(), [
      propose({ deadline_turns: 1 }),
      { tools: [{ name: 'cancel_proposal', input: { proposal: 'verdict' } }] },
      complete('approved'),
    ]);
    expect(r.code, r.stderr).toBe(75);
    expect(r.json.reason).toBe('parked: waiting for a vote from @octocat on proposal "verdict"');
    expect(resultOf(r, 'cancel_proposal')).toMatchObject({ is_error: true });
    expect(resultOf(r, 'cancel_proposal').content).toContain(
      `proposal "verdict" is the people's to decide (people.decide): only their votes or its deadline close it`,
    );
    expect(resultOf(r, 'complete')).toMatchObject({ is_error: true });
    expect(r.events.filter((e) => e.type === 'proposal_closed')).toEqual([]);
  });

  it('a decision of the people never opened: complete(success) is refused; control: a proposal that is not theirs is cancelled', async () => {
    const r = await run(PEOPLE(), [complete('approved')]);
    expect(r.json.status).not.toBe('success');
    expect(resultOf(r, 'complete').content).toContain(`"verdict" is the people's to decide (people.decide) and no proposal "verdict" was opened`);
    await server!.close();
    await github!.close();
    const control = await run(PEOPLE().replace('decide: [verdict]', 'decide: [merge]'), [
      propose({ voters: ['@octocat'] }),
      { tools: [{ name: 'cancel_proposal', input: { proposal: 'verdict' } }] },
      { tools: [{ name: 'propose', input: { id: 'merge', question: 'Merge?', options: ['yes', 'no'] } }] },
      complete('approved'),
    ]);
    expect(resultOf(control, 'cancel_proposal')).not.toHaveProperty('is_error', true);
    expect(control.events.find((e) => e.type === 'proposal_closed')).toMatchObject({ proposal: 'verdict', status: 'cancelled' });
  });
});

describe("an agent cannot take a person's name", () => {
  const TEAM = `
name: named
people: { voters: ["@octocat"] }
templates:
  helper: { role: worker }
agents:
  lead: { role: manager, spawns: [helper] }
kickoff: Go.
`;
  const spawnNamed = (name: string): Reply => ({ tools: [{ name: 'spawn', input: { template: 'helper', tasks: ['vote'], name } }] });

  it("spawn with a person's login (any case, with or without @) is refused; validate refuses a declared agent so named; another name is taken", async () => {
    server = await startFakeAnthropic({
      lead: [spawnNamed('OctoCat'), spawnNamed('@octocat'), spawnNamed('octo-helper'), quiet, quiet],
      'octo-helper': [quiet],
    });
    const r = await runWorkflow(server, TEAM);
    const results = r.events.filter((e) => e.type === 'tool_result' && e.tool === 'spawn');
    expect(results[0]!.content).toContain(
      '"OctoCat" cannot be a new agent\'s name: @octocat is a person who votes (people:): an agent may not take their name',
    );
    expect(results[1]).toMatchObject({ is_error: true });
    expect(results[2]).not.toHaveProperty('is_error', true);
    expect(r.events.filter((e) => e.type === 'agent_spawned').map((e) => e.agent)).toEqual(['octo-helper']);
    const dir = fresh('named');
    writeFileSync(
      join(dir, 'w.yml'),
      TEAM.replace('people: { voters: ["@octocat"] }', 'people: { voters: ["@OctoCat"] }').replace('lead:', 'octocat: { role: worker }\n  lead:'),
    );
    const invalid = await conclave(['validate', 'w.yml'], { cwd: dir });
    expect(invalid.code).toBe(2);
    expect(invalid.stdout).toContain('agents.octocat has the name of @OctoCat, a person who votes (people:): rename the agent');
  });
});

describe("a recording's events past where the replay ended are no evidence", () => {
  it('a write_file inserted before run_ended: the offline case fails as a run that differs from its recording; the untouched recording passes', async () => {
    const { dir } = project(
      `workflow: writer.yml\ncases:\n  - name: writes\n    session: rec.session.jsonl\n    expect:\n      status: success\n      tools: [{ name: write_file, input: { path: forged.txt } }]\n`,
      'name: writer\nagents:\n  lead: { role: manager, tools: [write_file] }\nkickoff: Complete.\n',
    );
    server = await startFakeAnthropic({ lead: [complete('done')] });
    // Recorded with an expectation that holds, then the expectation the forged tail is to satisfy.
    const testFile = join(dir, 'writer.test.yml');
    const forgedCase = readFileSync(testFile, 'utf8');
    writeFileSync(testFile, forgedCase.replace('tools: [{ name: write_file, input: { path: forged.txt } }]', 'tools: [{ name: complete }]'));
    const recorded = await conclave(['test', '--live', '--update'], { cwd: dir, env: env(server) });
    expect(recorded.code, recorded.stdout + recorded.stderr).toBe(0);
    const control = await conclave(['test'], { cwd: dir });
    expect(control.code, control.stdout).toBe(0);
    const lines = readFileSync(join(dir, 'rec.session.jsonl'), 'utf8').trimEnd().split('\n');
    const end = JSON.parse(lines.at(-1)!) as { seq: number; type: string };
    expect(end.type).toBe('run_ended');
    const forged = {
      seq: end.seq,
      type: 'tool_call',
      agent: 'lead',
      turn: 1,
      tool_use_id: 'toolu_forged',
      tool: 'write_file',
      input: { path: 'forged.txt', content: 'x' },
    };
    writeFileSync(
      join(dir, 'rec.session.jsonl'),
      `${[...lines.slice(0, -1), JSON.stringify(forged), JSON.stringify({ ...end, seq: end.seq + 1 })].join('\n')}\n`,
    );
    writeFileSync(testFile, forgedCase);
    const offline = await conclave(['test'], { cwd: dir });
    expect(offline.code, offline.stdout + offline.stderr).toBe(1);
    expect(offline.stdout).toContain(`the run differs from the recording at event #${end.seq} (tool_call of @lead)`);
    expect(offline.stdout).not.toContain('1 passed');
  });
});

describe('smaller finds of the review', () => {
  it('report: -o naming the session through a link is refused, and the session is kept; a page elsewhere is written', async () => {
    server = await startFakeAnthropic({ lead: [complete('done')] });
    const r = await runWorkflow(server, 'name: one\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
    const session = join(r.dir, r.json.session as string);
    const before = readFileSync(session, 'utf8');
    symlinkSync(session, join(r.dir, 'link.jsonl'));
    const refused = await conclave(['report', 'link.jsonl', '-o', session], { cwd: r.dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('the page would overwrite the session link.jsonl');
    expect(readFileSync(session, 'utf8')).toBe(before);
    const page = await conclave(['report', 'link.jsonl', '-o', 'page.html'], { cwd: r.dir });
    expect(page.code, page.stderr).toBe(0);
    expect(existsSync(join(r.dir, 'page.html'))).toBe(true);
  });

  it("an expected input holding a list of objects matches whatever the order of the call's keys; one key wrong does not", async () => {
    const WF =
      'name: keys\nagents:\n  lead: { role: manager }\nkickoff: Go.\noutputs:\n  findings:\n    type: array\n    items:\n      type: object\n' +
      '      properties: { file: { type: string }, line: { type: integer }, message: { type: string } }\n';
    const call: Reply = {
      tools: [{ name: 'complete', input: { status: 'success', summary: 's', outputs: { findings: [{ line: 3, file: 'a.ts', message: 'm' }] } } }],
    };
    const { dir } = project(
      'workflow: writer.yml\ncases:\n  - name: finds\n    session: rec.session.jsonl\n    expect:\n' +
        '      tools: [{ name: complete, input: { outputs: { findings: [{ message: m, file: a.ts, line: 3 }] } } }]\n',
      WF,
    );
    server = await startFakeAnthropic({ lead: [call] });
    const recorded = await conclave(['test', '--live', '--update'], { cwd: dir, env: env(server) });
    expect(recorded.code, recorded.stdout + recorded.stderr).toBe(0);
    const testFile = join(dir, 'writer.test.yml');
    writeFileSync(testFile, readFileSync(testFile, 'utf8').replace('line: 3', 'line: 4'));
    const wrong = await conclave(['test'], { cwd: dir });
    expect(wrong.code, wrong.stdout).toBe(1);
    expect(wrong.stdout).toContain('no call of complete with input');
  });
});
