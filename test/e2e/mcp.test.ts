import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastToolResult, lastUserText, startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { BIN, conclave, ROOT } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { readEvents } from '../helpers/session.js';
import { freePort } from '../helpers/stores.js';

// Real MCP servers published on npm, installed as devDependencies.
const FILESYSTEM = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

const servers = (fsRoot = '.') => `
mcp_servers:
  fs: { command: node, args: [${JSON.stringify(FILESYSTEM)}, ${JSON.stringify(fsRoot)}] }
  everything: { command: node, args: [${JSON.stringify(EVERYTHING)}], env: { GREETING: hello-from-env }, timeout: 2s }
`;

const workflow = (tools: string, extra = servers()) => `
name: mcp
${extra}
agents:
  lead: { role: manager, tools: [${tools}] }
kickoff: Use your tools.
outputs:
  said: $<< result.summary >>
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let server: FakeAnthropic;
afterEach(() => server?.close());

describe('MCP servers as agent tools', () => {
  it('a filesystem tool result reaches the model; the everything server sees no ANTHROPIC_* and gets its env:', async () => {
    server = await startFakeAnthropic({
      lead: [
        { tools: [{ name: 'fs__read_text_file', input: { path: 'notes.txt' } }] },
        { tools: [{ name: 'everything__get-env', input: {} }] },
        (r) => ({ tools: [{ name: 'complete', input: { status: 'success', summary: lastUserText(r).includes('hello-from-env') ? 'env seen' : 'no env' } }] }),
      ],
    });
    const run = await runWorkflow(server, workflow('fs.read_text_file, everything.get-*'), [], {
      files: { 'notes.txt': 'the secret plan is to ship on Friday\nwith token tok-0123456789-abcdef\n' },
      env: { ANTHROPIC_EXTRA: 'sk-ant-should-never-reach-a-server', PROJECT_TOKEN: 'tok-0123456789-abcdef' },
    });
    expect(run.code, run.stderr + run.json.reason).toBe(0);
    const [first, second, third] = server.of('lead');
    expect(first!.body.tools!.map((t) => t.name)).toEqual(expect.arrayContaining(['fs__read_text_file', 'everything__get-env', 'everything__get-sum']));
    expect(first!.body.tools!.map((t) => t.name)).not.toContain('fs__write_file');
    expect(lastToolResult(second!)).toBe('fs__read_text_file');
    // The result reaches the model, a secret of the environment masked in it.
    expect(lastUserText(second!)).toBe('the secret plan is to ship on Friday\nwith token ***\n');
    const env = lastUserText(third!);
    expect(env).toContain('hello-from-env');
    expect(env).not.toMatch(/ANTHROPIC_|sk-ant-/);
    expect(env).not.toContain('tok-0123456789-abcdef');
    expect(run.json.outputs).toEqual({ said: 'env seen' });
    expect(run.events.filter((e) => e.type === 'mcp_tools').map((e) => e.server)).toEqual(['fs', 'everything']);
  });

  it('a server that fails to start stops the run before any model call, showing its stderr', async () => {
    server = await startFakeAnthropic({});
    const broken = `
mcp_servers:
  broken: { command: node, args: [-e, "console.error('config file missing: /etc/broken.json'); process.exit(3)"] }
`;
    const started = Date.now();
    const run = await runWorkflow(server, workflow('broken', broken));
    expect(run.code).toBe(1);
    expect(run.json.reason).toMatch(/^the MCP server "broken" \(node -e .+\) did not start: .+\nconfig file missing: \/etc\/broken\.json$/);
    expect(server.requests).toHaveLength(0);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('an unknown tool name stops the run before any model call; validate refuses an undeclared server', async () => {
    server = await startFakeAnthropic({});
    const run = await runWorkflow(server, workflow('fs.read_txt_file'));
    expect(run.code).toBe(1);
    expect(run.json.reason).toMatch(
      /^agents\.lead\.tools: "fs\.read_txt_file" matches no tool of the MCP server "fs" \(did you mean "fs\.read_text_file"\?\); its tools are read_file, read_text_file, /,
    );
    expect(server.requests).toHaveLength(0);
    const dir = mkdtempSync(join(tmpdir(), 'conclave-mcp-'));
    writeFileSync(join(dir, 'w.yml'), workflow('fz.read_text_file'));
    const checked = await conclave(['validate', 'w.yml'], { cwd: dir });
    expect(checked.code).toBe(2);
    expect(checked.stdout + checked.stderr).toContain('agents.lead.tools[0] names the server "fz", which mcp_servers does not declare (did you mean "fs"?)');
    // --connect starts the servers and checks the names, calling no model.
    writeFileSync(join(dir, 'w.yml'), workflow('fs.read_txt_file, everything.echo'));
    const connected = await conclave(['validate', '--connect', 'w.yml'], { cwd: dir });
    expect(connected.code).toBe(2);
    // At the entry itself (agents.lead.tools[0], line 9, column 34), with the tool it is close to.
    expect(connected.stdout).toMatch(
      /^w\.yml:9:34: agents\.lead\.tools: "fs\.read_txt_file" matches no tool of the MCP server "fs" \(did you mean "fs\.read_text_file"\?\); its tools are read_file, /m,
    );
    writeFileSync(join(dir, 'w.yml'), workflow('fs.read_text_file, everything.echo'));
    expect((await conclave(['validate', '--connect', 'w.yml'], { cwd: dir })).stdout).toBe('w.yml: ok\n');
  });

  it('a slow tool is stopped at its timeout and the model is told; the run goes on', async () => {
    server = await startFakeAnthropic({
      lead: [
        { tools: [{ name: 'everything__trigger-long-running-operation', input: { duration: 30, steps: 3 } }] },
        { tools: [{ name: 'complete', input: { status: 'success', summary: 'gave up' } }] },
      ],
    });
    const started = Date.now();
    const run = await runWorkflow(server, workflow('everything.trigger-long-running-operation'));
    expect(run.code, run.json.reason).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(lastUserText(server.of('lead')[1]!)).toBe('trigger-long-running-operation did not answer within 2 s: the call was stopped');
  });

  it('kill -9 mid-run, then resume: no request sent again; --replay needs no server', async () => {
    const script = () => ({
      lead: [
        { tools: [{ name: 'fs__read_text_file', input: { path: 'notes.txt' } }], delayMs: 50 },
        { tools: [{ name: 'everything__echo', input: { message: 'second call' } }], delayMs: 50 },
        { text: 'thinking it over', delayMs: 600 },
      ],
    });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-mcp-kill-'));
    writeFileSync(join(dir, 'notes.txt'), 'notes\n');
    writeFileSync(join(dir, 'workflow.yml'), workflow('fs.read_text_file, everything.echo'));
    server = await startFakeAnthropic(script());
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--quiet'], { cwd: dir, env: { ...process.env, ...env }, stdio: 'ignore' });
    const closed = new Promise((resolve) => child.on('close', resolve));
    const sessions = join(dir, '.conclave', 'sessions');
    const file = () => join(sessions, readdirSync(sessions).find((f) => f.endsWith('.jsonl'))!);
    const has = (text: string) =>
      existsSync(sessions) && readdirSync(sessions).some((f) => f.endsWith('.jsonl')) && readFileSync(file(), 'utf8').includes(text);
    while (!has('second call"') || !has('"tool_result"') || server.requests.length < 3) await sleep(5);
    child.kill('SIGKILL');
    await closed;
    const before = readEvents(file());
    expect(before.filter((e) => e.type === 'tool_result')).toHaveLength(2);
    const sent = server.requests.length;
    await server.close();

    server = await startFakeAnthropic({ lead: [{ text: 'thinking it over' }] });
    const resumed = await conclave(['resume', file(), '--json'], { cwd: dir, env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(server.requests, 'only the call the session did not hold').toHaveLength(1);
    expect(sent).toBe(3);

    // --replay with the servers gone: the recorded listings and results answer everything.
    const gone = readFileSync(join(dir, 'workflow.yml'), 'utf8')
      .replaceAll(FILESYSTEM, '/nonexistent/server-filesystem.js')
      .replaceAll(EVERYTHING, '/nonexistent/server-everything.js');
    writeFileSync(join(dir, 'workflow.yml'), gone);
    const replay = await conclave(['run', 'workflow.yml', '--replay', file(), '--json'], { cwd: dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(replay.code, replay.stderr + replay.stdout.slice(0, 800)).toBe(0);
  }, 60_000);

  it('a streamable HTTP server, reached at its url', async () => {
    const port = await freePort();
    const http = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      await new Promise<void>((resolve, reject) => {
        let seen = '';
        http.stderr!.on('data', (c: Buffer) => ((seen += c.toString()), /listening on port/.test(seen) && resolve()));
        http.on('exit', () => reject(new Error(`the HTTP server exited: ${seen}`)));
      });
      server = await startFakeAnthropic({
        lead: [
          { tools: [{ name: 'remote__get-sum', input: { a: 2, b: 40 } }] },
          (r) => ({ tools: [{ name: 'complete', input: { status: 'success', summary: lastUserText(r) } }] }),
        ],
      });
      const remote = `
mcp_servers:
  remote: { url: "http://127.0.0.1:${port}/mcp", headers: { X-Team: conclave } }
`;
      const run = await runWorkflow(server, workflow('remote.get-sum', remote));
      expect(run.code, run.json.reason).toBe(0);
      expect(run.json.outputs.said).toMatch(/42/);
    } finally {
      http.kill();
    }
  });
});
