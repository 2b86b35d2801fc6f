// The GitHub Action's entry (action.yml, `runs.using: node24`, bundled into action/main.js): it
// runs the Action's logic. Kept apart from it so that `@github/local-action` can call `run()` of
// action-main.ts itself (docs/github-action.md).
import { run } from './action-main.js';

await run();
