import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Workspace } from '../../src/agents/tools/workspace-root.js';
import { requestHash } from '../../src/provider/request-hash.js';
import type { ModelRequest } from '../../src/provider/client.js';
import { shellQuote } from '../../src/workflow/evaluate.js';
import { tighterLimits, limitsProblem, DEFAULT_LIMITS } from '../../src/workflow/limits.js';

/**
 * Unit tests, from source, of the modules that hold conclave's promises (issue 24): each names
 * the regression it catches, as a mutation of the module would make it.
 */

describe('shellQuote keeps every value data', () => {
  for (const value of ["x'y' ; echo PWNED ; '", "a'b'c'd", '$(rm -rf ~)', '`id`', "'", "''", '', 'new\nline', '*']) {
    it(`${JSON.stringify(value)} reaches sh as the same one word`, () => {
      // Every quote is escaped, not only the first: otherwise the echo above would run.
      const out = execFileSync('sh', ['-c', `printf '%s' ${shellQuote(value)}`], { encoding: 'utf8' });
      expect(out).toBe(value);
    });
  }
});

describe('the workspace root', () => {
  it("a link to a sibling directory whose name starts with the root's, a path through .., and .git are refused", () => {
    const parent = mkdtempSync(join(tmpdir(), 'conclave-unit-'));
    mkdirSync(join(parent, 'ws'));
    mkdirSync(join(parent, 'ws-evil'));
    writeFileSync(join(parent, 'ws-evil', 'loot.txt'), 'outside');
    const workspace = new Workspace(join(parent, 'ws'));
    symlinkSync(join(parent, 'ws-evil'), join(parent, 'ws', 'link'));
    expect(() => workspace.openForReading('link/loot.txt')).toThrow(/symbolic link/);
    expect(() => workspace.openForWriting('../ws-evil/loot.txt')).toThrow(/may not contain ".."/);
    expect(() => workspace.openForWriting('.git/config')).toThrow(/\.git directory/);
  });
});

describe('the request hash', () => {
  const request = (over: Partial<ModelRequest> = {}) =>
    ({
      model: 'claude-sonnet-5-5',
      max_tokens: 1000,
      system: [{ type: 'text', text: 's' }],
      tools: [],
      messages: [{ role: 'user', content: 'hi' }],
      ...over,
    }) as ModelRequest;

  it('changes with every part a response depends on: the model, max_tokens, system, tools, messages, the rest', () => {
    const base = requestHash(request());
    expect(requestHash(request())).toBe(base);
    expect(requestHash(request({ max_tokens: 1001 }))).not.toBe(base);
    expect(requestHash(request({ model: 'claude-opus-5' }))).not.toBe(base);
    expect(requestHash(request({ system: [{ type: 'text', text: 't' }] }))).not.toBe(base);
    expect(requestHash(request({ messages: [{ role: 'user', content: 'ho' }] }))).not.toBe(base);
    expect(requestHash(request({ temperature: 0.5 } as Partial<ModelRequest>))).not.toBe(base);
  });
});

describe('limits read from a session', () => {
  it("are held to the workflow's, each the tighter, and nonsense is named", () => {
    const recorded = { ...DEFAULT_LIMITS, budgetUsd: 1e9, maxTurns: 5 };
    expect(tighterLimits(recorded, DEFAULT_LIMITS)).toMatchObject({ budgetUsd: DEFAULT_LIMITS.budgetUsd, maxTurns: 5 });
    expect(limitsProblem({ ...DEFAULT_LIMITS, maxTurnsPerAgent: -1 })).toMatch(/maxTurnsPerAgent is -1/);
    expect(limitsProblem({ ...DEFAULT_LIMITS, maxTurnsPerAgent: 1 })).toBeUndefined();
    expect(limitsProblem({ ...DEFAULT_LIMITS, budgetUsd: 0 })).toMatch(/budgetUsd/);
    expect(limitsProblem(DEFAULT_LIMITS)).toBeUndefined();
  });
});
