import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conclave } from '../helpers/cli.js';

describe('the offline demo', () => {
  it('replays examples/pr-review.yml from its recorded session, with no API key and no network', async () => {
    // If this fails after a change to examples/pr-review.yml, record the demo again: node scripts/record-demo.js
    const session = join(mkdtempSync(join(tmpdir(), 'conclave-demo-')), 'replay.jsonl');
    const result = await conclave(['run', 'examples/pr-review.yml', '--replay', 'examples/pr-review.session.jsonl', '--session', session, '--json'], {
      env: { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'success', outputs: { verdict: 'request-changes' } });
    expect(result.stderr).toContain('@security using grep');
    expect(result.stderr).toContain('proposal verdict: decided "request-changes"');
    const header = JSON.parse(readFileSync('examples/pr-review.session.jsonl', 'utf8').split('\n')[0]!);
    expect(header.note).toMatch(/^recorded against conclave's test server/);
  });
});
