import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { realBelow, staysInside, testPath } from '../../src/cli/test/test-paths.js';

/**
 * The paths a test file names (src/cli/test/test-paths.ts, issue 79): below the folder conclave
 * test runs in as written and where their links lead, of the kind each must be.
 */
function tree(): { root: string; outside: string } {
  const top = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-paths-')));
  const root = join(top, 'project');
  const outside = join(top, 'outside');
  mkdirSync(join(root, 'rec'), { recursive: true });
  mkdirSync(join(root, 'ws'));
  mkdirSync(outside);
  writeFileSync(join(root, 'w.yml'), 'name: w\n');
  writeFileSync(join(root, 'w.yaml'), 'name: w\n');
  writeFileSync(join(root, 'notes.txt'), 'x');
  writeFileSync(join(outside, 'w.yml'), 'name: w\n');
  symlinkSync('../outside', join(root, 'out'));
  symlinkSync('rec', join(root, 'inner'));
  symlinkSync('../nowhere/at-all', join(root, 'dangling'));
  return { root, outside };
}

describe('where a path a test file names really is', () => {
  it('follows links: below the folder it is the real path; out of it, or a link to nowhere, undefined', () => {
    const { root, outside } = tree();
    expect(realBelow(root, root)).toBe(root);
    expect(realBelow(root, join(root, 'w.yml'))).toBe(join(root, 'w.yml'));
    expect(realBelow(root, join(root, 'inner', 'x.jsonl'))).toBe(join(root, 'rec', 'x.jsonl'));
    expect(realBelow(root, join(root, 'rec', 'new', 'deeper', 'x.jsonl'))).toBe(join(root, 'rec', 'new', 'deeper', 'x.jsonl'));
    expect(realBelow(root, join(root, 'out', 'w.yml'))).toBeUndefined();
    expect(realBelow(root, join(root, 'out'))).toBeUndefined();
    expect(realBelow(root, join(root, 'out', 'not-yet.jsonl'))).toBeUndefined();
    expect(realBelow(root, join(root, 'dangling'))).toBeUndefined();
    expect(realBelow(root, join(root, 'dangling', 'x.jsonl'))).toBeUndefined();
    expect(realBelow(root, outside)).toBeUndefined();
    expect(realBelow(join(root, 'missing-root'), join(root, 'w.yml'))).toBeUndefined();
    // A sibling whose name starts like the folder's is not below it.
    mkdirSync(`${root}-2`);
    expect(realBelow(root, `${root}-2`)).toBeUndefined();
  });

  it('checks each kind: a workflow is YAML, a recording a .jsonl that may not exist yet, a workspace a folder', () => {
    const { root } = tree();
    const at = (p: string) => join(root, p);
    expect(testPath(root, at('w.yml'), 'workflow')).toBe(at('w.yml'));
    expect(testPath(root, at('w.yaml'), 'workflow')).toBe(at('w.yaml'));
    expect(testPath(root, at('notes.txt'), 'workflow')).toEqual({ why: 'is not a workflow file (.yml or .yaml)' });
    writeFileSync(at('w.yml.bak'), 'name: w\n');
    expect(testPath(root, at('w.yml.bak'), 'workflow')).toEqual({ why: 'is not a workflow file (.yml or .yaml)' });
    expect(testPath(root, at('ws'), 'workflow')).toEqual({ why: 'is not a workflow file (.yml or .yaml)' });
    expect(testPath(root, at('gone.yml'), 'workflow')).toEqual({ why: 'does not exist (a path relative to the test file)' });
    expect(testPath(root, at('rec/new.session.jsonl'), 'session')).toBe(at('rec/new.session.jsonl'));
    expect(testPath(root, at('rec/new.txt'), 'session')).toEqual({ why: 'must be a session file (.jsonl), as conclave writes them' });
    expect(testPath(root, at('ws'), 'workspace')).toBe(at('ws'));
    expect(testPath(root, at('w.yml'), 'workspace')).toEqual({ why: 'must be a folder' });
    expect(testPath(root, at('rec'), 'workflow')).toEqual({ why: 'is not a workflow file (.yml or .yaml)' });
    expect(testPath(root, join(root, '..', 'outside', 'w.yml'), 'workflow')).toEqual({ why: 'is outside the current folder: keep it below it' });
    expect(testPath(root, '/etc/passwd.yml', 'workflow')).toEqual({ why: 'is outside the current folder: keep it below it' });
    expect(testPath(root, at('out/w.yml'), 'workflow')).toEqual({ why: 'leaves the current folder through a link: keep it below it' });
    expect(testPath(root, at('out/x.jsonl'), 'session')).toEqual({ why: 'leaves the current folder through a link: keep it below it' });
  });

  it("a file a case expects stays in the run's workspace as written", () => {
    for (const inside of ['a.txt', 'dir/a.txt', './a.txt', 'a..b.txt', '..a/b']) expect(staysInside(inside), inside).toBe(true);
    for (const out of ['', '../a', 'dir/../../a', '/etc/passwd', 'a\\..\\b', 'a\0b', '..']) expect(staysInside(out), JSON.stringify(out)).toBe(false);
  });
});
