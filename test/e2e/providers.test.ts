import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FAKE_AWS, FAKE_ENTRA_TOKEN, FAKE_FEDERATION, FAKE_FOUNDRY_KEY } from '../fake-anthropic/clouds.js';
import { lastToolResult, startFakeAnthropic, type FakeAnthropic, type Script } from '../fake-anthropic/server.js';
import { cloudEnv, emptyHome, fakeAzureCli } from '../helpers/clouds.js';
import { conclave } from '../helpers/cli.js';
import { sandboxForTests } from '../helpers/sandbox.js';
import { pingPongScript, pingPongWorkflow } from '../fixtures/ping-pong.js';
import { runWorkflow, type WorkflowRun } from '../helpers/run-workflow.js';

const MODEL = 'claude-opus-4-5-20251101';

/** A lead and a helper who lists files and runs a command: a whole team's round on one provider. */
const TEAM = (top = '', lead = '', helper = '') => `
name: clouds
${top}
sandbox: off
defaults: { model: ${MODEL}, max_tokens: 4096 }
agents:
  lead: { role: manager${lead} }
  helper: { role: worker, tools: [list_files, read_file, grep, run_command]${helper} }
kickoff: Look at the files.
`;

const TEAM_SCRIPT = (): Script => ({
  lead: [{ text: '@helper what is here?' }, { tools: [{ name: 'complete', input: { status: 'success', summary: 'looked' } }] }],
  helper: [
    { thinking: 'I should list the files first.', redactedThinking: true, tools: [{ name: 'list_files', input: {} }] },
    { tools: [{ name: 'run_command', input: { command: 'env' } }] },
    (r) => ({ text: `@lead the files and ${lastToolResult(r)}` }),
  ],
});

let server: FakeAnthropic;
afterEach(() => server?.close());

const calls = (run: WorkflowRun) => run.events.filter((e) => e.type === 'model_call');
/** Every credential value a cloud run was given: none may be written anywhere or reach a tool. */
const CREDENTIALS = [FAKE_AWS.secretAccessKey, FAKE_AWS.sessionToken, FAKE_AWS.accessKeyId, FAKE_FOUNDRY_KEY, FAKE_ENTRA_TOKEN];

function expectNoCredential(run: WorkflowRun, what: string[] = CREDENTIALS): void {
  const files = [join(run.dir, '.conclave', 'sessions'), run.dir].flatMap((d) => (existsSync(d) ? readdirSync(d).map((f) => join(d, f)) : []));
  const written = files.filter((f) => f.endsWith('.jsonl') || f.endsWith('.md')).map((f) => readFileSync(f, 'utf8'));
  for (const secret of what) {
    for (const text of [run.stdout, run.stderr, ...written]) expect(text).not.toContain(secret);
  }
}

describe('every cloud that serves Claude', () => {
  for (const [provider, wire, modelId] of [
    ['bedrock', 'bedrock', `global.anthropic.${MODEL}-v1:0`],
    ['vertex', 'vertex', 'claude-opus-4-5@20251101'],
    ['foundry', 'foundry', MODEL],
  ] as const) {
    it(`runs a whole team on ${provider}: its wire, its authentication on every request, thinking round-tripped, no credential anywhere`, async () => {
      server = await startFakeAnthropic(TEAM_SCRIPT());
      const run = await runWorkflow(server, TEAM(`provider: ${provider}`), [], { env: cloudEnv(server) });
      expect(run.stderr).not.toMatch(/retrying|failed|warning/);
      expect(run.code).toBe(0);
      expect(server.authFailures).toEqual([]);
      expect(server.requests.map((r) => r.wire)).toEqual(server.requests.map(() => wire));
      expect(new Set(server.requests.map((r) => r.modelId))).toEqual(new Set([modelId]));
      // The helper's second request carries the thinking blocks back exactly (the fake refuses otherwise).
      const second = server.of('helper')[1]!.body.messages.at(-2)!.content as { type: string }[];
      expect(second.map((b) => b.type)).toEqual(['thinking', 'redacted_thinking', 'tool_use']);
      expect(calls(run).map((e) => e.provider)).toEqual(calls(run).map(() => provider));
      // The tool saw none of the cloud's credentials: run_command's `env` printed its whole environment.
      const env = server.of('helper')[2]!.body.messages.at(-1)!.content as { content: string }[];
      expect(env[0]!.content).toContain('PATH=');
      expect(env[0]!.content).not.toMatch(/AWS_|GOOGLE_|GCE_METADATA|AZURE_|ANTHROPIC_|ACTIONS_ID_TOKEN/);
      expectNoCredential(run);
    });
  }

  it('withholds from tools the credentials of a cloud chosen by --provider, even those tools_env names; validate refuses naming them', async () => {
    server = await startFakeAnthropic(TEAM_SCRIPT());
    const named = TEAM('tools_env: [AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION]');
    const run = await runWorkflow(server, named, ['--provider', 'bedrock'], { env: cloudEnv(server) });
    expect(run.code).toBe(0);
    const env = server.of('helper')[2]!.body.messages.at(-1)!.content as { content: string }[];
    expect(env[0]!.content).toContain('PATH=');
    expect(env[0]!.content).not.toContain('AWS_');
    const refused = await runWorkflow(server, named.replace('name: clouds', 'name: clouds\nprovider: bedrock'), [], { env: cloudEnv(server) });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('tools_env may not name AWS_SECRET_ACCESS_KEY, a credential of provider bedrock, which this workflow uses');
    const identity = await runWorkflow(server, TEAM('tools_env: [ACTIONS_ID_TOKEN_REQUEST_TOKEN]'), [], { env: cloudEnv(server) });
    expect(identity.stderr).toContain("tools_env may not name ACTIONS_ID_TOKEN_REQUEST_TOKEN, the job's OIDC identity");
  });

  describe.skipIf(!sandboxForTests().bwrap)('credential files', () => {
    it("hides the cloud's credential files from every tool: read_file, grep, and run_command in its sandbox", async () => {
      const jwt = 'eyJ.web-identity-token-of-the-job.sig';
      const home = emptyHome();
      mkdirSync(join(home, '.aws'));
      writeFileSync(join(home, '.aws', 'credentials'), '[default]\naws_secret_access_key=home-secret-never-shown\n');
      server = await startFakeAnthropic({
        lead: [{ text: '@helper look' }, { tools: [{ name: 'complete', input: { status: 'success', summary: 'done' } }] }],
        helper: [
          {
            tools: [
              { name: 'read_file', input: { path: 'token.jwt' } },
              { name: 'grep', input: { pattern: 'eyJ|secret' } },
              { name: 'run_command', input: { command: 'cat token.jwt ~/.aws/credentials; echo end' } },
            ],
          },
          { text: '@lead nothing' },
        ],
      });
      const run = await runWorkflow(server, TEAM('provider: bedrock').replace('sandbox: off', 'sandbox: required'), [], {
        env: { ...cloudEnv(server, home), AWS_WEB_IDENTITY_TOKEN_FILE: 'token.jwt' },
        files: { 'token.jwt': jwt, 'notes.txt': 'no secret here' },
      });
      expect(run.code).toBe(0);
      const results = (server.of('helper')[1]!.body.messages.at(-1)!.content as { content: string; is_error?: boolean }[]).map((r) => r.content);
      expect(results[0]).toBe("token.jwt holds a credential of this run's model provider; the workspace tools do not read it");
      expect(results[1]).toBe('notes.txt:1: no secret here');
      expect(results[2]).not.toContain(jwt);
      expect(results[2]).not.toContain('home-secret-never-shown');
      expect(results[2]).toContain('end');
    });
  });

  it("warns of a model named in a cloud's form for another provider, and sends such an id to its cloud unchanged", async () => {
    server = await startFakeAnthropic({ lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: 'ok' } }] }] });
    const profile = 'us.anthropic.claude-opus-4-5-20251101-v1:0';
    const workflow = TEAM().replace('  lead: { role: manager }', `  lead: { role: manager, model: ${profile} }`);
    const dir = mkdtempSync(join(tmpdir(), 'conclave-forms-'));
    writeFileSync(join(dir, 'workflow.yml'), workflow);
    const checked = await conclave(['validate', 'workflow.yml'], { cwd: dir });
    expect(checked.code).toBe(0);
    expect(checked.stderr + checked.stdout).toMatch(
      new RegExp(
        `workflow\\.yml:7:33: warning: agents\\.lead\\.model "${profile.replace(/\./g, '\\.')}" is an Amazon Bedrock id, but the provider there is anthropic: name the model as Anthropic does, or set provider: bedrock`,
      ),
    );
    writeFileSync(join(dir, 'bedrock.yml'), workflow.replace('name: clouds', 'name: clouds\nprovider: bedrock'));
    expect((await conclave(['validate', 'bedrock.yml'], { cwd: dir })).stderr).not.toContain('warning');
    const run = await runWorkflow(server, workflow, ['--provider', 'bedrock'], { env: cloudEnv(server), dir });
    expect(run.code).toBe(0);
    expect(server.requests.map((r) => r.modelId)).toEqual([profile]);
  });

  it('sends each agent to its own provider in one team, the default to Anthropic', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@helper @third go' }, { tools: [{ name: 'complete', input: { status: 'success', summary: 'done' } }] }],
      helper: [{ text: '@lead from vertex' }],
      third: [{ text: '@lead from foundry' }],
    });
    const workflow = TEAM('provider: bedrock', '', ', provider: vertex').replace(
      'kickoff:',
      '  third: { role: worker, provider: foundry }\n  fourth: { role: worker, provider: anthropic }\nkickoff:',
    );
    const run = await runWorkflow(server, workflow, [], { env: { ...cloudEnv(server), ANTHROPIC_API_KEY: 'sk-ant-test-mixed' } });
    expect(run.code).toBe(0);
    expect(server.authFailures).toEqual([]);
    expect(Object.fromEntries(server.requests.map((r) => [r.agent, r.wire]))).toEqual({ lead: 'bedrock', helper: 'vertex', third: 'foundry' });
    expect(
      calls(run)
        .map((e) => `${e.agent} ${e.provider ?? 'anthropic'}`)
        .sort(),
    ).toEqual(['helper vertex', 'lead bedrock', 'lead bedrock', 'third foundry']);
    const shown = await conclave(['show', run.json.session as string], { cwd: run.dir });
    expect(shown.stdout).toMatch(
      /\n {2}Providers: Amazon Bedrock 2 calls \$[\d.]+ · (Google Vertex AI 1 call \$[\d.]+ · Microsoft Foundry 1 call|Microsoft Foundry 1 call \$[\d.]+ · Google Vertex AI 1 call) \$[\d.]+\n/,
    );
    const markdown = await conclave(['show', run.json.session as string, '--format', 'markdown'], { cwd: run.dir });
    expect(markdown.stdout).toContain('Providers: Amazon Bedrock 2 calls');
  });

  it('prices a call on a regional Vertex endpoint 10% above the global one, and --provider sends every agent there', async () => {
    const usage = { input_tokens: 1_000_000, output_tokens: 100_000 };
    const costs: Record<string, number> = {};
    for (const region of ['global', 'us-east5']) {
      server = await startFakeAnthropic({ lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: 'ok' } }], usage }] });
      const run = await runWorkflow(server, TEAM(), ['--provider', 'vertex'], { env: { ...cloudEnv(server), CLOUD_ML_REGION: region } });
      expect(run.code).toBe(0);
      expect(server.requests.map((r) => r.wire)).toEqual(['vertex']);
      costs[region] = calls(run)[0]!.cost_usd as number;
      await server.close();
    }
    expect(costs.global).toBeCloseTo(5 + 2.5, 6); // Opus 4.5: $5 in, $25 out per million
    expect(costs['us-east5']).toBeCloseTo((5 + 2.5) * 1.1, 6);
  });

  it('resumes a cloud run cut short by a limit without repeating a call, and replays it with no credentials at all', async () => {
    server = await startFakeAnthropic(TEAM_SCRIPT());
    const env = cloudEnv(server);
    const first = await runWorkflow(server, TEAM('provider: bedrock\nlimits: { max_turns: 1 }'), [], { env });
    expect(first.code).toBe(3);
    const session = join(first.dir, first.json.session as string);
    const before = server.requests.length;
    const resumed = await conclave(['resume', session, '--max-turns', '10', '--json'], {
      cwd: first.dir,
      env: { ...env, ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' },
    });
    expect(resumed.stderr).not.toMatch(/retrying|failed|warning/);
    expect(resumed.code).toBe(0);
    expect(server.authFailures).toEqual([]);
    // Every recorded call answered from the session: the server saw only the new ones.
    const seen = server.requests.slice(before).map((r) => `${r.agent}:${r.call}`);
    expect(seen).toEqual(['helper:1', 'helper:2', 'helper:3', 'lead:2']);
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--session', 'replayed.jsonl', '--json'], {
      cwd: first.dir,
      env: { HOME: emptyHome(), ANTHROPIC_API_KEY: '', AWS_REGION: '' },
    });
    expect(replay.code).toBe(0);
    expect(server.requests.length).toBe(before + 4);
  });

  it('keeps the response cache apart per provider', async () => {
    server = await startFakeAnthropic({ lead: () => ({ tools: [{ name: 'complete', input: { status: 'success', summary: 'ok' } }] }) });
    const env = { ...cloudEnv(server), ANTHROPIC_API_KEY: 'sk-ant-test-cache' };
    const anthropic = await runWorkflow(server, TEAM(), ['--response-cache'], { env });
    const foundry = await runWorkflow(server, TEAM(), ['--response-cache', '--provider', 'foundry'], { env, dir: anthropic.dir });
    const again = await runWorkflow(server, TEAM(), ['--response-cache', '--provider', 'foundry', '--session', 'third.jsonl'], { env, dir: anthropic.dir });
    expect([anthropic.code, foundry.code, again.code]).toEqual([0, 0, 0]);
    expect(server.requests.map((r) => r.wire)).toEqual(['anthropic', 'foundry']);
    expect(calls(again)[0]!.cached).toBe(true);
  });

  it('gets Foundry an Entra ID token from the Azure CLI that azure/login signed in', async () => {
    server = await startFakeAnthropic({ lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: 'ok' } }] }] });
    const env = { ...cloudEnv(server), ANTHROPIC_FOUNDRY_API_KEY: '', PATH: `${fakeAzureCli()}:${process.env.PATH}` };
    const run = await runWorkflow(server, TEAM('provider: foundry'), [], { env });
    expect(run.code).toBe(0);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${FAKE_ENTRA_TOKEN}`);
    expectNoCredential(run);
  });

  it('works on Bedrock as on the API: a 503 retried, an exception mid-stream retried, a refusal said once in its own words', async () => {
    server = await startFakeAnthropic({
      lead: [
        { error: { status: 503, type: 'overloaded_error', message: 'Bedrock is unavailable' } },
        { midStreamError: { type: 'modelStreamErrorException', message: 'the model stream broke' } },
        { text: '@helper go' },
        { error: { status: 400, type: 'invalid_request_error', message: 'The provided model identifier is invalid.' } },
      ],
      helper: [{ text: '@lead done' }],
    });
    const run = await runWorkflow(server, TEAM('provider: bedrock'), [], { env: cloudEnv(server) });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('retrying in');
    expect(run.stderr).toContain('modelStreamErrorException the model stream broke');
    expect(run.json.reason).toContain('400 The provided model identifier is invalid.');
    expect(run.json.reason).not.toContain('400 400');
  });

  it('compacts on Bedrock when it says the prompt is too long, and replays it', async () => {
    server = await startFakeAnthropic(pingPongScript(2000), { maxPromptTokens: 30_000 });
    const workflow = pingPongWorkflow({ maxTurns: 60 }).replace('name: ping-pong', 'name: ping-pong\nprovider: bedrock');
    const run = await runWorkflow(server, workflow, [], { env: cloudEnv(server) });
    expect(run.code, run.json.reason).toBe(3);
    const refused = run.events.filter((e) => e.type === 'context_exceeded');
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused[0]!.error).toMatch(/^400 prompt is too long: \d+ tokens > 30000 maximum$/);
    expect(run.events.filter((e) => e.type === 'context_compacted' && e.reason === 'too_long')).toHaveLength(refused.length);
    // Bedrock has no compaction request: conclave asks the agent for its summary in a call of its own.
    expect(run.events.filter((e) => e.type === 'context_compacted' && e.summary !== null).every((e) => e.by === 'conclave')).toBe(true);
    expect(server.requests.some((r) => r.body.compaction !== undefined)).toBe(false);
    const replay = await conclave(['run', 'workflow.yml', '--replay', run.json.session as string, '--json'], {
      cwd: run.dir,
      env: { HOME: emptyHome(), ANTHROPIC_API_KEY: '' },
    });
    expect(replay.code).toBe(3);
  }, 60_000);

  it("reaches Anthropic's API through workload identity federation: the job's identity token exchanged, no API key", async () => {
    server = await startFakeAnthropic({ lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: 'ok' } }] }] });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-oidc-'));
    writeFileSync(join(dir, 'token'), FAKE_FEDERATION.identityToken);
    const env = {
      ...cloudEnv(server),
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_IDENTITY_TOKEN_FILE: join(dir, 'token'),
      ANTHROPIC_FEDERATION_RULE_ID: FAKE_FEDERATION.ruleId,
      ANTHROPIC_ORGANIZATION_ID: FAKE_FEDERATION.organizationId,
    };
    const run = await runWorkflow(server, TEAM(), [], { env });
    expect(run.code).toBe(0);
    expect(server.authFailures).toEqual([]);
    expect(server.requests[0]!.headers.authorization).toMatch(/^Bearer sk-ant-oat-federated-/);
    expect(server.requests[0]!.headers['x-api-key']).toBeUndefined();
    expectNoCredential(run, [FAKE_FEDERATION.identityToken]);
  });

  it('refuses a request whose SigV4 signature was made with another secret (exit 4, said once, no retry storm)', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'never' }] });
    const run = await runWorkflow(server, TEAM('provider: bedrock'), [], {
      env: { ...cloudEnv(server), AWS_SECRET_ACCESS_KEY: 'another/secret/of/forty/characters/xxxx' },
    });
    expect(run.code).toBe(4);
    expect(server.authFailures[0]).toBe('bedrock: The request signature we calculated does not match the signature you provided');
    expect(run.json.reason).toContain('403');
  });

  describe('missing credentials: exit 2 at once, saying what to set, nothing written', () => {
    const cases: [string, string, NodeJS.ProcessEnv, RegExp][] = [
      ['bedrock', 'no region', { AWS_REGION: '', AWS_DEFAULT_REGION: '' }, /provider bedrock needs AWS_REGION/],
      [
        'bedrock',
        'no AWS credentials',
        { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SESSION_TOKEN: '' },
        /provider bedrock found no AWS credentials \(.+\)\. In GitHub Actions, run aws-actions\/configure-aws-credentials/,
      ],
      ['vertex', 'no region', { CLOUD_ML_REGION: '' }, /provider vertex needs CLOUD_ML_REGION/],
      [
        'vertex',
        'no Google credentials',
        { GCE_METADATA_HOST: '127.0.0.1:9', GCE_METADATA_IP: '127.0.0.1:9', METADATA_SERVER_DETECTION: 'none' },
        /provider vertex found no Google application default credentials \(.+\)\. In GitHub Actions, run google-github-actions\/auth/,
      ],
      ['foundry', 'no resource', { ANTHROPIC_FOUNDRY_BASE_URL: '' }, /provider foundry needs ANTHROPIC_FOUNDRY_RESOURCE/],
      [
        'foundry',
        'no key and no Azure CLI',
        { ANTHROPIC_FOUNDRY_API_KEY: '', PATH: '/nonexistent' },
        /provider foundry found no credentials \(the Azure CLI \(az\) is not installed\): set ANTHROPIC_FOUNDRY_API_KEY/,
      ],
      ['anthropic', 'no API key', {}, /ANTHROPIC_API_KEY is not set/],
    ];
    for (const [provider, what, missing, message] of cases) {
      it(`${provider}: ${what}`, async () => {
        server = await startFakeAnthropic({});
        const run = await runWorkflow(server, TEAM(`provider: ${provider}`), [], { env: { ...cloudEnv(server), ...missing } });
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(message);
        expect(run.stderr).not.toMatch(/\n\s+at /);
        expect(run.events).toEqual([]);
        expect(server.requests).toEqual([]);
      });
    }

    it('names the unknown provider of --provider and of the workflow', async () => {
      server = await startFakeAnthropic({});
      const flag = await runWorkflow(server, TEAM(), ['--provider', 'azure'], { env: cloudEnv(server) });
      expect(flag.code).toBe(2);
      expect(flag.stderr).toContain('--provider must be one of anthropic, bedrock, vertex, foundry, not "azure"');
      const file = await runWorkflow(server, TEAM('', ', provider: openai'), [], { env: cloudEnv(server) });
      expect(file.code).toBe(2);
      expect(file.stderr).toContain('agents.lead.provider must be one of "anthropic", "bedrock", "vertex", "foundry"; found the string "openai"');
    });
  });
});
