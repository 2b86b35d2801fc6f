import { closeSync, constants, fstatSync, lstatSync, realpathSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { openDirectoryAt, openLast, openParents, realOf, removeCreated, type OpenDir } from './descriptor-walk.js';
import { ToolInputError } from './tool-error.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL } = constants;

export interface WorkspaceOptions {
  /** Files never written wherever they are (the session file given with --session, the response cache's file). */
  protect?: readonly string[];
  /** `edit_github_workflows: true`: .github/workflows/ may be written. */
  githubWorkflows?: boolean;
  /** Files that hold credentials of the run's providers: never read (a cloud auth action may leave one in the workspace). */
  secret?: readonly string[];
}

/** An open file of the workspace, checked: a regular file inside it with no other name. */
export interface OpenFile {
  fd: number;
  full: string;
  stats: Stats;
}

/**
 * The directory the workspace tools are confined to (docs/security.md, "The tool boundary"). A
 * path is resolved without following a symbolic link at any step; only regular files and
 * directories are used; a file with another hard link (which may be outside) is refused.
 * Files are read and written through a chain of open directories: each step is opened inside the
 * one before with O_NOFOLLOW, never by its path again, so a directory swapped for a link while
 * the tool works (renameat2 RENAME_EXCHANGE in a loop) is refused, not followed. The names
 * protected from writing are checked on the opened file's real path and the protected files on
 * its inode, and nothing is ever unlinked by a path that could have changed.
 */
export class Workspace {
  readonly root: string;
  private readonly protectedFiles: Set<string>;
  /** The credential files, by their real paths: grep skips them. */
  readonly secretFiles: ReadonlySet<string>;

  constructor(
    root: string,
    private readonly options: WorkspaceOptions = {},
  ) {
    this.root = realpathSync(root);
    this.protectedFiles = new Set(
      (options.protect ?? []).flatMap((file) => ['', '.lock', '.lock.takeover', '-journal', '-wal', '-shm'].map((suffix) => realFile(`${file}${suffix}`))),
    );
    this.secretFiles = new Set((options.secret ?? []).map(realFile));
  }

  /** The full path of an existing file or directory, every step checked; a credential file is refused. */
  existing(path: string): { full: string; stats: Stats } {
    const full = this.walk(path);
    if (this.secretFiles.has(full)) throw new ToolInputError(`${path} holds a credential of this run's model provider; the workspace tools do not read it`);
    const stats = lstatSync(full);
    this.checkKind(path, stats);
    return { full, stats };
  }

  /** An existing regular file, opened for reading through its directories' descriptors. */
  openForReading(path: string): OpenFile {
    this.checkReadable(path);
    const parts = this.partsOf(path);
    if (parts.length === 0) throw new ToolInputError(`${path} is a directory; use list_files`);
    const name = parts.at(-1)!;
    const dir = openParents(this.root, path, parts, false);
    try {
      const fd = openLast(path, dir, name, O_RDONLY);
      try {
        const file = this.verify(path, fd, join(dir.full, name));
        if (file.stats.isDirectory()) throw new ToolInputError(`${path} is a directory; use list_files`);
        this.checkReadable(relative(this.root, realOf(fd, file.full)), path);
        if (this.isOneOf(this.secretFiles, file))
          throw new ToolInputError(`${path} holds a credential of this run's model provider; the workspace tools do not read it`);
        return file;
      } catch (e) {
        closeSync(fd);
        throw e;
      }
    } finally {
      closeSync(dir.fd);
    }
  }

  /** A file opened for writing (created with its parent directories when missing); not yet truncated. */
  openForWriting(path: string): OpenFile {
    this.checkWritable(path);
    const parts = this.partsOf(path);
    if (parts.length === 0) throw new ToolInputError(`${path} is a directory`);
    const name = parts.at(-1)!;
    const dir = openParents(this.root, path, parts, true);
    const full = join(dir.full, name);
    try {
      let created = true;
      let fd: number;
      try {
        fd = openLast(path, dir, name, O_WRONLY | O_CREAT | O_EXCL, 0o644);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        created = false;
        fd = openLast(path, dir, name, O_WRONLY);
      }
      try {
        const file = this.verify(path, fd, full);
        this.checkWritableResolved(path, file);
        return file;
      } catch (e) {
        if (created) removeCreated(dir, name, fd);
        closeSync(fd);
        throw e;
      }
    } finally {
      closeSync(dir.fd);
    }
  }

  /** An existing directory, opened through its parents' descriptors (list_files walks below it by descriptor); the caller closes it. */
  openDirectory(path: string): OpenDir {
    return openDirectoryAt(this.root, path, this.partsOf(path));
  }

  /** The steps of `path` below the root (grep's worker opens them one inside the other). */
  stepsOf(path: string): string[] {
    return this.partsOf(path);
  }

  /** A path relative to the workspace, as tools show it. */
  show(full: string): string {
    return relative(this.root, full) || '.';
  }

  /**
   * Each step of `path` from the root, with lstat: a link at any step is refused (for listing and
   * searching; files are opened through their directories' descriptors instead).
   */
  private walk(path: string): string {
    const parts = this.partsOf(path);
    let full = this.root;
    for (const [i, part] of parts.entries()) {
      full = join(full, part);
      const last = i === parts.length - 1;
      let stats: Stats;
      try {
        stats = lstatSync(full);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        throw new ToolInputError(`${path}: no such file or directory in the workspace`);
      }
      const what = last ? path : `${path}: ${this.show(full)}`;
      if (stats.isSymbolicLink()) throw new ToolInputError(`${what} is a symbolic link; the workspace tools do not follow links`);
      if (!last && !stats.isDirectory()) throw new ToolInputError(`${what} is not a directory`);
    }
    return full;
  }

  private checkKind(path: string, stats: Stats): void {
    if (stats.isSymbolicLink()) throw new ToolInputError(`${path} is a symbolic link; the workspace tools do not follow links`);
    if (!stats.isFile() && !stats.isDirectory()) throw new ToolInputError(`${path} is not a regular file or directory (a FIFO, socket or device); refused`);
    if (stats.isFile() && stats.nlink > 1) throw new ToolInputError(`${path} has ${stats.nlink} hard links, which may reach outside the workspace; refused`);
  }

  /** Checks an opened file through its descriptor: a regular file or directory, one link, and really inside the workspace. */
  private verify(path: string, fd: number, full: string): OpenFile {
    const stats = fstatSync(fd);
    this.checkKind(path, stats);
    if (!isWithin(this.root, realOf(fd, full))) throw new ToolInputError(`${path}: leads outside the workspace (a link was swapped in); refused`);
    return { fd, full, stats };
  }

  /**
   * The protected names checked again on where the opened file really is (a directory renamed
   * into place after the path was checked), and the run's own files compared by inode.
   */
  private checkWritableResolved(path: string, file: OpenFile): void {
    if (file.stats.isDirectory()) throw new ToolInputError(`${path} is a directory`);
    const real = realOf(file.fd, file.full);
    this.checkWritable(relative(this.root, real) || '.', path);
    if (this.protectedFiles.has(file.full) || this.protectedFiles.has(real) || this.isOneOf(this.protectedFiles, file))
      throw new ToolInputError(
        `${path} is one of this run's own files (its session file, the response cache, or their lock or journal); the workspace tools do not write there`,
      );
  }

  /** Whether an open file is one of `files` (compared by device and inode: no path of it counts). */
  private isOneOf(files: ReadonlySet<string>, file: OpenFile): boolean {
    for (const other of files) {
      try {
        const stats = statSync(other);
        if (stats.ino === file.stats.ino && stats.dev === file.stats.dev) return true;
      } catch {
        // not there: cannot be this one
      }
    }
    return false;
  }

  /**
   * What the tools never write (docs/security.md): git's own files (a hook or `core.fsmonitor` in
   * `.git/config` runs with the job's next git command), conclave's (the session, the cache, the
   * locks), and the repository's GitHub workflows unless the workflow allows it.
   */
  private checkWritable(path: string, shown = path): void {
    const parts = this.partsOf(path).map((p) => p.toLowerCase());
    const refuse = (why: string) => {
      throw new ToolInputError(`${shown}: ${why}; the workspace tools do not write there`);
    };
    if (parts.some((p) => p === '.git')) refuse("it is inside a .git directory (git's configuration and hooks run code)");
    if (parts.some((p) => p === '.conclave')) refuse("it is inside .conclave (conclave's sessions, cache and locks)");
    if (!this.options.githubWorkflows && parts[0] === '.github' && parts[1] === 'workflows')
      refuse('it is a GitHub workflow (set edit_github_workflows: true in the workflow to allow it)');
  }

  /**
   * What the tools never read: git's own files. `actions/checkout` keeps the job's token in
   * `.git/config` (an `extraheader`), which a model could quote into a comment or an output.
   */
  checkReadable(path: string, shown = path): void {
    const parts = this.partsOf(path).map((p) => p.toLowerCase());
    if (parts.includes('.git'))
      throw new ToolInputError(
        `${shown}: it is inside a .git directory (its config may hold the job's token); the workspace tools do not read there: run git through run_command`,
      );
  }

  /** The steps of a path (its shape checked first), without empty and `.` steps. */
  private partsOf(path: string): string[] {
    return this.checkShape(path)
      .split(/[\\/]+/)
      .filter((p) => p !== '' && p !== '.');
  }

  private checkShape(path: string): string {
    if (path === '') throw new ToolInputError('the path is empty');
    if (path.includes('\0')) throw new ToolInputError('the path contains a NUL character');
    if (isAbsolute(path)) throw new ToolInputError(`${path}: absolute paths are not allowed; give a path relative to the workspace`);
    if (path.split(/[\\/]/).includes('..')) throw new ToolInputError(`${path}: paths may not contain ".."`);
    return path;
  }
}

/** Whether `path` is `root` or below it: compared with the separator, so that a sibling `/ws-evil` is not inside `/ws`. */
export function isWithin(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** A file's path with its directory's links resolved, as `walk` builds paths under the real root. */
function realFile(file: string): string {
  try {
    return join(realpathSync(dirname(resolve(file))), basename(file));
  } catch {
    return resolve(file);
  }
}
