import * as core from '@actions/core';
import * as github from '@actions/github';
import { inert } from '../github/pr-comment.js';

/**
 * Answers a `/conclave vote` comment that was refused, on its pull request: who, and why in one
 * sentence (inert: nothing in it notifies anyone but the voter, or links anything). The voter is
 * named, so that they learn it; a comment that cannot be written is a warning.
 */
export async function answerRefusedVote(token: string, why: string): Promise<void> {
  const { context } = github;
  const number = context.payload.issue?.number ?? context.payload.pull_request?.number;
  const login = (context.payload.comment ?? context.payload.review)?.user?.login;
  if (!token.trim() || typeof number !== 'number') return;
  const who = typeof login === 'string' && /^[A-Za-z0-9-]+$/.test(login) ? `@${login}: ` : '';
  const body = `${who}your vote was not recorded: ${inert(why.replace(/^vote refused, nothing recorded: /, ''))}.`;
  try {
    await github.getOctokit(token).rest.issues.createComment({ owner: context.repo.owner, repo: context.repo.repo, issue_number: number, body });
  } catch (e) {
    core.warning(`conclave could not answer the vote's comment on #${number}: ${(e as Error).message}`);
  }
}
