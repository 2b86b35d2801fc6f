import { writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import * as core from '@actions/core';
import { reportHtml } from '../views/report-command.js';

/**
 * The Action's `report: true` (docs/report.md): the run's page, written beside its session and
 * uploaded as an artifact of its own that GitHub opens in the browser (not zipped: the Actions
 * toolkit's `skipArchive`, the artifact named as the file), linked from the job summary; the pull
 * request comment links to it too (its URL is returned). A page that cannot be uploaded (no
 * Actions runtime, as on a laptop) stays on disk, and a warning says so.
 */
export async function publishReport(session: string, cwd: string, name: string): Promise<string | undefined> {
  const file = join(dirname(session), `${name || basename(session).replace(/\.jsonl$/, '')}.html`);
  try {
    writeFileSync(file, reportHtml(session));
  } catch (e) {
    core.warning(`conclave could not write the run's page: ${(e as Error).message}`);
    return undefined;
  }
  core.setOutput('report-file', relative(cwd, file));
  let id: number | undefined;
  try {
    const { DefaultArtifactClient } = await import('@actions/artifact');
    ({ id } = await new DefaultArtifactClient().uploadArtifact(basename(file), [file], dirname(file), { skipArchive: true }));
  } catch (e) {
    core.warning(`conclave could not upload the run's page as an artifact (it is at ${relative(cwd, file)}): ${(e as Error).message}`);
    return undefined;
  }
  const { GITHUB_SERVER_URL = 'https://github.com', GITHUB_REPOSITORY, GITHUB_RUN_ID } = process.env;
  if (id === undefined || !GITHUB_REPOSITORY || !GITHUB_RUN_ID) return undefined;
  const url = `${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}/actions/runs/${GITHUB_RUN_ID}/artifacts/${id}`;
  core.setOutput('report-url', url);
  try {
    await core.summary.addRaw(`\n📄 [The run's page](${url}): its timeline, spawn tree, every call, message and vote.\n`).write();
  } catch {
    // No job summary to write to: the output and the comment have the link.
  }
  return url;
}
