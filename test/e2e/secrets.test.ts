import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readSession } from '../../src/session/reader.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// Each a secret by a different rule of DESIGN §9, with the characters that broke masking before.
const TOKEN = 'tok"en\\9f8e7d6c-quoted';
const PASS = 'workflow-env-pass-31337';
const SERVICE = 'process-env-service-token-4242';
const MULTI = 'first-line-of-a-key\nsecond-line-of-the-key';

/** Every form of a secret that must not be written anywhere. */
function forms(secret: string): string[] {
  const b64 = (s: string) => Buffer.from(s).toString('base64').replace(/=+$/, '');
  return [
    secret,
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
    b64(secret),
    b64(`x${secret}`).slice(2, -1),
    b64(`xy${secret}`).slice(3, -1),
    ...secret.split('\n'),
  ];
}

const WORKFLOW = `
name: secrets
inputs:
  token: { type: string, secret: true }
  key: { type: string, secret: true }
env:
  MYPASS: ${PASS}
sandbox: off
agents:
  lead: { role: manager, tools: [run_command] }
kickoff: Go.
outputs:
  said: $<< agents.lead.last_message >>
  summary: $<< result.summary >>
`;

describe('secrets never leak and never corrupt', () => {
  it('no form of any secret reaches the session, stdout, stderr, GITHUB_OUTPUT or the summary, and every file still reads', async () => {
    const all = [TOKEN, PASS, SERVICE, MULTI, TEST_API_KEY];
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const leak = [
      `raw: ${TOKEN} ${PASS} ${SERVICE} ${TEST_API_KEY}`,
      `json: ${JSON.stringify({ token: TOKEN, pass: PASS })}`,
      `base64: ${b64(TOKEN)} ${b64(`Bearer ${TEST_API_KEY}`)} ${b64(`user:${PASS}`)}`,
      `url: https://example.com/?t=${encodeURIComponent(TOKEN)}`,
      `lines: ${MULTI.split('\n')[1]} and ${MULTI}`,
    ].join('\n');
    server = await startFakeAnthropic({
      lead: [
        { text: `Let me look. ${leak}`, tools: [{ name: 'run_command', input: { command: 'echo "$MYPASS"; printf %s "$MYPASS" | base64' } }] },
        { text: leak, tools: [{ name: 'complete', input: { status: 'success', summary: leak } }] },
      ],
    });
    const run = await runWorkflow(server, WORKFLOW, ['-i', `token=${TOKEN}`, '-i', `key=${MULTI}`], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: 'github-output.txt', GITHUB_STEP_SUMMARY: 'summary.md', SERVICE_TOKEN: SERVICE },
      files: { 'github-output.txt': '', 'summary.md': '' },
    });
    expect(run.code, run.stderr).toBe(0);
    const session = String((run.json as { session?: string }).session);
    // The tool really printed the secret, raw and in base64, before masking.
    expect(run.events.find((e) => e.type === 'tool_result')!.content).toMatch(/^exit code 0\n--- stdout ---\n\*\*\*\n\*\*\*/);
    const written = {
      session: readFileSync(join(run.dir, session), 'utf8'),
      stdout: run.stdout.replace(/^::add-mask::.*\n/gm, ''),
      stderr: run.stderr.replace(/^::add-mask::.*\n/gm, ''),
      GITHUB_OUTPUT: readFileSync(join(run.dir, 'github-output.txt'), 'utf8'),
      summary: readFileSync(join(run.dir, 'summary.md'), 'utf8'),
    };
    for (const [where, text] of Object.entries(written)) {
      for (const secret of all) for (const form of forms(secret)) expect(text.includes(form), `${where} holds ${JSON.stringify(form)}`).toBe(false);
      expect(text, where).toContain('***');
    }
    // Structure is never masked: the file reads, the header is whole, and show works.
    const record = readSession(join(run.dir, session));
    expect(record.header).toMatchObject({ type: 'header', format: 1, inputs: { token: '***', key: '***' } });
    for (const format of ['text', 'markdown', 'json']) {
      const shown = await conclave(['show', session, '--format', format], { cwd: run.dir });
      expect(shown.code, shown.stderr).toBe(0);
      for (const secret of all) expect(shown.stdout.includes(secret)).toBe(false);
    }
  });

  it.each([
    ['e', 'token=e'],
    ['1', 'token=1'],
    ['abc', 'token=abc'],
  ])('a secret input of %j is refused before anything runs, and nothing is written', async (_, pair) => {
    server = await startFakeAnthropic({});
    const run = await runWorkflow(server, WORKFLOW, ['-i', pair]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^conclave: secret input "token" is \d characters? long: a secret under 4 characters cannot be masked without masking ordinary text; use a longer value\n$/,
    );
    expect(run.events).toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it('a short secret-named value in env: is refused; a short one in the process environment is taken for a setting', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'done: true' }] });
    const refused = await runWorkflow(server, WORKFLOW.replace(`MYPASS: ${PASS}`, 'MYPASS: abc'));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('conclave: env: MYPASS is 3 characters long');
    const run = await runWorkflow(server, WORKFLOW, [], { env: { SKIP_AUTH: 'true', API_KEY_VERSION: '2' } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.outputs.said).toBe('done: true');
  });

  it('resumes with a changed API key: the recording still matches', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: `@helper check it; my key is ${TEST_API_KEY}` }, { tools: [{ name: 'complete', input: { status: 'success', summary: 'checked' } }] }],
      helper: [{ text: 'checked' }],
    });
    const pair = WORKFLOW.replace('  lead: { role: manager, tools: [run_command] }', '  lead: { role: manager }\n  helper: { role: worker }').replace(
      'kickoff: Go.',
      'limits: { max_turns: 1 }\nkickoff: Go.',
    );
    const run = await runWorkflow(server, pair, ['-i', `token=${TOKEN}`]);
    expect(run.code, run.stderr).toBe(3);
    const resumed = await conclave(['resume', String((run.json as { session?: string }).session), '-i', `token=${TOKEN}`, '--max-turns', '5', '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: `${TEST_API_KEY}-rotated` },
    });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).outputs.summary).toBe('checked');
  });
});
