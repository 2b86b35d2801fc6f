import { existsSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { ToolInputError } from './tool.js';

/**
 * The directory the workspace tools are confined to. A path is refused when it is absolute,
 * contains `..`, or leads outside through a symbolic link.
 */
export class Workspace {
  readonly root: string;

  constructor(root: string) {
    this.root = realpathSync(root);
  }

  /** The real path of an existing file or directory inside the workspace. */
  existing(path: string): string {
    const full = join(this.root, this.checkShape(path));
    if (!existsSync(full)) throw new ToolInputError(`${path}: no such file or directory in the workspace`);
    return this.inside(path, realpathSync(full));
  }

  /** Where to write `path`: its parent's real path must be inside the workspace, and so must the file if it is a link. */
  writable(path: string): string {
    const full = join(this.root, this.checkShape(path));
    let existing = dirname(full);
    while (!existsSync(existing)) existing = dirname(existing);
    this.inside(path, realpathSync(existing));
    if (existsSync(full)) this.inside(path, realpathSync(full));
    return full;
  }

  /** A path relative to the workspace, as tools show it. */
  show(full: string): string {
    return relative(this.root, full) || '.';
  }

  private checkShape(path: string): string {
    if (path === '') throw new ToolInputError('the path is empty');
    if (isAbsolute(path)) throw new ToolInputError(`${path}: absolute paths are not allowed; give a path relative to the workspace`);
    if (path.split(/[\\/]/).includes('..')) throw new ToolInputError(`${path}: paths may not contain ".."`);
    return path;
  }

  private inside(path: string, real: string): string {
    if (real !== this.root && !real.startsWith(this.root + sep)) {
      throw new ToolInputError(`${path}: leads outside the workspace through a symbolic link`);
    }
    return real;
  }
}
