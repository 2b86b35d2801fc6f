import { execFileSync } from 'node:child_process';
import { closeSync, linkSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isWithin, Workspace } from '../../src/agents/tools/workspace-root.js';
import { ToolInputError } from '../../src/agents/tools/tool.js';

function workspace(options?: ConstructorParameters<typeof Workspace>[1]) {
  const parent = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-ws-')));
  const root = join(parent, 'ws');
  mkdirSync(root);
  writeFileSync(join(root, 'a.txt'), 'A');
  mkdirSync(join(root, 'dir'));
  writeFileSync(join(root, 'dir', 'b.txt'), 'B');
  return { parent, root, ws: new Workspace(root, options) };
}

const refuses = (f: () => unknown, message: string | RegExp) => {
  expect(f).toThrow(ToolInputError);
  expect(f).toThrow(message);
};

describe('isWithin', () => {
  it('holds the root and what is below it, not a sibling whose name starts with the root', () => {
    expect(isWithin('/w/ws', '/w/ws')).toBe(true);
    expect(isWithin('/w/ws', '/w/ws/a')).toBe(true);
    expect(isWithin('/w/ws', '/w/ws-evil/a')).toBe(false);
    expect(isWithin('/w/ws', '/w/wsa')).toBe(false);
    expect(isWithin('/w/ws', '/w')).toBe(false);
    expect(isWithin('/', '/etc')).toBe(true);
  });
});

describe('the workspace', () => {
  it('reads a file and a directory inside it, shown relative to the root', () => {
    const { root, ws } = workspace();
    const file = ws.openForReading('./dir//b.txt');
    expect(readFileSync(file.fd, 'utf8')).toBe('B');
    closeSync(file.fd);
    expect(file.full).toBe(join(root, 'dir', 'b.txt'));
    expect(ws.show(file.full)).toBe(join('dir', 'b.txt'));
    expect(ws.show(root)).toBe('.');
    expect(ws.existing('dir').stats.isDirectory()).toBe(true);
    expect(ws.existing('.').full).toBe(root);
  });

  it('refuses bad paths with a sentence naming them', () => {
    const { ws } = workspace();
    refuses(() => ws.openForReading(''), 'the path is empty');
    refuses(() => ws.openForReading('a\0.txt'), 'the path contains a NUL character');
    refuses(() => ws.openForReading('/etc/passwd'), '/etc/passwd: absolute paths are not allowed');
    refuses(() => ws.openForReading('dir/../../x'), 'dir/../../x: paths may not contain ".."');
    refuses(() => ws.openForReading('dir\\..\\x'), 'paths may not contain ".."');
    refuses(() => ws.openForReading('missing.txt'), 'missing.txt: no such file or directory in the workspace');
    refuses(() => ws.openForReading('dir'), 'dir is a directory; use list_files');
    refuses(() => ws.openForReading('a.txt/x'), 'a.txt/x: a.txt is not a directory');
  });

  it('follows no link, at any step', () => {
    const { parent, root, ws } = workspace();
    mkdirSync(join(parent, 'outside'));
    writeFileSync(join(parent, 'outside', 'loot'), 'x');
    symlinkSync(join(parent, 'outside'), join(root, 'link'));
    symlinkSync(join(root, 'a.txt'), join(root, 'alias.txt'));
    refuses(() => ws.openForReading('link/loot'), 'link/loot: link is a symbolic link');
    refuses(() => ws.openForReading('alias.txt'), 'alias.txt is a symbolic link');
    refuses(() => ws.openForWriting('alias.txt'), 'alias.txt is a symbolic link');
    refuses(() => ws.openForWriting('link/new'), 'link/new: link is a symbolic link');
    refuses(() => ws.existing('link'), 'link is a symbolic link');
  });

  it('refuses a file with another hard link, and a FIFO', () => {
    const { parent, root, ws } = workspace();
    writeFileSync(join(parent, 'secret'), 's');
    linkSync(join(parent, 'secret'), join(root, 'hard'));
    refuses(() => ws.openForReading('hard'), 'hard has 2 hard links, which may reach outside the workspace; refused');
    execFileSync('mkfifo', [join(root, 'pipe')]);
    refuses(() => ws.openForReading('pipe'), 'pipe is not a regular file or directory (a FIFO, socket or device); refused');
    refuses(() => ws.openForWriting('pipe'), 'not a regular file or directory');
  });

  it('writes a new file, making its parents, and an existing one', () => {
    const { root, ws } = workspace();
    const created = ws.openForWriting('new/deeper/c.txt');
    writeSync(created.fd, 'C');
    closeSync(created.fd);
    expect(readFileSync(join(root, 'new', 'deeper', 'c.txt'), 'utf8')).toBe('C');
    const existing = ws.openForWriting('a.txt');
    expect(existing.stats.size).toBe(1);
    closeSync(existing.fd);
  });

  it('never writes git, conclave or GitHub workflow files, nor its own files wherever they are', () => {
    const { ws } = workspace({ protect: [] });
    refuses(
      () => ws.openForWriting('.git/config'),
      ".git/config: it is inside a .git directory (git's configuration and hooks run code); the workspace tools do not write there",
    );
    refuses(() => ws.openForWriting('sub/.GIT/hooks/x'), 'inside a .git directory');
    refuses(() => ws.openForWriting('.conclave/sessions/x.jsonl'), "inside .conclave (conclave's sessions, cache and locks)");
    refuses(() => ws.openForWriting('.github/workflows/ci.yml'), 'it is a GitHub workflow (set edit_github_workflows: true in the workflow to allow it)');
    refuses(() => ws.openForReading('.git/config'), ".git/config: it is inside a .git directory (its config may hold the job's token)");
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-ws-')));
    const other = new Workspace(root, { githubWorkflows: true, protect: [join(root, 'run.jsonl')] });
    closeSync(other.openForWriting('.github/workflows/ci.yml').fd);
    closeSync(other.openForWriting('.github/other.yml').fd);
    refuses(() => other.openForWriting('run.jsonl'), "run.jsonl is one of this run's own files");
    for (const suffix of ['.lock', '.lock.takeover']) refuses(() => other.openForWriting(`run.jsonl${suffix}`), "this run's own files");
    closeSync(other.openForWriting('run.jsonl.txt').fd);
  });

  it("protects the cache's journal files beside it", () => {
    const parent = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-ws-')));
    const ws = new Workspace(parent, { protect: [join(parent, 'cache.sqlite')] });
    for (const name of ['cache.sqlite', 'cache.sqlite-journal', 'cache.sqlite-wal', 'cache.sqlite-shm'])
      refuses(() => ws.openForWriting(name), "this run's own files");
  });

  it("never reads the run's credential files, by name or through the file they are", () => {
    const { root } = workspace();
    writeFileSync(join(root, 'key.json'), '{"private_key": "x"}');
    const ws = new Workspace(root, { secret: [join(root, 'key.json')] });
    const credential = "key.json holds a credential of this run's model provider; the workspace tools do not read it";
    refuses(() => ws.openForReading('key.json'), credential);
    refuses(() => ws.openForReading('./key.json'), credential);
    refuses(() => ws.existing('key.json'), credential);
    expect(ws.secretFiles).toEqual(new Set([join(root, 'key.json')]));
    // Another file of the same name elsewhere is not it.
    mkdirSync(join(root, 'sub'));
    writeFileSync(join(root, 'sub', 'key.json'), '{}');
    const other = ws.openForReading('sub/key.json');
    closeSync(other.fd);
    expect(other.full).toBe(join(root, 'sub', 'key.json'));
  });

  it("writes none of the run's own files, found by inode whatever the path that reaches them", () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-ws-')));
    writeFileSync(join(root, 'run.jsonl'), '');
    const ws = new Workspace(root, { protect: [join(root, 'run.jsonl')] });
    refuses(() => ws.openForWriting('./run.jsonl'), "run.jsonl is one of this run's own files (its session file, the response cache");
    // A file that exists, written in place: not removed, its text kept, when it is refused.
    writeFileSync(join(root, 'keep.txt'), 'kept');
    const kept = ws.openForWriting('keep.txt');
    closeSync(kept.fd);
    expect(readFileSync(join(root, 'keep.txt'), 'utf8')).toBe('kept');
  });

  it('says which step of a path is wrong, and what is missing', () => {
    const { ws } = workspace();
    refuses(() => ws.existing('dir/missing/x'), 'dir/missing/x: no such file or directory in the workspace');
    refuses(() => ws.existing('a.txt/x'), 'a.txt/x: a.txt is not a directory');
    refuses(() => ws.existing('a.txt/x'), ToolInputError);
    expect(ws.existing('dir/b.txt').full.endsWith(join('dir', 'b.txt'))).toBe(true);
    expect(ws.existing('dir/').stats.isDirectory()).toBe(true);
    expect(ws.stepsOf('./dir//b.txt')).toEqual(['dir', 'b.txt']);
    expect(ws.stepsOf('dir\\b.txt')).toEqual(['dir', 'b.txt']);
    refuses(() => ws.openForWriting('.'), '. is a directory');
    refuses(() => ws.openForWriting('dir'), 'dir is a directory');
    refuses(() => ws.openForReading('.'), '. is a directory; use list_files');
  });

  it('opens a directory by its steps; refuses a file or a link there', () => {
    const { parent, root, ws } = workspace();
    const dir = ws.openDirectory('dir');
    expect(dir.full).toBe(join(root, 'dir'));
    closeSync(dir.fd);
    mkdirSync(join(parent, 'outside'));
    symlinkSync(join(parent, 'outside'), join(root, 'link'));
    refuses(() => ws.openDirectory('link'), 'link is a symbolic link');
  });

  it('a GitHub workflow is refused by its place, not its name: .github/workflows only, in any case', () => {
    const { ws } = workspace();
    refuses(() => ws.openForWriting('.GitHub/Workflows/x.yml'), 'it is a GitHub workflow');
    closeSync(ws.openForWriting('.github/x.yml').fd);
    closeSync(ws.openForWriting('docs/.github/workflows/x.yml').fd);
    closeSync(ws.openForWriting('workflows/.github').fd);
  });
});
