import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { UsageError } from '../usage-error.js';

/**
 * The two versions an experiment compares (docs/experiments.md), each written whole into the
 * experiment's folder, so that its runs and a later `--recompute` read what was compared and
 * nothing that changed since: a git revision as `git archive` gives it, or the working tree as it
 * is (the files git tracks or would track: none it ignores).
 */
export interface Version {
  name: 'base' | 'head';
  /** As given: a revision, or "the working tree". */
  ref: string;
  /** The commit, or null for the working tree. */
  commit: string | null;
  /** Where its files are. */
  root: string;
}

/** The folder the repository's files are kept in (its top), for the current folder. */
export function repositoryTop(cwd: string): string {
  const top = git(['rev-parse', '--show-toplevel'], cwd);
  if (top.status !== 0) throw new UsageError(`conclave experiment compares two versions of a git repository, and ${cwd} is not in one`);
  return top.stdout.toString().trim();
}

/** The commit a revision names; a UsageError naming the revision when it names none. */
export function commitOf(ref: string, top: string): string {
  if (ref.startsWith('-') || ref.trim() === '') throw new UsageError(`"${ref}" is not a git revision`);
  const found = git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], top);
  if (found.status !== 0) throw new UsageError(`git knows no commit "${ref}" here: fetch it first (actions/checkout with fetch-depth: 0 fetches every branch)`);
  return found.stdout.toString().trim();
}

/** Writes a version's files into `into`; `ref` undefined: the working tree. */
export function writeVersion(name: Version['name'], ref: string | undefined, top: string, into: string): Version {
  mkdirSync(into, { recursive: true });
  if (ref === undefined) {
    const listed = git(['ls-files', '-z', '--cached', '--others', '--exclude-standard'], top);
    if (listed.status !== 0) throw new UsageError(`git could not list the working tree's files: ${listed.stderr.toString().trim()}`);
    for (const path of new Set(listed.stdout.toString().split('\0').filter(Boolean))) {
      if (path.split('/').some((part) => part === '.conclave' || part === 'node_modules')) continue;
      copyEntry(join(top, path), join(into, path));
    }
    return { name, ref: 'the working tree', commit: null, root: into };
  }
  const commit = commitOf(ref, top);
  const archive = git(['archive', '--format=tar', commit], top);
  if (archive.status !== 0) throw new UsageError(`git could not write ${ref}'s files: ${archive.stderr.toString().trim()}`);
  const unpacked = spawnSync('tar', ['-x', '-f', '-', '-C', into], { input: archive.stdout, maxBuffer: 1 << 30 });
  if (unpacked.status !== 0) throw new UsageError(`tar could not unpack ${ref}'s files: ${unpacked.stderr.toString().trim()}`);
  return { name, ref, commit, root: into };
}

/** One file of the working tree, a link kept as a link (a deleted file, still in the index, is left out). */
function copyEntry(from: string, to: string): void {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(from);
  } catch {
    return;
  }
  mkdirSync(dirname(to), { recursive: true });
  if (stat.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
  else if (stat.isFile() && !existsSync(to)) copyFileSync(from, to);
}

function git(args: string[], cwd: string) {
  return spawnSync('git', args, { cwd, maxBuffer: 1 << 30 });
}
