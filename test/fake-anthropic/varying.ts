import { seeded } from '../../src/cli/experiment/statistics.js';

/**
 * Answers that vary from run to run, as a model's do (issue 83: experiments): each draw says yes
 * with the chance asked, from a generator seeded once per server, so that a script can make the
 * same prompt answered one way in some runs and another way in others, at a set rate.
 */
export function varying(seed: string): (chance: number) => boolean {
  const random = seeded(seed);
  return (chance) => random() < chance;
}
