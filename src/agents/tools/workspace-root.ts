import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, unlinkSync, type Stats } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { ToolInputError } from './tool.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = constants;

/** An open file of the workspace, checked: a regular file inside it with no other name. */
export interface OpenFile {
  fd: number;
  full: string;
  stats: Stats;
}

/**
 * The directory the workspace tools are confined to (DESIGN §8). A path is resolved without
 * following a symbolic link at any step; only regular files and directories are used; a file
 * with another hard link (which may be outside) is refused. Files are opened with O_NOFOLLOW
 * and O_NONBLOCK (a FIFO swapped in cannot block), then checked again through the descriptor,
 * so a link swapped in between the check and the use is caught.
 */
export class Workspace {
  readonly root: string;

  constructor(root: string) {
    this.root = realpathSync(root);
  }

  /** The full path of an existing file or directory, every step checked. */
  existing(path: string): { full: string; stats: Stats } {
    const full = this.walk(path, true)!;
    const stats = lstatSync(full);
    this.checkKind(path, stats);
    return { full, stats };
  }

  /** An existing regular file, opened for reading. */
  openForReading(path: string): OpenFile {
    const { full, stats } = this.existing(path);
    if (stats.isDirectory()) throw new ToolInputError(`${path} is a directory; use list_files`);
    return this.verify(path, openSync(full, O_RDONLY | O_NOFOLLOW | O_NONBLOCK), full, false);
  }

  /** A file opened for writing (created with its parent directories when missing); not yet truncated. */
  openForWriting(path: string): OpenFile {
    const full = this.walk(path, false, true)!;
    let existed = true;
    try {
      this.checkKind(path, lstatSync(full));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      existed = false;
    }
    return this.verify(path, openSync(full, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o644), full, !existed);
  }

  /** A path relative to the workspace, as tools show it. */
  show(full: string): string {
    return relative(this.root, full) || '.';
  }

  /**
   * Each step of `path` from the root, with lstat: a link at any step is refused. With `mustExist`
   * false the last steps may be missing; with `makeParents` the missing directories are made.
   */
  private walk(path: string, mustExist: boolean, makeParents = false): string {
    const parts = this.checkShape(path).split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
    let full = this.root;
    for (const [i, part] of parts.entries()) {
      full = join(full, part);
      const last = i === parts.length - 1;
      let stats: Stats;
      try {
        stats = lstatSync(full);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        if (mustExist) throw new ToolInputError(`${path}: no such file or directory in the workspace`);
        if (!last && makeParents) mkdirSync(full);
        continue;
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

  /** Checks an opened file through its descriptor: a regular file, one link, and really inside the workspace. */
  private verify(path: string, fd: number, full: string, created: boolean): OpenFile {
    try {
      const stats = fstatSync(fd);
      this.checkKind(path, stats);
      const real = realOf(fd, full);
      if (real !== this.root && !real.startsWith(this.root + sep)) {
        if (created) unlinkSync(real);
        throw new ToolInputError(`${path}: leads outside the workspace (a link was swapped in); refused`);
      }
      return { fd, full, stats };
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  private checkShape(path: string): string {
    if (path === '') throw new ToolInputError('the path is empty');
    if (path.includes('\0')) throw new ToolInputError('the path contains a NUL character');
    if (isAbsolute(path)) throw new ToolInputError(`${path}: absolute paths are not allowed; give a path relative to the workspace`);
    if (path.split(/[\\/]/).includes('..')) throw new ToolInputError(`${path}: paths may not contain ".."`);
    return path;
  }
}

/** Where an open descriptor really is: Linux says it in /proc; elsewhere the path's real path. */
function realOf(fd: number, full: string): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return realpathSync(full);
  }
}
