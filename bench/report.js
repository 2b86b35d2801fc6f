// The report page of a 10,000-event session (a ring of 50 workers, 34 rounds, recorded in process)
// opened in headless Chromium (Debian's, through playwright-core): the time from navigation to
// the load event, median of 5, against the bar of 2 s (issue 70). Its size beside it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export async function reportOpen(rounds = 5) {
  const chromiumPath = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
  if (!chromiumPath) return undefined;
  const { recordRing } = await loadSource('test/fixtures/ring-session.ts');
  const session = await recordRing(50, 34);
  const events = readFileSync(session, 'utf8').trim().split('\n').length - 1;
  const page = join(mkdtempSync(join(tmpdir(), 'conclave-bench-report-')), 'run.html');
  const made = spawnSync(process.execPath, [join(root, 'bin/conclave.js'), 'report', session, '-o', page], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`conclave report failed: ${made.stderr}`);
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-gpu'] });
  const times = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const context = await browser.newContext();
      const tab = await context.newPage();
      const start = process.hrtime.bigint();
      await tab.goto(`file://${page}`, { waitUntil: 'load' });
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  return { events, bytes: statSync(page).size, openMs: median(times) };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await reportOpen());
