import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../fake-anthropic/server.js';
import { FAN_OUT, fanOutScript } from '../fixtures/fan-out.js';
import { recordRing } from '../fixtures/ring-session.js';
import { browserForTests, launch, open } from '../helpers/browser.js';
import { conclave, ROOT } from '../helpers/cli.js';
import { runWorkflow } from '../helpers/run-workflow.js';

/** `conclave report` (docs/report.md): one page per run, opened in a real browser (Debian's chromium). */
const chromium = browserForTests();
const require = createRequire(import.meta.url);
let browser: Browser;
beforeAll(async () => {
  if (chromium) browser = await launch();
}, 60_000);
afterAll(async () => browser?.close());

const scratch = () => mkdtempSync(join(tmpdir(), 'conclave-report-'));

async function report(session: string, cwd = ROOT): Promise<string> {
  const out = join(scratch(), 'run.html');
  const result = await conclave(['report', session, '-o', out], { cwd });
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout).toBe(`${out}\n`);
  return out;
}

describe.skipIf(!chromium)('conclave report, opened in headless Chromium', () => {
  it('the pr-review run: no request, no console error; the agents, the verdict, both reasons and the cost; the essentials with scripts off', async () => {
    const page = await report('examples/pr-review.session.jsonl');
    const opened = await open(browser, page);
    expect(opened.requests).toEqual([]);
    expect(opened.errors).toEqual([]);
    const text = await opened.page.innerText('body');
    for (const agent of ['@lead', '@security', '@style']) expect(text).toContain(agent);
    expect(text).toContain('request-changes');
    expect(text).toContain('The rename of getUser breaks its callers.');
    expect(text).toContain('The SQL injection must be fixed before merging.');
    expect(await opened.page.innerText('#run-cost')).toBe('$0.0444');
    // The filter: @style's messages and calls are hidden, the others' stay.
    await opened.page.uncheck('input.pick[value="style"]');
    expect(await opened.page.isVisible('li[data-agent="style"]')).toBe(false);
    expect(await opened.page.isVisible('li[data-agent="security"]')).toBe(true);
    await opened.page.click('#open');
    expect(await opened.page.locator('details.call[open]').count()).toBeGreaterThan(0);

    const noScript = await open(browser, page, { javaScriptEnabled: false });
    const plain = await noScript.page.innerText('body');
    for (const needed of ['@lead', '@security', '@style', 'request-changes', '$0.0444', 'The SQL injection must be fixed before merging.'])
      expect(plain).toContain(needed);
    expect(await noScript.page.isVisible('#filter')).toBe(false);
    const withoutScripts = readFileSync(page, 'utf8').replace(/<script[\s\S]*?<\/script>/g, '');
    for (const needed of ['@lead', '@security', '@style', 'request-changes', '$0.0444']) expect(withoutScripts).toContain(needed);
  });

  it('on a phone (390 px, as a PR comment opens it): no wider than the screen, landmarks, 0 axe violations serious or critical; printed without the filter, every call open', async () => {
    const page = await report('examples/pr-review.session.jsonl');
    // The page's policy allows only its own script: axe is let in for the test alone.
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    try {
      const phone = await context.newPage();
      await phone.goto(`file://${page}`, { waitUntil: 'load' });
      expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      expect(await phone.locator('body > header').count()).toBe(1);
      expect(await phone.locator('body > main').count()).toBe(1);
      expect(await phone.locator('body > footer').count()).toBe(1);
      // The verdict is in the header, before how the run ended.
      expect(await phone.innerText('header')).toMatch(/verdict\s+verdict: request-changes/);
      await phone.addScriptTag({ content: readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8') });
      const violations = await phone.evaluate(async () => {
        const axe = (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe;
        return (await axe.run()).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
      });
      expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
      // Printed: no filter, and every call open (then closed again as it was).
      await phone.emulateMedia({ media: 'print' });
      expect(await phone.isVisible('#filter')).toBe(false);
      const closedBefore = await phone.locator('details.call:not([open])').count();
      expect(closedBefore).toBeGreaterThan(0);
      await phone.evaluate(() => window.dispatchEvent(new Event('beforeprint')));
      expect(await phone.locator('details.call:not([open])').count()).toBe(0);
      await phone.evaluate(() => window.dispatchEvent(new Event('afterprint')));
      expect(await phone.locator('details.call:not([open])').count()).toBe(closedBefore);
    } finally {
      await context.close();
    }
  });

  it("a run parked for a person's vote, then resumed: the votes awaited and the time parked are on the timeline", async () => {
    const dir = scratch();
    const session = join(dir, 'parked.session.jsonl');
    const parked = readFileSync(join(ROOT, 'test/fixtures/sessions/parked-for-people.jsonl'), 'utf8');
    const at = 1795828907809;
    const after = [
      { seq: 15, type: 'resumed', replayed_through: 13, at: new Date(at + 90_000).toISOString(), conclave_version: '0.1.0', at_ms: at + 90_000 },
      { seq: 16, type: 'proposal_closed', proposal: 'verdict', status: 'decided', winner: 'approve', reason: null, at_ms: at + 90_010 },
    ];
    writeFileSync(session, `${parked}${after.map((e) => JSON.stringify(e)).join('\n')}\n`);
    const opened = await open(browser, await report(session, dir));
    expect(opened.errors).toEqual([]);
    const titles = await opened.page.$$eval('#timeline svg rect > title', (ts) => ts.map((t) => t.textContent));
    expect(titles).toContain('the run votes on verdict: 90.0 s');
    expect(titles).toContain('the run parked: 90.0 s');
    expect(await opened.page.innerText('#timeline')).toContain('the run waiting');
  });

  it('a 1+64 spawn run: at most 2 MB, no request, no error, every spawned agent named, the subtrees adding up to the run', async () => {
    const server = await startFakeAnthropic(fanOutScript(64));
    try {
      const run = await runWorkflow(server, FAN_OUT(64, 'limits: { max_agents: 70, concurrency: 16, max_turns: 200 }'));
      expect(run.code, run.stderr).toBe(0);
      const page = await report(join(run.dir, run.json.session as string));
      expect(statSync(page).size).toBeLessThanOrEqual(2 * 1024 * 1024);
      const opened = await open(browser, page);
      expect(opened.requests).toEqual([]);
      expect(opened.errors).toEqual([]);
      const text = await opened.page.innerText('#tree');
      for (let i = 1; i <= 64; i++) expect(text).toContain(`@reviewer-${i} `);
      const roots = await opened.page.$$eval('ul.tree > li > span.subtree', (spans) => spans.map((s) => Number(s.getAttribute('data-usd'))));
      const runCost = (run.json.usage as { cost_usd: number }).cost_usd;
      expect(Math.abs(roots.reduce((a, b) => a + b, 0) - runCost)).toBeLessThan(0.01);
      const lead = await opened.page.$$eval('ul.tree > li[data-agent="lead"] > ul > li > span.subtree', (spans) => spans.length);
      expect(lead).toBe(64);
      // Rolled up by template: one row for the 64, and one box that shows or hides them all.
      expect(await opened.page.$$eval('table.by-template tbody tr', (rows) => rows.map((r) => (r as HTMLElement).innerText.split('\t').slice(0, 2)))).toEqual([
        ['reviewer', '64'],
      ]);
      expect(await opened.page.locator('input.pick-template').count()).toBe(1);
      expect(await opened.page.isVisible('input.pick[value="reviewer-7"]')).toBe(false);
      await opened.page.uncheck('input.pick-template[value="reviewer"]');
      expect(await opened.page.isVisible('li[data-agent="reviewer-7"]')).toBe(false);
      expect(await opened.page.isVisible('li[data-agent="lead"]')).toBe(true);
      await opened.page.check('input.pick-template[value="reviewer"]');
      expect(await opened.page.isVisible('li[data-agent="reviewer-7"]')).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('a session whose texts carry <script>, <img onerror>, <svg onload> and remote URLs: nothing runs, nothing is fetched, the markup is shown as text', async () => {
    const hostile = [
      '<script>window.__pwned = 1</script>',
      '<img src="https://tracker.example/pixel.png" onerror="window.__pwned = 2">',
      '<svg onload="window.__pwned = 3"></svg>',
      '<a href="javascript:window.__pwned = 4">click</a>',
      '<link rel="stylesheet" href="https://tracker.example/style.css">',
      '"><iframe src="https://tracker.example/frame"></iframe>',
    ].join(' ');
    const server = await startFakeAnthropic({
      lead: [{ text: `@worker look at this: ${hostile}` }, { tools: [{ name: 'complete', input: { status: 'success', summary: `Done. ${hostile}` } }] }],
      worker: [{ text: `@lead seen: ${hostile}` }],
    });
    try {
      const workflow = `name: hostile\nagents:\n  lead: { role: manager }\n  worker: { role: worker }\nkickoff: ${JSON.stringify(`Review ${hostile}`)}\noutputs:\n  said: $<< result.summary >>\n`;
      const run = await runWorkflow(server, workflow);
      expect(run.code, run.stderr).toBe(0);
      const page = await report(join(run.dir, run.json.session as string));
      const opened = await open(browser, page);
      await opened.page.waitForTimeout(300);
      expect(opened.requests).toEqual([]);
      expect(opened.errors).toEqual([]);
      expect(opened.dialogs).toEqual([]);
      expect(await opened.page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await opened.page.locator('iframe, img, link[rel=stylesheet], script:not([nonce])').count()).toBe(0);
      const text = await opened.page.innerText('body');
      expect(text).toContain('<script>window.__pwned = 1</script>');
      expect(text).toContain('<svg onload="window.__pwned = 3"></svg>');
      expect(text).toContain('https://tracker.example/pixel.png');
    } finally {
      await server.close();
    }
  });

  it('a 10,000-event session opens (npm run bench holds it to 2 s); show --format html is the same page', async () => {
    const session = await recordRing(50, 34);
    const events = readFileSync(session, 'utf8').trim().split('\n').length - 1;
    expect(events).toBeGreaterThanOrEqual(10_000);
    const page = await report(session);
    const opened = await open(browser, page);
    expect(opened.errors).toEqual([]);
    expect(opened.requests).toEqual([]);
    // A generous bound that catches a page no one can open (npm run bench measures it: docs/BENCHMARKS.md).
    expect(opened.loadMs).toBeLessThan(10_000);
    const shown = await conclave(['show', session, '--format', 'html']);
    expect(shown.code).toBe(0);
    const nonce = (html: string) => html.replace(/nonce(-|=")[A-Za-z0-9+/=]+/g, 'NONCE');
    expect(nonce(shown.stdout)).toBe(nonce(readFileSync(page, 'utf8')));
  }, 120_000);
});

describe('conclave report: what it refuses', () => {
  it('a 100 MB session: a page of its essentials, saying what it left out; no crash', async () => {
    const lines = readFileSync(join(ROOT, 'examples/pr-review.session.jsonl'), 'utf8').trimEnd().split('\n');
    const ended = JSON.parse(lines.pop()!) as { seq: number };
    const big = 'x'.repeat(10 * 1024 * 1024);
    for (let i = 0; i < 10; i++) {
      const message = { id: 100 + i, kind: 'agent', sender: 'style', text: `${i} ${big}`, recipients: ['lead'] };
      lines.push(JSON.stringify({ seq: ended.seq + i, type: 'message', message }));
    }
    lines.push(JSON.stringify({ ...ended, seq: ended.seq + 10 }));
    const dir = scratch();
    writeFileSync(join(dir, 'big.jsonl'), `${lines.join('\n')}\n`);
    expect(statSync(join(dir, 'big.jsonl')).size).toBeGreaterThan(100 * 1024 * 1024);
    const result = await conclave(['report', 'big.jsonl'], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('big.html\n');
    const page = readFileSync(join(dir, 'big.html'), 'utf8');
    expect(page.length).toBeLessThan(2 * 1024 * 1024);
    expect(page).toMatch(/The session is 10\d MB: this page shows its essentials, without the model calls; conclave show big\.jsonl prints all of it\./);
    expect(page).toContain('request-changes');
  }, 60_000);

  it('a session that is not there, or not a session: exit 2 in a sentence; the default page goes beside the session', async () => {
    const missing = await conclave(['report', 'nope.jsonl']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('conclave: cannot read nope.jsonl: no such file\n');
    const broken = await conclave(['report', 'examples/pr-review.yml']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/^conclave: examples\/pr-review\.yml/);
    expect(broken.stderr).not.toMatch(/\n\s+at /);
    const dir = scratch();
    const session = join(dir, 'run.jsonl');
    writeFileSync(session, readFileSync(join(ROOT, 'examples/pr-review.session.jsonl')));
    const over = await conclave(['report', 'run.jsonl', '-o', './run.jsonl'], { cwd: dir });
    expect(over.code).toBe(2);
    expect(over.stderr).toBe('conclave: the page would overwrite the session run.jsonl: give -o another file\n');
    expect(readFileSync(session, 'utf8')).toBe(readFileSync(join(ROOT, 'examples/pr-review.session.jsonl'), 'utf8'));
    const beside = await conclave(['report', 'run.jsonl'], { cwd: dir });
    expect(beside.stdout).toBe('run.html\n');
    expect(readFileSync(join(dir, 'run.html'), 'utf8')).toContain('request-changes');
  });
});
