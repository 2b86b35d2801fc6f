import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic, type RecordedRequest } from '../fake-anthropic/server.js';
import { fresh } from '../helpers/attack.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { sandboxForTests } from '../helpers/sandbox.js';

/**
 * The fifth round of attacks (issue 50): the fourth stage's parts (documents, batches, parking)
 * against a hostile model, a hostile API and a cancelled job.
 */

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const env = () => ({ ANTHROPIC_BASE_URL: server!.url, ANTHROPIC_API_KEY: TEST_API_KEY });

/** The tool results of every request of an agent, in order. */
function toolResults(requests: RecordedRequest[]): { content: string; is_error?: boolean }[] {
  return requests.flatMap((r) => {
    const last = r.body.messages.at(-1)?.content;
    return Array.isArray(last) ? (last.filter((b) => b.type === 'tool_result') as { content: string; is_error?: boolean }[]) : [];
  });
}

/** Swaps two names of the working directory with renameat2(RENAME_EXCHANGE) until `done` exists; prints how often. */
const SWAPPER = `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
pairs = [(b'out', b'lnk'), (b'out2', b'lnk2')]
swaps, end = 0, time.time() + 90
while not os.path.exists('done') and time.time() < end:
    for a, b in pairs:
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
            swaps += 1
print('swaps', swaps)
`;

describe('a directory swapped for a link under write_file', () => {
  it.skipIf(!sandboxForTests().bwrap)(
    '1,000 writes raced against a sandboxed renameat2 loop: nothing written under .git, nothing outside touched or deleted',
    async () => {
      const repo = fresh('swap-race');
      const outside = fresh('swap-outside');
      mkdirSync(join(repo, '.git'));
      const gitConfig = '[core]\n\trepositoryformatversion = 0\n';
      writeFileSync(join(repo, '.git', 'config'), gitConfig);
      mkdirSync(join(repo, 'out'));
      mkdirSync(join(repo, 'out2'));
      symlinkSync('.git', join(repo, 'lnk'));
      symlinkSync(outside, join(repo, 'lnk2'));
      const WRITES = 1000;
      for (let i = 0; i < WRITES / 2; i++) writeFileSync(join(outside, `v${i}.txt`), `keep ${i}\n`);
      writeFileSync(join(repo, 'swap.py'), SWAPPER);
      writeFileSync(
        join(repo, 'workflow.yml'),
        `name: swap-race
sandbox: required
agents:
  lead: { role: manager, tools: [run_command] }
  writer: { role: worker, tools: [write_file] }
kickoff: "@lead @writer go"
`,
      );
      // Half the writes aim at .git/config through out/, half at files outside through out2/;
      // four answers of 250 parallel calls, then \`done\` stops the swapper.
      const calls = Array.from({ length: WRITES }, (_, i) =>
        i % 2 === 0
          ? { name: 'write_file', input: { path: 'out/config', content: '[core]\n\tfsmonitor = "touch /tmp/pwned"\n' } }
          : { name: 'write_file', input: { path: `out2/v${(i - 1) / 2}.txt`, content: 'overwritten\n' } },
      );
      server = await startFakeAnthropic({
        lead: (r) =>
          r.call === 1 ? { tools: [{ name: 'run_command', input: { command: '/usr/bin/python3 swap.py', timeout_seconds: 120 } }] } : { text: 'ok' },
        writer: [
          { delayMs: 1500, tools: calls.slice(0, 250) },
          { tools: calls.slice(250, 500) },
          { tools: calls.slice(500, 750) },
          { tools: calls.slice(750) },
          { tools: [{ name: 'write_file', input: { path: 'done', content: '' } }] },
          { text: 'written' },
        ],
      });
      const run = await conclave(['run', 'workflow.yml', '--json'], { cwd: repo, env: env() });
      expect(run.code, run.stderr).toBe(0);

      // 0 writes under .git, 0 files outside touched or deleted.
      expect(readdirSync(join(repo, '.git'))).toEqual(['config']);
      expect(readFileSync(join(repo, '.git', 'config'), 'utf8')).toBe(gitConfig);
      expect(readdirSync(outside).length).toBe(WRITES / 2);
      for (let i = 0; i < WRITES / 2; i++) expect(readFileSync(join(outside, `v${i}.txt`), 'utf8')).toBe(`keep ${i}\n`);

      const results = toolResults(server.of('writer')).slice(0, WRITES);
      expect(results).toHaveLength(WRITES);
      const refused = results.filter((r) => r.is_error);
      // The race was on: the swapper swapped, and some writes met a link and were refused.
      const swapped = toolResults(server.of('lead'))[0]!.content;
      expect(Number(/swaps (\d+)/.exec(swapped)?.[1])).toBeGreaterThan(100);
      expect(refused.length).toBeGreaterThan(0);
      for (const r of refused) expect(r.content).toMatch(/symbolic link|not a directory|no such file/);
    },
    180_000,
  );
});

describe('texts made of backticks', () => {
  it('a conflict between three documents of 50,000 backtick runs each is shown, and the run goes on (no stack overflow)', async () => {
    const ticks = (c: string) => `\`${c}`.repeat(50_000);
    let reviewed = false;
    server = await startFakeAnthropic({
      lead: (r) => {
        if (r.call === 1) return { tools: [{ name: 'edit_document', input: { name: 'plan', version: 1, text: ticks('b'), why: 'mine' } }] };
        if (!reviewed && lastUserText(r).includes('plan#1')) {
          reviewed = true;
          return { tools: [{ name: 'review_edit', input: { edit: 'plan#1', accept: true, why: 'ok' } }] };
        }
        return reviewed ? { tools: [{ name: 'complete', input: { status: 'success', summary: 'done' } }] } : { text: 'edited' };
      },
      alice: [
        { delayMs: 1000, tools: [{ name: 'edit_document', input: { name: 'plan', version: 1, text: ticks('c'), why: 'theirs' } }] },
        { text: 'proposed' },
        { text: 'seen' },
      ],
    });
    const run = await runWorkflow(
      server,
      `name: ticks
documents:
  plan: { owner: lead, file: plan.md }
agents:
  lead: { role: manager }
  alice: { role: worker }
kickoff: "@lead @alice go"
`,
      [],
      { files: { 'plan.md': ticks('a') }, env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: '' } },
    );
    expect(run.stderr).not.toMatch(/RangeError|Maximum call stack|\n\s+at /);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.status).toBe('success');
    // The owner's review answers with the conflict; the edit is closed as one.
    const reviewedWith = server.of('lead').map(lastUserText).join('\n');
    expect(reviewedWith).toContain('"status": "conflict"');
    expect(run.events.filter((e) => e.type === 'edit_closed').map((e) => e.status)).toEqual(['conflict']);
    const session = join(run.dir, run.json.session as unknown as string);
    for (const format of ['text', 'markdown', 'json']) {
      const shown = await conclave(['show', session, '--format', format], { cwd: run.dir });
      expect(shown.code, `${format}: ${shown.stderr}`).toBe(0);
    }
  }, 60_000);

  it('a kickoff of 160,000 backtick runs: the job summary is written and conclave exits as the run ended; show --format markdown reads it', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'read it' }] });
    const dir = fresh('ticks-summary');
    writeFileSync(join(dir, 'summary.md'), '');
    const run = await runWorkflow(
      server,
      `name: ticks
setup:
  - id: ticks
    run: cat ticks.txt
agents:
  lead: { role: manager }
kickoff: "$<< setup.ticks >>"
`,
      [],
      { dir, files: { 'ticks.txt': '`x'.repeat(160_000) }, env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: join(dir, 'summary.md') } },
    );
    expect(run.stderr).not.toMatch(/RangeError|Maximum call stack|\n\s+at /);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.status).toBe('idle');
    const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(summary).toContain('### Transcript');
    const shown = await conclave(['show', join(dir, run.json.session as unknown as string), '--format', 'markdown'], { cwd: dir });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('## Transcript');
  }, 60_000);
});
