import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sandboxForTests } from '../helpers/sandbox.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { attack, fresh, workflow } from '../helpers/attack.js';
import { conclave, ROOT } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';
import { SECRET_NAME } from '../../src/cli/process-secrets.js';

/**
 * The second round of attacks (docs/security.md): model text read by GitHub as workflow commands,
 * git's and conclave's own files within the tools' reach, conclave's process read through /proc,
 * and a session file handed over by someone else.
 */

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function githubEnv(dir: string) {
  writeFileSync(join(dir, 'output.txt'), '');
  writeFileSync(join(dir, 'summary.md'), '');
  return { GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: join(dir, 'output.txt'), GITHUB_STEP_SUMMARY: join(dir, 'summary.md') };
}

/** The lines GitHub's runner would take for workflow commands: `::` first after blanks (.NET's TrimStart), or `##[` anywhere. */
function commandsIn(text: string): string[] {
  return text
    .split(/\r?\n|\r/)
    .filter((line) => line.replace(/^[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/, '').startsWith('::') || line.includes('##['));
}

const INJECTED = [
  '::add-mask::success',
  '  ::stop-commands::pwned',
  '\t::error file=/etc/passwd::owned',
  'text ##[set-output name=verdict;]forged',
  '::set-env name=NODE_OPTIONS::--require=/tmp/x',
].join('\n');

describe('model text never becomes a GitHub workflow command', () => {
  for (const json of [false, true]) {
    it(`messages, the summary and outputs are printed as text, in groups and in the result${json ? ' (--json)' : ''}`, async () => {
      server = await startFakeAnthropic({
        lead: [{ text: `@helper look:\n${INJECTED}` }, { tools: [{ name: 'complete', input: { status: 'success', summary: `done\n${INJECTED}` } }] }],
        helper: [{ text: `${INJECTED}\n::endgroup::\n::group::fake` }],
      });
      const dir = fresh('gha-commands');
      writeFileSync(
        join(dir, 'workflow.yml'),
        'name: inject\nagents:\n  lead: { role: manager }\n  helper: { role: worker }\nkickoff: Go.\noutputs:\n  said: $<< result.summary >>\n',
      );
      // The machine's own secret-looking variables (TOX_TESTENV_PASSENV on some) would add masks of their own: cleared.
      const noAmbientSecrets = Object.fromEntries(
        Object.keys(process.env)
          .filter((name) => SECRET_NAME.test(name))
          .map((name) => [name, '']),
      );
      const run = await conclave(['run', 'workflow.yml', ...(json ? ['--json'] : [])], {
        cwd: dir,
        env: { ...noAmbientSecrets, ...githubEnv(dir), ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
      });
      expect(run.code, run.stderr).toBe(0);
      const out = `${run.stdout}\n${run.stderr}`;
      // The text is all there, shown…
      expect(out).toContain('add-mask::success');
      expect(out).toContain('set-output name=verdict;]forged');
      // …but the only commands are conclave's own: the key's mask and a group per sender.
      expect(commandsIn(out).sort()).toEqual(
        [
          `::add-mask::${TEST_API_KEY}`,
          '::endgroup::',
          '::endgroup::',
          '::endgroup::',
          '::group::@helper: 1 message',
          '::group::@lead: 1 message',
          '::group::@kickoff: 1 message',
        ].sort(),
      );
      if (json) expect(JSON.parse(run.stdout).outputs.said).toBe(`done\n${INJECTED}`);
    });
  }
});

describe("git, conclave and GitHub workflow files are out of the tools' reach", () => {
  it('write_file refuses .git (any depth, any case), .conclave, the session file and the cache file wherever they are, and .github/workflows', async () => {
    const dir = fresh('git-write');
    execFileSync('git', ['init', '-q', dir]);
    mkdirSync(join(dir, 'out'));
    const config = readFileSync(join(dir, '.git', 'config'), 'utf8');
    const r = await attack(
      dir,
      [
        { name: 'write_file', input: { path: '.git/config', content: '[core]\n\tfsmonitor = touch PWNED\n' } },
        { name: 'write_file', input: { path: './.GIT/hooks/pre-commit', content: 'touch PWNED' } },
        { name: 'write_file', input: { path: 'vendor/lib/.git/config', content: 'x' } },
        { name: 'write_file', input: { path: '.conclave/sessions/forged.jsonl', content: '{}' } },
        { name: 'write_file', input: { path: 'out/session.jsonl', content: '{"forged":true}\n' } },
        { name: 'write_file', input: { path: '.github/workflows/release.yml', content: 'on: push' } },
        { name: 'write_file', input: { path: 'src/ok.txt', content: 'fine' } },
        { name: 'write_file', input: { path: 'responses.sqlite', content: 'forged' } },
      ],
      workflow('write_file'),
      { args: ['--session', 'out/session.jsonl', '--response-cache', 'responses.sqlite'] },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.results.map((x) => x.is_error ?? false)).toEqual([true, true, true, true, true, true, false, true]);
    expect(readFileSync(join(dir, 'responses.sqlite')).subarray(0, 15).toString()).toBe('SQLite format 3');
    expect(r.results[0]!.content).toBe(
      ".git/config: it is inside a .git directory (git's configuration and hooks run code); the workspace tools do not write there",
    );
    expect(r.results[3]!.content).toMatch(/inside \.conclave/);
    expect(r.results[4]!.content).toMatch(/one of this run's own files/);
    expect(r.results[5]!.content).toMatch(/edit_github_workflows: true/);
    expect(readFileSync(join(dir, '.git', 'config'), 'utf8')).toBe(config);
    expect(existsSync(join(dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(existsSync(join(dir, 'vendor'))).toBe(false);
    expect(existsSync(join(dir, '.github'))).toBe(false);
    expect(readFileSync(join(dir, 'out', 'session.jsonl'), 'utf8')).toMatch(/^\{"type":"header"/);
    expect(readFileSync(join(dir, 'src', 'ok.txt'), 'utf8')).toBe('fine');
  });

  it("read_file and grep do not read .git (actions/checkout keeps the job's token in .git/config)", async () => {
    const dir = fresh('git-read');
    execFileSync('git', ['init', '-q', dir]);
    execFileSync('git', ['-C', dir, 'config', 'http.https://github.com/.extraheader', 'AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==']);
    const r = await attack(
      dir,
      [
        { name: 'read_file', input: { path: '.git/config' } },
        { name: 'read_file', input: { path: './.GIT/config' } },
        { name: 'grep', input: { pattern: 'extraheader', path: '.git' } },
        { name: 'grep', input: { pattern: 'extraheader' } },
      ],
      workflow('read_file, grep'),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.results.map((x) => x.is_error ?? false)).toEqual([true, true, true, false]);
    for (const x of r.results) expect(x.content).not.toContain('eC1hY2Nlc3MtdG9rZW46');
    expect(r.results[0]!.content).toMatch(/inside a \.git directory \(its config may hold the job's token\)/);
  });

  it('edit_github_workflows: true lets write_file change .github/workflows, and nothing else more', async () => {
    const dir = fresh('gh-workflows');
    const r = await attack(
      dir,
      [
        { name: 'write_file', input: { path: '.github/workflows/ci.yml', content: 'on: push' } },
        { name: 'write_file', input: { path: '.git/config', content: 'x' } },
      ],
      workflow('write_file', 'edit_github_workflows: true'),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.results.map((x) => x.is_error ?? false)).toEqual([false, true]);
    expect(readFileSync(join(dir, '.github', 'workflows', 'ci.yml'), 'utf8')).toBe('on: push');
  });

  it.skipIf(!sandboxForTests().bwrap)('a sandboxed run_command reads .git but cannot change it, .conclave or the workflows, nor create a .git', async () => {
    const repo = fresh('git-sandbox');
    execFileSync('git', ['init', '-q', repo]);
    mkdirSync(join(repo, '.github', 'workflows'), { recursive: true });
    writeFileSync(join(repo, '.github', 'workflows', 'ci.yml'), 'on: push\n');
    const bare = fresh('no-git');
    const config = readFileSync(join(repo, '.git', 'config'), 'utf8');
    const calls = [
      { name: 'run_command', input: { command: 'git config --get core.bare' } },
      { name: 'run_command', input: { command: 'printf "[core]\\n\\tfsmonitor = touch PWNED\\n" >> .git/config' } },
      { name: 'run_command', input: { command: 'echo forged >> "$(ls .conclave/sessions/*.jsonl)"' } },
      { name: 'run_command', input: { command: 'echo "on: push" > .github/workflows/evil.yml' } },
      { name: 'run_command', input: { command: 'mkdir -p .git/hooks && echo x > .git/hooks/post-checkout' } },
      { name: 'run_command', input: { command: 'echo ok > made.txt' } },
    ];
    const r = await attack(repo, calls, workflow('run_command', 'sandbox: required'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.results.map((x) => x.content.split('\n')[0] !== 'exit code 0')).toEqual([false, true, true, true, true, false]);
    expect(readFileSync(join(repo, '.git', 'config'), 'utf8')).toBe(config);
    expect(readdirSync(join(repo, '.github', 'workflows'))).toEqual(['ci.yml']);
    const session = readdirSync(join(repo, '.conclave', 'sessions')).find((f) => f.endsWith('.jsonl'))!;
    expect(readFileSync(join(repo, '.conclave', 'sessions', session), 'utf8').split('\n')).not.toContain('forged');
    expect(readFileSync(join(repo, 'made.txt'), 'utf8')).toBe('ok\n');

    // No .git to protect: none can be made, and the empty mount point is gone afterwards.
    const r2 = await attack(
      bare,
      [{ name: 'run_command', input: { command: 'mkdir -p .git && echo "[core]" > .git/config' } }],
      workflow('run_command', 'sandbox: required'),
    );
    expect(r2.results[0]!.content.split('\n')[0]).not.toBe('exit code 0');
    expect(existsSync(join(bare, '.git'))).toBe(false);
    expect(existsSync(join(bare, '.github'))).toBe(false);
  });
});

describe("conclave's process is not the commands' to read or outlive", () => {
  const SECRET = 'tok_s3cr3t_v4lue_42';
  const yml = `name: proc\ninputs:\n  token: { type: string, secret: true }\nsandbox: off\nagents:\n  lead: { role: manager, tools: [run_command] }\nkickoff: Go.\n`;
  const alive = (marker: string) =>
    readdirSync('/proc').filter((pid) => {
      try {
        return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(marker);
      } catch {
        return false;
      }
    });

  it("conclave's command line holds no secret input, read from outside while it runs", async () => {
    const dir = fresh('cmdline');
    let cmdline = '';
    let pid = 0;
    const r = await attack(dir, [{ name: 'run_command', input: { command: 'sleep 0.5' } }], yml, {
      args: ['-i', `token=${SECRET}`],
      onStart: (p) => (pid = p),
      during: () => {
        try {
          cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8') || cmdline;
        } catch {
          // ended
        }
      },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(cmdline.replace(/\0+$/, '')).toBe('conclave');
  });

  it.skipIf(!sandboxForTests().bwrap)(
    "sandbox: off still keeps the job's processes out of reach: no key or secret from any /proc/*/environ or cmdline; setsid … & does not outlive the command",
    async () => {
      const dir = fresh('proc');
      const marker = `sleep ${30_000 + Math.floor(Math.random() * 9_000)}`;
      const r = await attack(
        dir,
        [
          {
            name: 'run_command',
            input: {
              command:
                'cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" "\\n" | rev > leaked.txt; wc -l < leaked.txt; ls /proc | grep -c "^[0-9]"',
            },
          },
          { name: 'run_command', input: { command: `setsid sh -c '${marker}' > /dev/null 2>&1 < /dev/null & sleep 0.5; echo started` } },
        ],
        yml,
        { args: ['-i', `token=${SECRET}`] },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(alive(marker)).toEqual([]);
      const leaked = readFileSync(join(dir, 'leaked.txt'), 'utf8');
      expect(leaked).toContain('hs'); // the command did read what it could see: its own shell
      for (const secret of [SECRET, TEST_API_KEY]) expect(leaked).not.toContain([...secret].reverse().join(''));
    },
  );
});

describe('a session file handed over by someone else', () => {
  function forgedSession(dir: string, path: string): string {
    const file = join(dir, 'forged.jsonl');
    const header = {
      format: 1,
      type: 'header',
      run_id: 'r1',
      conclave_version: '0.1.0',
      workflow: { path, sha256: 'x' },
      inputs: {},
      session: 'forged.jsonl',
      started_at: new Date().toISOString(),
    };
    writeFileSync(file, `${JSON.stringify(header)}\n`);
    return file;
  }

  it('resume opens no workflow the session names outside the directory, nor a file that is not YAML; the key is never printed', async () => {
    const dir = fresh('untrusted-session');
    writeFileSync(join(dir, 'token.txt'), `key: ${TEST_API_KEY}\n: [`);
    for (const path of ['/etc/passwd', '/proc/self/environ', '../outside.yml', 'token.txt']) {
      const r = await conclave(['resume', forgedSession(dir, path)], { cwd: dir, env: { GITHUB_ACTIONS: 'true', ANTHROPIC_API_KEY: TEST_API_KEY } });
      expect(r.code, path).toBe(2);
      expect(r.stderr).toContain("conclave does not open that on a session file's word: give the workflow with --workflow FILE");
      expect(r.stderr + r.stdout).not.toContain(TEST_API_KEY);
      expect(r.stderr + r.stdout).not.toContain('root:');
    }
    // A YAML file of the directory that quotes the key in a parse error: masked, in the log and the annotation.
    writeFileSync(join(dir, 'bad.yml'), `name: x\nagents: ${TEST_API_KEY}: [\n`);
    const r = await conclave(['resume', forgedSession(dir, 'bad.yml')], { cwd: dir, env: { GITHUB_ACTIONS: 'true', ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(r.code).toBe(2);
    expect(r.stderr + r.stdout).not.toContain(TEST_API_KEY);
  });
});

describe('limits from a session file are no looser than the workflow', () => {
  const yml = 'name: limited\nlimits: { max_turns: 2, budget_usd: 0.5 }\nagents:\n  lead: { role: manager }\n  helper: { role: worker }\nkickoff: Go.\n';
  const script = () => ({
    lead: [{ text: '@helper go' }, { tools: [{ name: 'complete', input: { status: 'success', summary: 'done' } }] }],
    helper: [{ text: 'did it' }],
  });

  it('a forged run_started that raises the budget and the timeout is held to the workflow when the resume goes live; a flag still raises a limit; nonsense is refused', async () => {
    server = await startFakeAnthropic(script());
    const dir = fresh('forged-limits');
    writeFileSync(join(dir, 'workflow.yml'), yml);
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const first = await conclave(['run', 'workflow.yml', '--json'], { cwd: dir, env });
    expect(first.code, first.stderr).toBe(3);
    const session = join(dir, JSON.parse(first.stdout).session);
    const forge = (change: (limits: Record<string, number>) => void) => {
      // Each forged copy stands alone here: the note of the run's newer generation would refuse it first, as a stale copy.
      rmSync(join(dir, '.conclave', 'runs'), { recursive: true, force: true });
      const lines = readFileSync(session, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const started = lines.find((l) => l.type === 'run_started');
      change(started.limits);
      const out = join(dir, `forged-${Math.random().toString(36).slice(2)}.jsonl`);
      writeFileSync(
        out,
        `${lines
          .filter((l) => l.type !== 'run_ended')
          .map((l) => JSON.stringify(l))
          .join('\n')}\n`,
      );
      return out;
    };
    // (max_turns is in each turn's status line: forging it makes the replay differ and stop at once.)
    const raised = forge((l) => {
      l.budgetUsd = 1e9;
      l.timeoutMs = 2_000_000_000;
    });
    const before = server.requests.length;
    const held = await conclave(['resume', raised, '--json'], { cwd: dir, env });
    expect(held.code, held.stderr + held.stdout).toBe(3);
    expect(JSON.parse(held.stdout).reason).toMatch(/max_turns/);
    expect(server.requests.length).toBe(before);
    const changed = readFileSync(raised, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((l) => l.type === 'limits_changed');
    expect(changed.limits).toMatchObject({ maxTurns: 2, budgetUsd: 0.5, timeoutMs: 30 * 60_000 });
    expect(changed.changed.sort()).toEqual(['budgetUsd', 'timeoutMs']);

    const flagged = await conclave(['resume', forge((l) => (l.budgetUsd = 1e9)), '--json', '--max-turns', '3'], { cwd: dir, env });
    expect(flagged.code, flagged.stderr).toBe(0);

    const nonsense = await conclave(['resume', forge((l) => (l.maxTurnsPerAgent = -1))], { cwd: dir, env });
    expect(nonsense.code).toBe(2);
    expect(nonsense.stderr).toMatch(/event \d+ \(run_started\) records limits no workflow can have: maxTurnsPerAgent is -1/);
  });
});

describe('the response cache holds no secret and trusts no entry', () => {
  const SECRET_INPUT = 'inp-s3cret-9f8e7d6c';
  const SECRET_ENV = 'env-s3cret-1a2b3c4d';
  const yml = `name: quoting\ninputs:\n  token: { type: string, secret: true }\nenv:\n  DEPLOY_TOKEN: ${SECRET_ENV}\nagents:\n  lead: { role: manager }\nkickoff: Go.\n`;
  const quoting = () => ({ lead: [{ text: `the token is ${SECRET_INPUT}, the env ${SECRET_ENV}, the key ${TEST_API_KEY}` }] });

  it('keeps responses masked, in a file only its owner reads, and takes a malformed entry for a miss', async () => {
    server = await startFakeAnthropic(quoting());
    const dir = fresh('cache-masked');
    writeFileSync(join(dir, 'workflow.yml'), yml);
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const args = ['run', 'workflow.yml', '--json', '--response-cache', '-i', `token=${SECRET_INPUT}`];
    const first = await conclave(args, { cwd: dir, env });
    expect(first.code, first.stderr).toBe(0);
    const file = join(dir, '.conclave', 'cache.sqlite');
    const raw = readFileSync(file);
    for (const secret of [SECRET_INPUT, SECRET_ENV, TEST_API_KEY]) expect(raw.includes(secret)).toBe(false);
    expect(raw.includes('the token is ***')).toBe(true);
    expect(statSync(file).mode & 0o077).toBe(0);

    // Every entry replaced by something that is not a response: a miss, paid again, no stack trace.
    const { default: sqlite3 } = await import('sqlite3');
    const db = new sqlite3.Database(file);
    await new Promise<void>((done, fail) =>
      db.run(`UPDATE keyv SET value = '{"value":{"content":[{"type":"tool_use","id":1}],"stop_reason":"end_turn"},"expires":null}'`, (e: Error | null) =>
        e ? fail(e) : done(),
      ),
    );
    await new Promise<void>((done) => db.close(() => done()));
    await server.close();
    server = await startFakeAnthropic(quoting());
    const second = await conclave(args, { cwd: dir, env: { ...env, ANTHROPIC_BASE_URL: server.url } });
    expect(second.code, second.stderr).toBe(0);
    expect(server.requests).toHaveLength(1);
    expect(second.stderr).toContain('holds an entry that is not a model response');
    expect(second.stderr).not.toMatch(/TypeError|\n\s+at /);
  });

  it("a store URL's password never shows, given after the last @ or as ?password=", async () => {
    const dir = fresh('cache-url');
    writeFileSync(join(dir, 'workflow.yml'), 'name: x\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
    for (const url of ['redis://user:p@ss-w0rd-7x@127.0.0.1:1/0', 'postgres://conclave@127.0.0.1:1/db?password=hunter2-s3cret&sslmode=disable']) {
      const r = await conclave(['run', 'workflow.yml', '--response-cache', url], { cwd: dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('cannot be used');
      for (const part of ['p@ss-w0rd-7x', 'ss-w0rd-7x', 'hunter2-s3cret']) expect(r.stderr).not.toContain(part);
    }
  });
});

describe('GitHub limits counted as GitHub counts them', () => {
  it('a job summary of 700,000 € signs (3 bytes each) stays under 1 MiB in bytes', async () => {
    server = await startFakeAnthropic({ lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: '€'.repeat(700_000) } }] }] });
    const dir = fresh('summary-bytes');
    writeFileSync(join(dir, 'workflow.yml'), 'name: euro\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
    const run = await conclave(['run', 'workflow.yml', '--quiet'], {
      cwd: dir,
      env: { ...githubEnv(dir), ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(run.code, run.stderr).toBe(0);
    const summary = readFileSync(join(dir, 'summary.md'));
    expect(summary.length).toBeGreaterThan(500_000);
    expect(summary.length).toBeLessThan(1024 * 1024);
    expect(summary.toString('utf8')).not.toContain('\uFFFD');
    expect(summary.toString('utf8')).toContain("under GitHub's 1 MiB limit");
  });
});

describe('terminal escape sequences in model text reach no terminal', () => {
  it('show and run print ESC, BEL, CR and C1 controls as \\xNN: no clipboard write, title or screen clear', async () => {
    const hostile = 'ok \u001b]52;c;cm0gLXJmIH4=\u0007 \u001b]0;pwned\u0007 \u001b[2J\u001b[H \u009b31m \rOVERWRITE';
    server = await startFakeAnthropic({ lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: hostile } }] }] });
    const dir = fresh('escapes');
    writeFileSync(join(dir, 'workflow.yml'), 'name: esc\nagents:\n  lead: { role: manager }\nkickoff: Go.\noutputs:\n  said: $<< result.summary >>\n');
    const run = await conclave(['run', 'workflow.yml'], { cwd: dir, env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(run.code, run.stderr).toBe(0);
    const session = readdirSync(join(dir, '.conclave', 'sessions')).find((f) => f.endsWith('.jsonl'))!;
    const shown = await conclave(['show', join('.conclave', 'sessions', session)], { cwd: dir });
    const markdown = await conclave(['show', join('.conclave', 'sessions', session), '--format', 'markdown'], { cwd: dir });
    for (const out of [run.stdout, run.stderr, shown.stdout, markdown.stdout]) {
      expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    }
    expect(shown.stdout).toContain('ok \\x1b]52;c;cm0gLXJmIH4=\\x07');
    expect(run.stdout).toContain('\\x0dOVERWRITE');
  });
});

describe('typed outputs that would block or crash the run', () => {
  it('a pattern that backtracks is checked off the main thread and stopped at its 2 s deadline; $ref and __proto__ are refused by validate', async () => {
    const yml = `name: typed\nlimits: { timeout: 30s }\nagents:\n  lead: { role: manager }\nkickoff: Go.\noutputs:\n  word: { type: string, pattern: "^(a+)+$" }\n`;
    const evil = `${'a'.repeat(40)}!`;
    server = await startFakeAnthropic({
      lead: [
        { tools: [{ name: 'complete', input: { status: 'success', summary: 's', outputs: { word: evil } } }] },
        { tools: [{ name: 'complete', input: { status: 'success', summary: 's', outputs: { word: 'aaa' } } }] },
      ],
    });
    const dir = fresh('typed-redos');
    writeFileSync(join(dir, 'workflow.yml'), yml);
    const started = Date.now();
    const run = await conclave(['run', 'workflow.yml', '--json'], { cwd: dir, env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(run.code, run.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(JSON.parse(run.stdout).outputs.word).toBe('aaa');
    const refusal = server.of('lead')[1]!.body.messages.at(-1)!.content as { content: string }[];
    expect(refusal[0]!.content).toMatch(/took over 2 s \(a pattern that backtracks\?\)/);

    const refs =
      'name: refs\nagents:\n  lead: { role: manager }\nkickoff: Go.\noutputs:\n  a: { type: object, properties: { x: { $ref: "#/$defs/nope" } } }\n  __proto__: { type: string }\n';
    writeFileSync(join(dir, 'refs.yml'), refs);
    const checked = await conclave(['validate', 'refs.yml'], { cwd: dir });
    expect(checked.code).toBe(2);
    expect(checked.stdout).toContain(
      'refs.yml:6:41: outputs.a.properties.x.$ref: references ($ref) are not supported in a typed output; write the schema inline',
    );
    expect(checked.stdout).toContain('refs.yml:7:3: outputs.__proto__ cannot be an output name');
  });
});

describe('a tool input nested thousands deep', () => {
  it('is not run, the model is told why, and the session is written whole (show reads it)', async () => {
    const deep = `${'{"a":'.repeat(8000)}1${'}'.repeat(8000)}`;
    server = await startFakeAnthropic({ lead: [{ tools: [{ name: 'read_file', input: {}, json: deep }] }, { text: 'done' }] });
    const dir = fresh('deep-input');
    writeFileSync(join(dir, 'workflow.yml'), workflow('read_file'));
    const run = await conclave(['run', 'workflow.yml', '--json'], { cwd: dir, env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/call stack|RangeError/);
    const result = server.of('lead')[1]!.body.messages.at(-1)!.content as { content: string; is_error: boolean }[];
    expect(result[0]).toMatchObject({
      is_error: true,
      content: 'Not run: the input was nested deeper than 64 levels. Call read_file again with a flatter input.',
    });
    const session = JSON.parse(run.stdout).session;
    const shown = await conclave(['show', session], { cwd: dir });
    expect(shown.code, shown.stderr).toBe(0);
  });

  it('a workflow nested 900 deep in block style is a validate error with its place, not a stack trace', async () => {
    const dir = fresh('deep-yaml');
    const items = Array.from({ length: 900 }, (_, i) => `${'  '.repeat(i + 2)}items:\n`).join('');
    writeFileSync(
      join(dir, 'deep.yml'),
      `name: deep\nagents:\n  lead: { role: manager }\nkickoff: hi\noutputs:\n  o:\n    type: array\n${items}${'  '.repeat(902)}type: string\n`,
    );
    const r = await conclave(['validate', 'deep.yml'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^deep\.yml:\d+:\d+: outputs\.o\.items… is nested more than 64 levels deep/m);
    expect(r.stderr + r.stdout).not.toMatch(/RangeError|internal error/);
  });
});

describe('MCP servers: names that clash, children that stay, keys in their output', () => {
  const TRICKY = join(ROOT, 'test/fixtures/mcp-tricky-server.mjs');
  const yml = (tools: string, env = '') =>
    `name: tricky\nmcp_servers:\n  t: { command: node, args: [${JSON.stringify(TRICKY)}]${env} }\nagents:\n  lead: { role: manager, tools: [${tools}] }\nkickoff: Go.\n`;

  it('two tools that reach the model under one name are refused by validate --connect and by run, before any model call', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'never' }] });
    const dir = fresh('mcp-clash');
    writeFileSync(join(dir, 'workflow.yml'), yml('t'));
    const checked = await conclave(['validate', '--connect', 'workflow.yml'], { cwd: dir });
    expect(checked.code).toBe(2);
    expect(checked.stdout + checked.stderr).toContain('t.read.file and t.read_file would both reach the model as t__read_file');
    const run = await conclave(['run', 'workflow.yml'], { cwd: dir, env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toContain('would both reach the model as t__read_file');
    expect(server.requests).toHaveLength(0);
    // Naming one of them is fine.
    writeFileSync(join(dir, 'one.yml'), yml('t.read_file, t.hello'));
    expect((await conclave(['validate', '--connect', 'one.yml'], { cwd: dir })).code).toBe(0);
  });

  it("a server's child that ignores SIGTERM does not outlive the run", async () => {
    const marker = String(40_000 + Math.floor(Math.random() * 9_000));
    server = await startFakeAnthropic({ lead: [{ text: 'done' }] });
    const dir = fresh('mcp-child');
    writeFileSync(join(dir, 'workflow.yml'), yml('t.hello', `, env: { MARKER: "${marker}" }`));
    const run = await conclave(['run', 'workflow.yml'], { cwd: dir, env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(run.code, run.stderr).toBe(0);
    const alive = readdirSync('/proc').filter((pid) => {
      try {
        return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`sleep\0${marker}`);
      } catch {
        return false;
      }
    });
    expect(alive).toEqual([]);
  });

  it('a server that fails printing the key wrapped, in pieces and in base64 shows none of it', async () => {
    const dir = fresh('mcp-stderr');
    writeFileSync(join(dir, 'workflow.yml'), yml('t.hello', `, env: { FAIL_WITH_KEY: "${TEST_API_KEY}" }`));
    const b64 = Buffer.from(`auth:${TEST_API_KEY}`).toString('base64');
    for (const args of [
      ['run', 'workflow.yml'],
      ['validate', '--connect', 'workflow.yml'],
    ]) {
      const r = await conclave(args, { cwd: dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });
      expect(r.code).not.toBe(0);
      const out = r.stdout + r.stderr;
      expect(out).toContain('did not start');
      for (const piece of [TEST_API_KEY.slice(9), b64.slice(16), b64.slice(8, 16), b64.slice(-8)]) expect(out).not.toContain(piece);
    }
  });
});
