import { existsSync, lstatSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';

/**
 * Where `path` really is, when that is below `root` (both absolute): its deepest existing
 * ancestor's real path (every link followed) with the rest added; undefined when the real place
 * leaves `root`'s real path. A name that stays below the folder as written may leave it through
 * a link (`rec -> ../outside`): what conclave test reads, writes or copies is named by this.
 */
export function realBelow(root: string, path: string): string | undefined {
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
  } catch {
    return undefined;
  }
  const real = realOf(path);
  if (real === undefined) return undefined;
  const below = relative(realRoot, real);
  return below === '' || (!below.startsWith('..') && !isAbsolute(below)) ? real : undefined;
}

function realOf(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return undefined;
    // A link to nowhere (yet) is refused: what would be made through it could be anywhere.
    if (isLink(path)) return undefined;
    const parent = dirname(path);
    if (parent === path) return undefined;
    const realParent = realOf(parent);
    return realParent === undefined ? undefined : join(realParent, basename(path));
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

export type PathKind = 'workflow' | 'session' | 'workspace';

/**
 * A path a test file names (docs/testing-workflows.md), absolute as written: where it really is,
 * or why it cannot be used. What a case reads, and what --update writes, stay below `root` (the
 * folder conclave test runs in) both as written and where its links lead; a workflow is a YAML
 * file (any other, such as .git/config, is refused unread, so that no error quotes it); a
 * recording, which --update may write, is a session file and may not exist yet.
 */
export function testPath(root: string, written: string, kind: PathKind): string | { why: string } {
  const below = relative(root, written);
  if (below.startsWith('..') || isAbsolute(below)) return { why: 'is outside the current folder: keep it below it' };
  const full = realBelow(root, written);
  if (full === undefined) return { why: 'leaves the current folder through a link: keep it below it' };
  if (kind === 'workflow' && !/\.ya?ml$/.test(full)) return { why: 'is not a workflow file (.yml or .yaml)' };
  if (kind === 'session') return full.endsWith('.jsonl') ? full : { why: 'must be a session file (.jsonl), as conclave writes them' };
  if (!existsSync(full)) return { why: 'does not exist (a path relative to the test file)' };
  const folder = kind === 'workspace';
  return folder === statSync(full).isDirectory() ? full : { why: `must be a ${folder ? 'folder' : 'file'}` };
}

/** A file a case expects of its run (`files:`): a relative path that stays in the run's workspace as written (links are refused when it is read). */
export function staysInside(file: string): boolean {
  return file !== '' && !isAbsolute(file) && !file.includes('\\') && !file.includes('\0') && file.split('/').every((step) => step !== '..');
}
