import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { channelOf, runWorkflow } from '../helpers/run-workflow.js';

const TEAM = (forEach: string) => `
name: per-file
setup:
  - id: files
    run: printf 'a.ts\\nb.ts\\n\\n  c.ts  \\n'
defaults: { max_tokens: 2048 }
agents:
  lead:
    role: manager
  reviewer:
    role: worker
    for_each: ${forEach}
    description: reviews $<< item >>
    system: Review $<< item >> (number $<< item_index >>), nothing else.
kickoff: Review the changed files.
`;

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('for_each', () => {
  it("over a setup step's lines: one instance per line, @NAME reaches them all, the manager is woken once with every answer", async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@reviewer review your file.' }, { text: 'Done: three files reviewed.' }],
      'reviewer-1': [{ text: 'a.ts fine' }],
      'reviewer-2': [{ text: 'b.ts fine' }],
      'reviewer-3': [{ text: 'c.ts has a bug' }],
    });
    const run = await runWorkflow(server, TEAM('$<< lines(setup.files) >>'));
    expect(run.code, run.stderr).toBe(0);
    expect(channelOf(run)[1]).toEqual(['lead', ['reviewer-1', 'reviewer-2', 'reviewer-3'], '@reviewer review your file.']);
    expect(server.of('lead')).toHaveLength(2);
    const woken = JSON.stringify(server.of('lead')[1]!.body.messages.at(-1));
    for (const answer of ['a.ts fine', 'b.ts fine', 'c.ts has a bug']) expect(woken).toContain(answer);
    for (const [i, file] of ['a.ts', 'b.ts', 'c.ts'].entries()) {
      expect(JSON.stringify(server.of(`reviewer-${i + 1}`)[0]!.body.system)).toContain(`Review ${file} (number ${i}), nothing else.`);
    }
    // The lead's roster names each instance with its own description.
    expect(JSON.stringify(server.of('lead')[0]!.body.system)).toContain('reviews c.ts');
  });

  it('over a list written in the file, and over from_json of an input', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@reviewer go' }, { text: 'done' }],
      'reviewer-1': [{ text: 'x ok' }],
      'reviewer-2': [{ text: 'y ok' }],
    });
    const listed = await runWorkflow(server, TEAM('[x.ts, y.ts]'));
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.stringify(server.of('reviewer-2')[0]!.body.system)).toContain('Review y.ts (number 1)');
    await server.close();
    server = await startFakeAnthropic({ lead: [{ text: '@reviewer go' }, { text: 'done' }], 'reviewer-1': [{ text: 'ok' }] });
    const workflow = TEAM('$<< from_json(inputs.targets) >>').replace('setup:', 'inputs:\n  targets: { type: string, required: true }\nsetup:');
    const fromJson = await runWorkflow(server, workflow, ['-i', 'targets=[{"path":"z.ts"}]']);
    expect(fromJson.code, fromJson.stderr).toBe(0);
    expect(JSON.stringify(server.of('reviewer-1')[0]!.body.system)).toContain(JSON.stringify('Review {"path":"z.ts"} (number 0)').slice(1, -1));
  });

  it('a value that is no list ends the run with an error naming it; more instances than max_agents too', async () => {
    server = await startFakeAnthropic({});
    const text = await runWorkflow(server, TEAM('$<< setup.files >>'));
    expect(text.code).toBe(1);
    expect(text.json.reason).toContain('agents.reviewer.for_each must give a list; $<< setup.files >> gave the text "a.ts');
    const many = await runWorkflow(server, TEAM('$<< lines(setup.files) >>').replace('defaults:', 'limits: { max_agents: 3 }\ndefaults:'));
    expect(many.code).toBe(1);
    expect(many.json.reason).toContain('for_each gives the team 4 agents; limits.max_agents is 3');
    expect(server.requests).toHaveLength(0);
  });

  it('validate: item outside for_each, for_each on a manager, and a string that is not one expression', async () => {
    server = await startFakeAnthropic({});
    const { dir } = await runWorkflow(server, 'name: x\nagents: { a: { role: manager } }\nkickoff: k\n');
    const bad = TEAM('not an expression')
      .replace('kickoff: Review the changed files.', 'kickoff: Review $<< item >>.')
      .replace('  lead:\n    role: manager\n', '  lead:\n    role: manager\n    for_each: [a]\n');
    writeFileSync(join(dir, 'bad.yml'), bad);
    const result = await conclave(['validate', 'bad.yml'], { cwd: dir });
    const said = result.stdout + result.stderr;
    expect(result.code).toBe(2);
    expect(said).toContain('item is only known in the system and description of an agent with for_each');
    expect(said).toContain('agents.lead.for_each: only a worker can have instances per item');
    expect(said).toMatch(/bad\.yml:\d+:\d+: .*agents\.reviewer\.for_each must be a list, or one expression giving a list/);
  });
});
