import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  unlinkSync,
  type Dirent,
  type Stats,
} from 'node:fs';
import { join, relative } from 'node:path';
import { ToolInputError } from './tool-error.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;

/**
 * Linux names an open directory by its descriptor: `/proc/self/fd/N/name` is `name` inside the
 * directory N is, wherever that directory now is and whatever link now stands at its old path
 * (openat(2) without the call). Elsewhere a directory is named by its path.
 */
const BY_DESCRIPTOR = existsSync('/proc/self/fd');

/** A directory of the workspace held open: what is below it is reached through it. */
export interface OpenDir {
  fd: number;
  /** Its path as the tool walked it (for messages and the protected-files check). */
  full: string;
}

/**
 * The directories above the last of `parts` (the steps of `path` below `root`), each opened
 * inside the one before without following a link; with `makeParents`, missing ones are made
 * there. The caller closes the last. A directory swapped for a link while this walks is refused.
 */
export function openParents(root: string, path: string, parts: readonly string[], makeParents: boolean): OpenDir {
  let dir: OpenDir = { fd: openSync(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW), full: root };
  try {
    for (const part of parts.slice(0, -1)) {
      const full = join(dir.full, part);
      const fd = openDirectory(`${path}: ${relative(root, full) || '.'}`, path, dir, part, makeParents);
      closeSync(dir.fd);
      dir = { fd, full };
    }
    return dir;
  } catch (e) {
    closeSync(dir.fd);
    throw e;
  }
}

function openDirectory(step: string, path: string, dir: OpenDir, part: string, makeParents: boolean): number {
  const at = inside(dir, part);
  try {
    return openSync(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      if (!makeParents) throw new ToolInputError(`${path}: no such file or directory in the workspace`);
      try {
        mkdirSync(at);
      } catch (made) {
        if ((made as NodeJS.ErrnoException).code !== 'EEXIST') throw made;
      }
      return openDirectory(step, path, dir, part, false);
    }
    if (code === 'ENOTDIR' || code === 'ELOOP') throw notFollowed(step, at, 'is not a directory');
    throw e;
  }
}

/** The directory `parts` name below `root`, each step opened inside the one before without following a link; the caller closes it. */
export function openDirectoryAt(root: string, path: string, parts: readonly string[]): OpenDir {
  return openParents(root, path, [...parts, ''], false);
}

/**
 * What a listing or a search walks (list_files, grep): the entries of an open directory, sorted,
 * read through its descriptor, so that a directory swapped for a link while the walk goes on
 * is never entered: each child is opened inside its parent's descriptor without following a link.
 */
export function entriesOf(dir: OpenDir): Dirent[] {
  return readdirSync(BY_DESCRIPTOR ? `/proc/self/fd/${dir.fd}` : dir.full, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
}

/** `name` inside `dir` opened with `flags` and never through a link; undefined when it is gone, or no longer of the kind the flags ask. */
export function openChild(dir: OpenDir, name: string, flags: number): number | undefined {
  try {
    return openSync(inside(dir, name), flags | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENXIO') return undefined;
    throw e;
  }
}

/** A subdirectory of `dir`, held open (see openChild). */
export function openChildDirectory(dir: OpenDir, name: string): OpenDir | undefined {
  const fd = openChild(dir, name, O_RDONLY | O_DIRECTORY);
  return fd === undefined ? undefined : { fd, full: join(dir.full, name) };
}

/** What `name` inside `dir` is, without following a link (undefined when it is gone). */
export function statChild(dir: OpenDir, name: string): Stats | undefined {
  try {
    return lstatSync(inside(dir, name));
  } catch {
    return undefined;
  }
}

/** The last step of a path, opened inside its directory without following a link (O_NONBLOCK: a FIFO swapped in cannot block). */
export function openLast(path: string, dir: OpenDir, name: string, flags: number, mode?: number): number {
  const at = inside(dir, name);
  try {
    return openSync(at, flags | O_NOFOLLOW | O_NONBLOCK, mode);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ToolInputError(`${path}: no such file or directory in the workspace`);
    if (code === 'ELOOP') throw notFollowed(path, at, 'cannot be opened');
    if (code === 'EISDIR') throw new ToolInputError(`${path} is a directory`);
    if (code === 'ENXIO') throw new ToolInputError(`${path} is not a regular file or directory (a FIFO, socket or device); refused`);
    throw e;
  }
}

/** The error for a step that could not be opened as wanted: a link is named as one. */
function notFollowed(what: string, at: string, otherwise: string): ToolInputError {
  let link = false;
  try {
    link = lstatSync(at).isSymbolicLink();
  } catch {
    // gone again: said as not what was wanted
  }
  return new ToolInputError(link ? `${what} is a symbolic link; the workspace tools do not follow links` : `${what} ${otherwise}`);
}

/** Removes a file just created and then refused, through its directory, only while the name is still that file. */
export function removeCreated(dir: OpenDir, name: string, fd: number): void {
  try {
    const at = inside(dir, name);
    const now = lstatSync(at);
    const mine = fstatSync(fd);
    if (now.ino === mine.ino && now.dev === mine.dev) unlinkSync(at);
  } catch {
    // gone or changed: left as it is
  }
}

/** `name` inside an open directory: through its descriptor where the system allows it. */
function inside(dir: OpenDir, name: string): string {
  return BY_DESCRIPTOR ? `/proc/self/fd/${dir.fd}/${name}` : join(dir.full, name);
}

/** Where an open descriptor really is: Linux says it in /proc; elsewhere the path's real path. */
export function realOf(fd: number, full: string): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return realpathSync(full);
  }
}
