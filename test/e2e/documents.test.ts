import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic, type RecordedRequest, type Reply } from '../fake-anthropic/server.js';
import { ALICE_PLAN, BOB_PLAN, CAROL_PLAN, edit, finding, firstTurn, PLAN, PLAN_TEAM, reviewingLead, threeEdits, withLine } from '../fixtures/plan-team.js';
import { conclave, ROOT } from '../helpers/cli.js';
import { fromJson } from '../helpers/otlp-receiver.js';
import { runUntilKilled, runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The plan with alice's and bob's edits, and not carol's. */
const BOTH = withLine(ALICE_PLAN, 4, '4. Drop the old table after a week');
const FINDINGS = 'bob: step 4 cannot be undone\ncarol: nothing says how long step 2 takes\n';

describe('documents with an owner', () => {
  it("two edits of one version land, a third rejected never does, appends keep their order; the owner's notices name plan#1-3 with a diff", async () => {
    server = await startFakeAnthropic(threeEdits());
    const run = await runWorkflow(server, PLAN_TEAM());
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.outputs).toEqual({ plan: BOTH, findings: FINDINGS });
    expect(run.json.documents).toEqual({
      plan: { owner: 'lead', mode: 'edit', version: 3, text: BOTH, open_edits: [] },
      findings: { owner: 'lead', mode: 'append', version: 3, text: FINDINGS, open_edits: [] },
    });
    // write_to: the final text, in the workspace.
    expect(readFileSync(join(run.dir, 'out', 'PLAN.md'), 'utf8')).toBe(BOTH);

    const notices = server.of('lead').map(lastUserText).join('\n');
    for (const [id, author] of [
      ['plan#1', 'alice'],
      ['plan#2', 'bob'],
      ['plan#3', 'carol'],
    ])
      expect(notices).toContain(`Edit ${id} of document "plan" from @${author}, against version 1`);
    expect(notices).toContain('-4. Drop the old table\n+4. Drop the old table after a week');
    expect(notices).toContain('--- plan version 1\n+++ plan#3');
    // Each author is told the outcome, and why.
    expect(server.of('alice').map(lastUserText).join('\n')).toContain('Your edit plan#1 of "plan" was accepted by @lead: good.');
    expect(server.of('carol').map(lastUserText).join('\n')).toContain(
      'Your edit plan#3 of "plan" was rejected by @lead: keep step 2 as it is. It did not change the document.',
    );
    // Every change is a session event.
    const changes = run.events.filter((e) => e.type === 'document_changed').map((e) => [e.version, e.author, e.edit]);
    expect(changes).toEqual([
      [2, 'alice', 'plan#1'],
      [3, 'bob', 'plan#2'],
    ]);
    expect(run.events.filter((e) => e.type === 'edit_closed').map((e) => [e.edit, e.status])).toEqual([
      ['plan#1', 'accepted'],
      ['plan#2', 'accepted'],
      ['plan#3', 'rejected'],
    ]);

    // show: each document's history, who changed what, accepted or rejected.
    const session = run.json.session as unknown as string;
    const shown = await conclave(['show', session], { cwd: run.dir });
    expect(shown.stdout).toContain('plan (owner @lead): version 3');
    expect(shown.stdout).toMatch(/v2 {2}plan#1 by @alice merged/);
    expect(shown.stdout).toContain('@lead rejected plan#3: keep step 2 as it is');
    expect(shown.stdout).toContain('findings (owner @lead, append): version 3');
    const markdown = await conclave(['show', session, '--format', 'markdown'], { cwd: run.dir });
    expect(markdown.stdout).toContain('## Documents');
    expect(markdown.stdout).toContain('| 3 | plan#2 by @bob merged (+1 −1 lines): keep a way back |');

    // Traces: a span per edit, from proposed to reviewed.
    const traced = await conclave(['trace', session, '--format', 'json'], { cwd: run.dir, env: { OTEL_EXPORTER_OTLP_ENDPOINT: '' } });
    const edits = fromJson(JSON.parse(traced.stdout)).filter((span) => span.name.startsWith('edit '));
    expect(edits.map((span) => [span.name, span.attributes['conclave.edit.author'], span.attributes['conclave.edit.status']])).toEqual([
      ['edit plan#1', 'alice', 'accepted'],
      ['edit plan#2', 'bob', 'accepted'],
      ['edit plan#3', 'carol', 'rejected'],
    ]);

    // --replay, offline: the same documents.
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).outputs).toEqual({ plan: BOTH, findings: FINDINGS });
  });

  it('an overlapping edit is refused with its conflict; its author, told, edits again against the current version', async () => {
    const bobFirst = withLine(PLAN, 4, '4. Keep the old table');
    const version2 = withLine(PLAN, 4, '4. Drop the old table after a week');
    const bobAgain = withLine(version2, 3, '3. Switch reads, then watch errors');
    server = await startFakeAnthropic({
      lead: reviewingLead(() => true),
      alice: firstTurn(edit(1, version2, 'keep a way back')),
      bob: (request) => {
        if (request.body.messages.length === 1) return { tools: [edit(1, bobFirst, 'never drop it')] };
        return lastUserText(request).includes('could not be merged') ? { tools: [edit(2, bobAgain, 'watch the switch')] } : { text: '' };
      },
      carol: firstTurn(),
    });
    const run = await runWorkflow(server, PLAN_TEAM().replace('@alice @bob @carol', '@alice @bob'));
    expect(run.code, run.stderr).toBe(0);
    const told = server.of('bob').map(lastUserText).join('\n');
    expect(told).toContain('Your edit plan#2 of "plan" could not be merged: it overlaps changes made since version 1, its base (the document is at version 2)');
    expect(told).toContain(
      "<<<<<<< version 2 (now)\n4. Drop the old table after a week\n||||||| version 1 (the edit's base)\n4. Drop the old table\n=======\n4. Keep the old table\n>>>>>>> plan#2",
    );
    const review = server.of('lead').map(lastUserText).join('\n');
    expect(review).toContain('"status": "conflict"');
    expect(run.events.filter((e) => e.type === 'edit_closed').map((e) => [e.edit, e.status])).toEqual([
      ['plan#1', 'accepted'],
      ['plan#2', 'conflict'],
      ['plan#3', 'accepted'],
    ]);
    // The conflicting edit never landed; the one made again did.
    expect(run.json.outputs.plan).toBe(bobAgain);
    expect(run.json.outputs.plan).not.toContain('Keep the old table');
    // show and the job summary's line say the edit that conflicted, and what each edit changed.
    const shown = await conclave(['show', run.json.session as unknown as string], { cwd: run.dir });
    expect(shown.stdout).toContain('    in conflict: plan#2 (accepted, did not land: edit again against the last version)');
    expect(shown.stdout).toMatch(/@bob proposed plan#2 \(\+1 −1 lines\)/);
    const markdown = await conclave(['show', run.json.session as unknown as string, '--format', 'markdown'], { cwd: run.dir });
    expect(markdown.stdout).toMatch(/<summary>plan: version \d+, owner @lead, 1 in conflict \(plan#2\)<\/summary>/);
  });

  it('kill -9 after the first edit, then resume: the same final documents as a run left alone', async () => {
    server = await startFakeAnthropic(threeEdits(1_500));
    const dir = mkdtempSync(join(tmpdir(), 'conclave-documents-'));
    writeFileSync(join(dir, 'workflow.yml'), PLAN_TEAM());
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const session = await runUntilKilled(server, dir, (text) => text.includes('"edit_proposed"'));
    const file = () => session;
    const before = readFileSync(file(), 'utf8');
    expect(before).toContain('"edit_proposed"');
    expect(before).not.toContain('"run_ended"');
    const resumed = await conclave(['resume', file(), '--json'], { cwd: dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const result = JSON.parse(resumed.stdout);
    expect(result.outputs).toEqual({ plan: BOTH, findings: FINDINGS });
    expect(result.documents.plan.version).toBe(3);
    expect(readFileSync(join(dir, 'out', 'PLAN.md'), 'utf8')).toBe(BOTH);
    // One edit_proposed per edit in the resumed file: nothing was proposed twice.
    const events = readFileSync(file(), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => JSON.parse(l));
    expect(events.filter((e) => e.type === 'edit_proposed').map((e) => e.edit.id)).toEqual(['plan#1', 'plan#2', 'plan#3']);
    const replay = await conclave(['run', 'workflow.yml', '--replay', file(), '--json'], {
      cwd: dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).outputs.plan).toBe(BOTH);
  });

  it('reads file: at start, writes write_to through the tool boundary, says a limit as a tool error, and puts the documents in the job summary', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-documents-'));
    const outside = mkdtempSync(join(tmpdir(), 'conclave-outside-'));
    symlinkSync(outside, join(dir, 'link'));
    writeFileSync(join(dir, 'PLAN.md'), PLAN);
    writeFileSync(join(dir, 'summary.md'), '');
    const workflow = PLAN_TEAM()
      .replace(
        / {2}plan:\n[\s\S]*?(?= {2}findings:)/,
        '  plan: { owner: lead, file: PLAN.md, write_to: PLAN.md }\n  notes: { owner: lead, text: kept, write_to: link/notes.md }\n',
      )
      .replace('@alice @bob @carol', '@alice');
    server = await startFakeAnthropic({
      lead: reviewingLead(() => true),
      alice: (request) =>
        request.body.messages.length === 1 ? { tools: [edit(1, 'x'.repeat(100_001), 'too long'), edit(1, ALICE_PLAN, 'bounded')] } : { text: '' },
      bob: [],
      carol: [],
    });
    const run = await runWorkflow(server, workflow, [], { dir, env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: join(dir, 'summary.md') } });
    const results = server.of('alice')[1]!.body.messages.at(-1)!.content as { is_error?: boolean; content: string }[];
    expect(results[0]).toMatchObject({ is_error: true, content: 'the text is 100,001 characters long: a document holds at most 100,000 characters' });
    expect(run.json.documents).toMatchObject({ plan: { version: 2, text: ALICE_PLAN }, notes: { version: 1, text: 'kept' } });
    // The plan went back to its file; the notes were refused a way out of the workspace, and the run says so.
    expect(readFileSync(join(dir, 'PLAN.md'), 'utf8')).toBe(ALICE_PLAN);
    expect(readdirSync(outside)).toEqual([]);
    expect(run.code).toBe(1);
    expect(run.json.output_errors).toEqual([expect.stringMatching(/^documents\.notes\.write_to: cannot write link\/notes\.md: .*link/)]);
    const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(summary).toContain('### Documents');
    expect(summary).toContain('<summary>plan: version 2, owner @lead</summary>');
    expect(summary).toMatch(/\| 2 \| plan#1 by @alice merged \(\+1 −1 lines\)(: [^|]*)? \|/);

    // A replay takes the first text the run opened with, not the file as it is now, and leaves the workspace as it is.
    writeFileSync(join(dir, 'PLAN.md'), 'changed by hand\n');
    const session = join(dir, run.json.session as unknown as string);
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], {
      cwd: dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(JSON.parse(replay.stdout).documents.plan).toMatchObject({ version: 2, text: ALICE_PLAN });
    expect(readFileSync(join(dir, 'PLAN.md'), 'utf8')).toBe('changed by hand\n');
    expect(replay.code, replay.stderr).toBe(0);
  });

  it('refuses a first text past the limit before any turn, and a file: that is no file', async () => {
    server = await startFakeAnthropic({ lead: [], alice: [], bob: [], carol: [] });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-documents-'));
    writeFileSync(join(dir, 'BIG.md'), 'y'.repeat(100_001));
    mkdirSync(join(dir, 'sub'));
    const big = PLAN_TEAM().replace(/ {2}plan:\n[\s\S]*?(?= {2}findings:)/, '  plan: { owner: lead, file: BIG.md }\n');
    const run = await runWorkflow(server, big, [], { dir });
    expect(run.code).toBe(1);
    expect(run.json.reason).toContain('documents.plan starts 100,001 characters long: a document holds at most 100,000 characters');
    expect(server.requests).toHaveLength(0);
    const missing = await runWorkflow(server, big.replace('BIG.md', 'sub'), [], { dir });
    expect(missing.json.reason).toMatch(/^documents\.plan\.file: cannot read sub: sub is a directory/);
  });

  it('examples/migration-plan.yml: the reviewers refine MIGRATION.md through the lead, and the accepted plan is written back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-documents-'));
    writeFileSync(join(dir, 'MIGRATION.md'), PLAN);
    writeFileSync(join(dir, 'workflow.yml'), readFileSync(join(ROOT, 'examples', 'migration-plan.yml'), 'utf8'));
    server = await startFakeAnthropic({
      lead: reviewingLead(() => true),
      safety: firstTurn(edit(1, BOB_PLAN, 'keep a way back'), finding('safety: the old table is the only backup', 'risks')),
      performance: firstTurn(edit(1, CAROL_PLAN, 'the table is large')),
      operations: firstTurn(finding('operations: nobody watches the switch', 'risks')),
    });
    const run = await conclave(['run', 'workflow.yml', '--json'], { cwd: dir, env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    const refined = withLine(BOB_PLAN, 2, '2. Copy the table in batches');
    expect(result.outputs.plan).toBe(refined);
    expect(result.outputs.risks.split('\n').sort()).toEqual(['', 'operations: nobody watches the switch', 'safety: the old table is the only backup']);
    expect(readFileSync(join(dir, 'MIGRATION.md'), 'utf8')).toBe(refined);
  });

  it('an owner that lets an edit wait is reminded once when nothing else runs; one never reviewed ends the run open', async () => {
    // The lead ignores its notice; it reviews only when reminded.
    const remindedLead = (request: RecordedRequest): Reply =>
      lastUserText(request).includes('still waits for your review')
        ? { tools: [{ name: 'review_edit', input: { edit: 'plan#1', accept: true, why: 'fine' } }] }
        : { text: '' };
    server = await startFakeAnthropic({ lead: remindedLead, alice: firstTurn(edit(1, ALICE_PLAN, 'bound it')), bob: [], carol: [] });
    const team = PLAN_TEAM().replace('@alice @bob @carol', '@alice');
    const run = await runWorkflow(server, team);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.outputs.plan).toBe(ALICE_PLAN);
    const reminders = run.events.filter((e) => e.type === 'message' && String((e.message as { text: string }).text).includes('still waits'));
    expect(reminders.map((e) => e.message)).toEqual([
      expect.objectContaining({
        sender: 'system',
        recipients: ['lead'],
        text: 'Edit plan#1 of "plan" from @alice still waits for your review: accept or reject it with review_edit (read_document shows the edits that wait).',
      }),
    ]);
    await server.close();

    // An owner that never reviews: reminded once, then the run ends idle with the edit open.
    server = await startFakeAnthropic({ lead: () => ({ text: '' }), alice: firstTurn(edit(1, ALICE_PLAN, 'bound it')), bob: [], carol: [] });
    const left = await runWorkflow(server, team);
    expect(left.code, left.stderr).toBe(0);
    expect(left.json.status).toBe('idle');
    expect(left.json.documents).toMatchObject({ plan: { version: 1, text: PLAN, open_edits: ['plan#1'] } });
    expect(server.of('lead')).toHaveLength(2);
    const shown = await conclave(['show', left.json.session as unknown as string], { cwd: left.dir });
    expect(shown.stdout).toContain('@alice proposed plan#1 (+1 −1 lines): bound it');
    expect(shown.stdout).toContain('open edits: plan#1');
  });
});
