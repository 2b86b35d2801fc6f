// npm run mutation:changed [-- BASE]: Stryker over the modules of stryker.config.json's `mutate`
// list that changed since BASE (default: the last tag on this branch), committed or not. The whole
// list takes about an hour on 2 cores; what one change touches takes minutes (docs/testing.md).
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const git = (...args) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
let base = process.argv[2];
if (!base) {
  try {
    base = git('describe', '--tags', '--abbrev=0');
  } catch {
    console.error('mutation:changed: this branch has no tag to compare with; name a base: npm run mutation:changed -- main~10');
    process.exit(2);
  }
}
try {
  git('rev-parse', '--verify', '--quiet', `${base}^{commit}`);
} catch {
  console.error(`mutation:changed: ${base} is no commit of this repository`);
  process.exit(2);
}
const changed = new Set(git('diff', '--name-only', base, '--', 'src').split('\n').filter(Boolean));
const listed = JSON.parse(readFileSync(new URL('../stryker.config.json', import.meta.url), 'utf8')).mutate;
const mutate = listed.filter((file) => changed.has(file));
const unlisted = [...changed].filter((file) => !listed.includes(file) && file.endsWith('.ts'));
if (unlisted.length > 0) console.log(`not in stryker.config.json's mutate list, so not mutated: ${unlisted.join(', ')}`);
if (mutate.length === 0) {
  console.log(`mutation:changed: no module of the mutate list changed since ${base}`);
  process.exit(0);
}
console.log(`mutation:changed: since ${base}: ${mutate.join(', ')}`);
const run = spawnSync('npx', ['stryker', 'run', '--mutate', mutate.join(',')], { stdio: 'inherit' });
process.exit(run.status ?? 1);
