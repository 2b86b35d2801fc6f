/** GitHub did not answer, or answered an error: the caller fails closed. */
export class GitHubUnavailable extends Error {}

/** How long one request to GitHub may take before it counts as no answer. */
export const GITHUB_TIMEOUT_MS = 10_000;

/**
 * The REST API of GitHub (or of a GitHub Enterprise Server) at GITHUB_API_URL, read with a token:
 * the few GETs a vote is checked with (docs/github-action.md: votes from people). Plain fetch,
 * so that `conclave resume --vote` loads no Octokit. A 404 is an answer (no such member, no such
 * collaborator); any other failure is GitHubUnavailable.
 */
export class GitHubApi {
  constructor(
    private readonly base: string,
    private readonly token: string,
    private readonly timeoutMs = GITHUB_TIMEOUT_MS,
  ) {}

  static fromEnv(env: NodeJS.ProcessEnv): GitHubApi | string {
    const token = env.GITHUB_TOKEN?.trim();
    if (!token) return 'a vote is checked with GitHub, and GITHUB_TOKEN is not set (in the Action: the github-token input)';
    const base = (env.GITHUB_API_URL?.trim() || 'https://api.github.com').replace(/\/+$/, '');
    if (!/^https?:\/\//.test(base)) return `GITHUB_API_URL must be an http or https URL; found ${JSON.stringify(base)}`;
    return new GitHubApi(base, token);
  }

  /** The JSON object of GET `path`, or undefined for a 404. */
  async get(path: string): Promise<Record<string, unknown> | undefined> {
    const body = await this.json(path);
    if (body === undefined || (body !== null && typeof body === 'object' && !Array.isArray(body))) return body as Record<string, unknown> | undefined;
    throw new GitHubUnavailable(`GitHub answered GET ${path} with something that is not a JSON object`);
  }

  /** The JSON list of GET `path` (one page), or undefined for a 404. */
  async list(path: string): Promise<unknown[] | undefined> {
    const body = await this.json(path);
    if (body === undefined || Array.isArray(body)) return body;
    throw new GitHubUnavailable(`GitHub answered GET ${path} with something that is not a JSON list`);
  }

  private async json(path: string): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, {
        headers: { accept: 'application/vnd.github+json', authorization: `Bearer ${this.token}`, 'x-github-api-version': '2022-11-28' },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      const why = (e as Error).name === 'TimeoutError' ? `no answer in ${this.timeoutMs / 1000} s` : `${(e as Error).message}${causeOf(e)}`;
      throw new GitHubUnavailable(`GitHub could not be asked (GET ${path}: ${why})`);
    }
    const text = await response.text().catch(() => '');
    if (response.status === 404) return undefined;
    if (!response.ok) throw new GitHubUnavailable(`GitHub answered GET ${path} with ${response.status}${messageOf(text)}`);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new GitHubUnavailable(`GitHub answered GET ${path} with something that is not JSON`);
    }
  }
}

/** Permissions that may write to a repository (GitHub's `permission` says `write` for maintain too). */
const MAY_WRITE: ReadonlySet<string> = new Set(['admin', 'maintain', 'write']);

/**
 * What GitHub says a person may do in the repository (`GET …/collaborators/{login}/permission`,
 * asked with the job's token, never the comment's `author_association`): the level, `none` for
 * no collaborator, and whether it is write or above. GitHubUnavailable when GitHub cannot say.
 */
export async function permissionOf(api: GitHubApi, repository: string, login: string): Promise<{ level: string; mayWrite: boolean }> {
  const permission = (await api.get(`/repos/${repository}/collaborators/${encodeURIComponent(login)}/permission`))?.permission;
  const level = typeof permission === 'string' ? permission : 'none';
  return { level, mayWrite: MAY_WRITE.has(level) };
}

function causeOf(e: unknown): string {
  const cause = (e as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === 'string' ? ` (${cause.code})` : '';
}

function messageOf(text: string): string {
  try {
    const message = (JSON.parse(text) as { message?: unknown }).message;
    return typeof message === 'string' ? `: ${message.slice(0, 200)}` : '';
  } catch {
    return '';
  }
}
