/**
 * A page of conclave's docs as a link a person can open: in a step of the Action, GitHub names the
 * action's own repository and ref (GITHUB_ACTION_REPOSITORY, GITHUB_ACTION_REF); elsewhere, the
 * docs' path as it stands in conclave's repository.
 */
export function docsLink(env: NodeJS.ProcessEnv, path: string): string {
  const repository = env.GITHUB_ACTION_REPOSITORY?.trim();
  if (!repository || !/^[\w.-]+\/[\w.-]+$/.test(repository)) return path;
  const server = (env.GITHUB_SERVER_URL?.trim() || 'https://github.com').replace(/\/+$/, '');
  const ref = env.GITHUB_ACTION_REF?.trim() || 'HEAD';
  return `${server}/${repository}/blob/${encodeURI(ref)}/${path}`;
}
