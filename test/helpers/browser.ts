import { existsSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';

/**
 * A real browser for the report pages (docs/report.md): Debian's chromium, driven by
 * playwright-core. Where it is missing the tests skip loudly, unless CONCLAVE_REQUIRE_BROWSER is
 * set (as .ci/run sets it, after installing chromium), where they fail.
 */
export const CHROMIUM = process.env.CONCLAVE_CHROMIUM ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

export function browserForTests(): string | undefined {
  if (CHROMIUM) return CHROMIUM;
  const why = 'no chromium here (apt-get install chromium)';
  if (process.env.CONCLAVE_REQUIRE_BROWSER) throw new Error(`the report pages must be opened in a real browser here, but there is ${why}`);
  process.stderr.write(`\n*** SKIPPING the browser tests: ${why} ***\n\n`);
  return undefined;
}

export async function launch(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox', '--disable-gpu'] });
}

/** What opening a page did: every request after its own file, console errors and page errors, dialogs, and how long it took to load. */
export interface Opened {
  page: Page;
  requests: string[];
  errors: string[];
  dialogs: string[];
  loadMs: number;
}

export async function open(browser: Browser, file: string, options: { javaScriptEnabled?: boolean } = {}): Promise<Opened> {
  const context = await browser.newContext({ javaScriptEnabled: options.javaScriptEnabled ?? true });
  const page = await context.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  const dialogs: string[] = [];
  page.on('request', (r) => {
    if (r.url() !== `file://${file}`) requests.push(r.url());
  });
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  const started = Date.now();
  await page.goto(`file://${file}`, { waitUntil: 'load' });
  return { page, requests, errors, dialogs, loadMs: Date.now() - started };
}
