import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { RELAY, relayScript } from '../fixtures/relay.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('an error names what the user wrote', () => {
  it.each([
    ['CONCLAVE_RATE_LIMIT', 'bogus', /^conclave: CONCLAVE_RATE_LIMIT takes rpm=N,itpm=N,otpm=N/],
    ['CONCLAVE_COORDINATE', 'ftp://store', /^conclave: CONCLAVE_COORDINATE takes a redis:\/\//],
    ['CONCLAVE_COORDINATE', 'redis://127.0.0.1:1', /^conclave: CONCLAVE_COORDINATE redis:\/\/127\.0\.0\.1:1 does not answer/],
    ['CONCLAVE_SPEND_POOLS', 'org=5/day', /^conclave: CONCLAVE_SPEND_POOLS needs --coordinate URL/],
  ])('%s=%s: the variable, not a flag the user never gave (exit 2)', async (name, value, said) => {
    server = await startFakeAnthropic(relayScript());
    const run = await runWorkflow(server, RELAY, [], { env: { [name]: value } });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(said);
    expect(run.stderr).not.toMatch(/--rate-limit|--coordinate (takes|redis)|--spend-pool/);
    expect(server.requests).toHaveLength(0);
  });

  it('the flag, when both are given: the flag is what the run used', async () => {
    server = await startFakeAnthropic(relayScript());
    const run = await runWorkflow(server, RELAY, ['--rate-limit', 'nonsense'], { env: { CONCLAVE_RATE_LIMIT: 'rpm=5' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^conclave: --rate-limit takes/);
  });
});

describe('a limit no flag raises', () => {
  it('max_tokens_total: the hint names --max-tokens-total, and a resume with it raised goes on to the end', async () => {
    server = await startFakeAnthropic(relayScript());
    const workflow = RELAY.replace('agents:', 'limits: { max_tokens_total: 1200 }\nagents:');
    const stopped = await runWorkflow(server, workflow);
    expect(stopped.code, stopped.stderr).toBe(3);
    expect(stopped.json.reason).toMatch(/^limit reached: max_tokens_total/);
    const session = stopped.json.session as string;
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const again = await conclave(['resume', session], { cwd: stopped.dir, env });
    expect(again.code).toBe(3);
    expect(again.stdout).toContain(`to continue: conclave resume ${session} --max-tokens-total <a larger value>`);
    const refused = await conclave(['resume', session, '--max-tokens-total', 'lots'], { cwd: stopped.dir, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe('conclave: --max-tokens-total must be a whole number of tokens, at least 1; got "lots"\n');
    const raised = await conclave(['resume', session, '--max-tokens-total', '200000', '--json'], { cwd: stopped.dir, env });
    expect(raised.code, raised.stdout.slice(0, 400)).toBe(0);
    expect(JSON.parse(raised.stdout).outputs).toEqual({ answer: '4' });
  });
});
