import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

/**
 * The organisation's spend limit at Anthropic (issue 55): a 429 that says the monthly spend limit
 * is reached cannot succeed on a retry, so it is not retried; the run stops at a limit (exit 3),
 * saying what to do, and a resume once the limit is raised goes on with the earlier answers kept.
 */
const WORKFLOW = `
name: spend
agents:
  lead: { role: manager }
  helper: { role: worker }
kickoff: Start.
`;
const SPEND_LIMIT = {
  status: 429,
  type: 'rate_limit_error',
  message: "This request would exceed your account's monthly spend limit. Please increase your spend limit at console.anthropic.com.",
  retryAfterSeconds: 1,
};

let server: FakeAnthropic | undefined;

/** Once the limit is lifted, a resume finishes the run: the lead's recorded answer is not asked again, the helper's call is made once more. */
async function resumesToTheEnd(run: { json: { session?: unknown }; dir: string }): Promise<void> {
  const resumed = await conclave(['resume', run.json.session as string, '--json'], {
    cwd: run.dir,
    env: { ANTHROPIC_BASE_URL: server!.url, ANTHROPIC_API_KEY: TEST_API_KEY },
  });
  expect(resumed.code, resumed.stderr).toBe(0);
  expect(server!.of('lead')).toHaveLength(2);
  expect(server!.of('helper')).toHaveLength(2);
}
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("the organisation's spend limit", () => {
  it('is one request, exit 3 with the sentence, and a resume after it finishes the run with the earlier answers kept', async () => {
    let limited = true;
    server = await startFakeAnthropic({
      lead: [{ text: '@helper please check' }, { text: '' }],
      helper: (request) => (limited && request.call === 1 ? { error: SPEND_LIMIT } : { text: '@lead checked' }),
    });
    const run = await runWorkflow(server, WORKFLOW);
    expect(run.code, run.stderr).toBe(3);
    expect(run.json.status).toBe('limit');
    expect(run.json.reason).toMatch(
      /^the organisation's spend limit at Anthropic was reached: raise it in the console, then conclave resume the session \(429 /,
    );
    expect(server.of('helper')).toHaveLength(1);
    expect(server.of('lead')).toHaveLength(1);

    limited = false;
    await resumesToTheEnd(run);
  });

  it('the contract spend cap (contract_spend_limit_reached) parks the run: exit 75, one request, and a resume goes on', async () => {
    let capped = true;
    server = await startFakeAnthropic({
      lead: [{ text: '@helper please check' }, { text: '' }],
      helper: (request) =>
        capped && request.call === 1
          ? { error: { status: 429, type: 'contract_spend_limit_reached', message: "Your organization's contract spend limit has been reached." } }
          : { text: '@lead checked' },
    });
    const run = await runWorkflow(server, WORKFLOW);
    expect(run.code, run.stderr).toBe(75);
    expect(run.json.status).toBe('waiting');
    expect(run.json.reason).toMatch(
      /^parked: the contract's spend limit at Anthropic was reached: conclave resume the session once it is raised or renews \(429 contract_spend_limit_reached /,
    );
    expect(server.of('helper')).toHaveLength(1);
    capped = false;
    await resumesToTheEnd(run);
  });
});
