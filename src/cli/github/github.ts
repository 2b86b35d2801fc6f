import type { Diagnostic } from '../../workflow/diagnostic.js';
import { repoPath } from './sarif.js';

/** GitHub Actions' workflow commands and files, used when conclave runs as a step (GITHUB_ACTIONS=true). */

export function inGitHubActions(): boolean {
  return process.env.GITHUB_ACTIONS === 'true';
}

/** A property of a workflow command (`file=…`): %, CR, LF, `:` and `,` escaped. */
function property(value: string): string {
  return value.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/:/g, '%3A').replace(/,/g, '%2C');
}

/** A workflow command's message: %, CR and LF escaped. */
function data(value: string): string {
  return value.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/**
 * `::error file=…,line=…,col=…,title=…::message`: GitHub shows it, under its title, on the line of the file, which it names
 * relative to the repository (GITHUB_WORKSPACE), whatever directory conclave runs in (the Action's
 * `working-directory`).
 */
export function annotation(d: Diagnostic, title = d.severity === 'warning' ? 'conclave workflow warning' : 'conclave workflow error'): string {
  const level = d.severity === 'warning' ? 'warning' : 'error';
  return `::${level} file=${property(repoPath(process.cwd(), d.file))},line=${d.line},col=${d.col},title=${property(title)}::${data(d.message)}\n`;
}

/** A finding as an annotation on its lines: notice, warning, or error for a failure. */
export function findingAnnotation(f: { path: string; line: number; end_line: number; level: string; title: string | null; message: string }): string {
  const level = f.level === 'failure' ? 'error' : f.level;
  const title = f.title ? `,title=${property(f.title)}` : '';
  return `::${level} file=${property(f.path)},line=${f.line},endLine=${f.end_line}${title}::${data(f.message)}\n`;
}

/** `::error::message`, for a failure that belongs to no line of a file (a missing file, a bad flag). */
export function errorAnnotation(message: string): string {
  return `::error::${data(message)}\n`;
}

/** `::warning::message`, for what went wrong beside the run (a step file that cannot be written). */
export function warningAnnotation(message: string): string {
  return `::warning::${data(message)}\n`;
}

/** Tells GitHub to hide a value in every log line from here on. */
export function addMask(value: string): string {
  return value
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    .map((line) => `::add-mask::${data(line)}\n`)
    .join('');
}

export function group(title: string): string {
  return `::group::${data(title)}\n`;
}

export const END_GROUP = '::endgroup::\n';
