import { writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import pkg from '../../../package.json' with { type: 'json' };
import type { Finding } from '../../session/summary.js';

const LEVEL = { notice: 'note', warning: 'warning', failure: 'error' } as const;

/** Where a reader of code scanning learns what conclave is. */
const INFORMATION_URI = 'https://www.npmjs.com/package/conclave';

/**
 * The run's findings as SARIF 2.1.0, for code scanning (`github/codeql-action/upload-sarif`).
 * Paths are relative to the repository (GITHUB_WORKSPACE in Actions, else the current directory).
 */
export function sarifOf(findings: readonly Finding[], workspace: string, root = process.env.GITHUB_WORKSPACE ?? process.cwd()): object {
  const levels = [...new Set(findings.map((f) => f.level))];
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'conclave',
            version: pkg.version,
            informationUri: INFORMATION_URI,
            rules: levels.map((level) => ({
              id: `conclave/${level}`,
              name: `Agent${level[0]!.toUpperCase()}${level.slice(1)}`,
              shortDescription: { text: `A ${level} an agent recorded` },
              fullDescription: {
                text:
                  `A finding of level ${level} that an agent of a conclave workflow recorded with its annotate tool, about lines of a file of the ` +
                  `repository.`,
              },
              help: {
                text:
                  `An agent of a conclave workflow recorded this ${level} while it read the code. Its message says what it found and what to do; ` +
                  `conclave show SESSION prints the run that found it.`,
                markdown:
                  `An agent of a [conclave](${INFORMATION_URI}) workflow recorded this **${level}** while it read the code. Its message says what it ` +
                  `found and what to do; \`conclave show SESSION\` prints the run that found it.`,
              },
              defaultConfiguration: { level: LEVEL[level] },
            })),
          },
        },
        results: findings.map((f) => ({
          ruleId: `conclave/${f.level}`,
          level: LEVEL[f.level],
          message: { text: f.title ? `${f.title}: ${f.message}` : f.message },
          locations: [
            {
              physicalLocation: {
                artifactLocation: { uri: repoPath(workspace, f.path, root).split('/').map(encodeURIComponent).join('/'), uriBaseId: '%SRCROOT%' },
                region: { startLine: f.line, endLine: f.end_line },
              },
            },
          ],
          properties: { agent: f.agent },
        })),
      },
    ],
  };
}

/** A workspace path as the repository names it (forward slashes); SARIF's `uri` is this, percent-encoded per segment. */
export function repoPath(workspace: string, path: string, root = process.env.GITHUB_WORKSPACE ?? process.cwd()): string {
  return relative(resolve(root), resolve(workspace, path)).split('\\').join('/');
}

export function writeSarif(file: string, findings: readonly Finding[], workspace: string): void {
  writeFileSync(file, `${JSON.stringify(sarifOf(findings, workspace), null, 2)}\n`);
}
