import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { channelOf, runWorkflow } from '../helpers/run-workflow.js';

const FAN_OUT = `
name: fan-out
limits: { concurrency: 4 }
agents:
  lead: { role: manager, system: Split the work. }
  a: { role: worker }
  b: { role: worker }
  c: { role: worker }
kickoff: Review the three modules.
outputs:
  summary: $<< result.summary >>
  answers: $<< agents.a.last_message >>|$<< agents.b.last_message >>|$<< agents.c.last_message >>
  lead_turns: $<< agents.lead.turns >>
`;

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('conclave run: fan-out and fan-in', () => {
  it('runs three workers at once, wakes the lead once with all answers, and evaluates outputs', async () => {
    server = await startFakeAnthropic(
      {
        lead: [
          { text: '@a take module one, @b module two, @c module three.' },
          (request) => ({
            tools: [
              {
                name: 'complete',
                input: {
                  status: 'success',
                  summary: `merged: ${lastUserText(request)
                    .match(/finding \w/g)
                    ?.join(', ')}`,
                },
              },
            ],
          }),
        ],
        a: [{ text: 'finding a', delayMs: 300 }],
        b: [{ text: 'finding b', delayMs: 600 }],
        c: [{ text: 'finding c', delayMs: 900 }],
      },
      { latencyMs: 50 },
    );
    const run = await runWorkflow(server, FAN_OUT);
    expect(run.code).toBe(0);
    expect(run.json).toMatchObject({
      status: 'success',
      outputs: { summary: 'merged: finding a, finding b, finding c', answers: 'finding a|finding b|finding c', lead_turns: '2' },
    });
    const workers = ['a', 'b', 'c'].map((w) => server.of(w)[0]!);
    const lastStart = Math.max(...workers.map((r) => r.receivedAt));
    const firstAnswer = Math.min(...workers.map((r) => r.answeredAt!));
    expect(lastStart).toBeLessThan(firstAnswer);
    expect(server.of('lead')).toHaveLength(2);
    expect(lastUserText(server.of('lead')[1]!)).toContain('[from @a]\nfinding a\n\n[from @b]\nfinding b\n\n[from @c]\nfinding c');
  });

  it('with wake: each, wakes the manager for every answer', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@a @b go' }, { text: '', delayMs: 200 }, { text: '' }],
      a: [{ text: 'one' }],
      b: [{ text: 'two', delayMs: 100 }],
    });
    const run = await runWorkflow(server, FAN_OUT.replace('lead: { role: manager, system: Split the work. }', 'lead: { role: manager, wake: each }'));
    expect(run.code).toBe(0);
    expect(server.of('lead')).toHaveLength(3);
    expect(channelOf(run).map(([sender]) => sender)).toEqual(['system', 'lead', 'a', 'b']);
  });
});

describe('conclave run: nested fan-in', () => {
  it("waits for a sub-manager's delegated work: the lead makes exactly 2 calls", async () => {
    server = await startFakeAnthropic({
      lead: [
        { text: '@frontend @backend-lead build the feature' },
        (request) => ({ tools: [{ name: 'complete', input: { status: 'success', summary: lastUserText(request).replace(/\s+/g, ' ') } }] }),
      ],
      frontend: [{ text: 'frontend done' }],
      'backend-lead': [{ text: '@db @api do your parts' }, { text: 'backend done: db and api' }],
      db: [{ text: 'db done', delayMs: 300 }],
      api: [{ text: 'api done', delayMs: 400 }],
    });
    const run = await runWorkflow(
      server,
      `
name: nested
agents:
  lead: { role: manager }
  frontend: { role: worker, reports_to: lead }
  backend-lead: { role: manager, reports_to: lead }
  db: { role: worker, reports_to: backend-lead }
  api: { role: worker, reports_to: backend-lead }
kickoff: Build it.
outputs:
  summary: $<< result.summary >>
`,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(server.of('lead')).toHaveLength(2);
    expect(server.of('backend-lead')).toHaveLength(2);
    expect(run.json.outputs.summary).toContain('frontend done');
    expect(run.json.outputs.summary).toContain('backend done: db and api');
  });
});

describe('conclave run: quiet logs', () => {
  it('16 calls at once with a deprecated model: no Node warning, and the deprecation said once', async () => {
    const workers = Array.from({ length: 16 }, (_, i) => `w${i}`);
    server = await startFakeAnthropic({
      lead: [{ text: workers.map((w) => `@${w}`).join(' ') }, { tools: [{ name: 'complete', input: { status: 'success', summary: 'ok' } }] }],
      ...Object.fromEntries(workers.map((w) => [w, [{ text: 'done', delayMs: 200 }]])),
    });
    const run = await runWorkflow(
      server,
      [
        'name: many',
        'defaults: { model: claude-sonnet-4-5, max_tokens: 1000 }',
        'limits: { concurrency: 16 }',
        'agents:',
        '  lead: { role: manager }',
        ...workers.map((w) => `  ${w}: { role: worker }`),
        'kickoff: Go.',
      ].join('\n'),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(server.requests.filter((r) => r.answeredAt! - r.receivedAt >= 150)).toHaveLength(16);
    expect(run.stderr).not.toMatch(/Warning|MaxListeners|\(node:\d+\)/);
    expect(run.stderr.match(/deprecated/g)).toHaveLength(1);
  });
});
