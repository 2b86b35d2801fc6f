import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { CRASH_WORKFLOW, crashScript } from '../fixtures/crash-team.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow } from '../helpers/run-workflow.js';

let server: FakeAnthropic;
afterEach(() => server?.close());

const NO_NETWORK = { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: '' };

async function recorded() {
  server = await startFakeAnthropic(crashScript(5));
  const run = await runWorkflow(server, CRASH_WORKFLOW);
  expect(run.code).toBe(0);
  const sessions = join(run.dir, '.conclave', 'sessions');
  return { run, file: join(sessions, readdirSync(sessions)[0]!) };
}

describe('conclave run --replay', () => {
  it('replays a recorded concurrent run with no network and no key, to identical outputs', async () => {
    const { run, file } = await recorded();
    const replay = await conclave(['run', 'workflow.yml', '--replay', file, '--json', '--session', 'replay.jsonl'], { cwd: run.dir, env: NO_NETWORK });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ status: 'success', outputs: run.json.outputs });
    expect(replay.stderr).toContain('@lead → @a, @b, @c: @a @b @c please check your part.');
    expect(replay.stderr).toContain('proposal verdict: decided "ship"');
    expect(readFileSync(join(run.dir, 'replay.jsonl'), 'utf8').split('\n')[0]).toContain('"note":"a replay of');
  });

  it("fails at the first request that differs, at the changed agent's first call, showing the difference", async () => {
    const { run, file } = await recorded();
    const workflow = CRASH_WORKFLOW.replace('  b: { role: worker, tools: [list_files] }', '  b: { role: worker, tools: [list_files], system: Be thorough. }');
    writeFileSync(join(run.dir, 'workflow.yml'), workflow);
    const replay = await conclave(['run', 'workflow.yml', '--replay', file, '--json', '--session', 'replay.jsonl'], { cwd: run.dir, env: NO_NETWORK });
    expect(replay.code).toBe(1);
    const result = JSON.parse(replay.stdout);
    expect(result.status).toBe('error');
    expect(result.reason).toMatch(
      /^the run differs from the session at event #\d+ \(model_call of @b\): request\.system: recorded …".*"…, now …".*\\n\\nYour instructions:\\nBe thorough\."…$/,
    );
  });

  it('fails when the run asks for more than the session recorded', async () => {
    const { run, file } = await recorded();
    const lines = readFileSync(file, 'utf8').split('\n');
    const cut = lines.findIndex((l) => l.includes('"type":"proposal_opened"'));
    writeFileSync(file, `${lines.slice(0, cut - 2).join('\n')}\n`);
    const replay = await conclave(['run', 'workflow.yml', '--replay', file, '--json'], { cwd: run.dir, env: NO_NETWORK });
    expect(replay.code).toBe(1);
    expect(JSON.parse(replay.stdout).reason).toMatch(
      /^the session holds no response for @\w+'s turn \d+, call \d+: this run asked for more than was recorded$/,
    );
  });
});

describe('a recording that cannot answer the run', () => {
  it('fails within 5 s, naming the event it waits on, for --replay and for resume', async () => {
    const { run, file } = await recorded();
    // Move @a's reply before the model call it came from: the run cannot produce it there.
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const call = lines.findIndex((l) => l.includes('"type":"model_call","agent":"a"'));
    const reply = lines.findIndex((l, i) => i > call && l.includes('"type":"message"') && l.includes('"sender":"a"'));
    const moved = [...lines.slice(0, call), lines[reply]!, ...lines.slice(call, reply), ...lines.slice(reply + 1)];
    const renumbered = moved.map((l, i) => (i === 0 ? l : l.replace(/^\{"seq":\d+,/, `{"seq":${i},`)));
    const broken = join(run.dir, 'broken.jsonl');
    writeFileSync(broken, `${renumbered.filter((l) => !l.includes('"type":"run_ended"')).join('\n')}\n`);
    const started = Date.now();
    const replay = await conclave(['run', 'workflow.yml', '--replay', broken, '--json', '--session', 'replay.jsonl'], { cwd: run.dir, env: NO_NETWORK });
    expect(Date.now() - started).toBeLessThan(15_000); // catches a hang, not a slow machine
    expect(replay.code).toBe(1);
    expect(JSON.parse(replay.stdout).reason).toMatch(
      /^the recording cannot answer the run: it waits for event #\d+ \(model_call of @a\)(, event #\d+ \(model_call of @[bc]\))*, but the run does not produce the recorded event #\d+ \(message of @a\)$/,
    );
    const resumeStarted = Date.now();
    const resumed = await conclave(['resume', broken, '--json'], { cwd: run.dir, env: { ...NO_NETWORK, ANTHROPIC_API_KEY: 'sk-ant-test-0123456789abcdef' } });
    expect(Date.now() - resumeStarted).toBeLessThan(15_000); // catches a hang, not a slow machine
    expect(resumed.code).toBe(1);
    expect(JSON.parse(resumed.stdout).reason).toContain('the recording cannot answer the run');
  });

  it('replays concurrent tool calls that share one tool use id', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@a @b look' }, { tools: [{ name: 'complete', input: { status: 'success', summary: 'looked' } }] }],
      a: [{ tools: [{ name: 'list_files', input: {}, id: 'toolu_same' }], delayMs: 30 }, { text: 'a saw' }],
      b: [
        { tools: [{ name: 'list_files', input: {}, id: 'toolu_same' }], delayMs: 10 },
        { text: 'b saw', delayMs: 60 },
      ],
    });
    const run = await runWorkflow(
      server,
      'name: same-id\nagents:\n  lead: { role: manager }\n  a: { role: worker, tools: [list_files] }\n  b: { role: worker, tools: [list_files] }\nkickoff: Go.\n',
    );
    expect(run.code, run.stderr).toBe(0);
    const sessions = join(run.dir, '.conclave', 'sessions');
    const file = join(sessions, readdirSync(sessions)[0]!);
    const started = Date.now();
    const replay = await conclave(['run', 'workflow.yml', '--replay', file, '--json', '--session', 'replay.jsonl'], { cwd: run.dir, env: NO_NETWORK });
    expect(Date.now() - started).toBeLessThan(15_000); // catches a hang, not a slow machine
    expect(replay.code, replay.stdout).toBe(0);
  });
});

describe('a replay as a new user meets it', () => {
  it('replays a session another tool wrote again (spaces after : and , as Python writes them, keys reordered)', async () => {
    const { run, file } = await recorded();
    const again = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => {
        // As Python's json.dumps writes it (", " and ": " between items), the keys in reverse order.
        const dumps = (v: unknown): string =>
          Array.isArray(v)
            ? `[${v.map(dumps).join(', ')}]`
            : v !== null && typeof v === 'object'
              ? `{${Object.entries(v)
                  .reverse()
                  .map(([k, x]) => `${JSON.stringify(k)}: ${dumps(x)}`)
                  .join(', ')}}`
              : JSON.stringify(v);
        return dumps(JSON.parse(line));
      })
      .join('\n');
    writeFileSync(join(run.dir, 'python.jsonl'), `${again}\n`);
    const replay = await conclave(['run', 'workflow.yml', '--replay', 'python.jsonl', '--json', '--session', 'replay2.jsonl'], {
      cwd: run.dir,
      env: NO_NETWORK,
    });
    expect(replay.code, replay.stdout + replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).outputs).toEqual(run.json.outputs);
  });

  it('after a replay: show is pointed at the recording, and a replay that differs does not suggest a paid resume', async () => {
    const { run, file } = await recorded();
    const ok = await conclave(['run', 'workflow.yml', '--replay', file, '--session', 'r1.jsonl'], { cwd: run.dir, env: NO_NETWORK });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`session: r1.jsonl (what the replay added; the transcript: conclave show ${file})`);
    writeFileSync(
      join(run.dir, 'workflow.yml'),
      CRASH_WORKFLOW.replace('  b: { role: worker, tools: [list_files] }', '  b: { role: worker, tools: [list_files], system: Be thorough. }'),
    );
    const differs = await conclave(['run', 'workflow.yml', '--replay', file, '--session', 'r2.jsonl'], { cwd: run.dir, env: NO_NETWORK });
    expect(differs.code).toBe(1);
    expect(differs.stdout).not.toContain('conclave resume');
    expect(differs.stdout).toContain('the replay made no model call and paid nothing');
  });
});
