import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { LocalCeiling, Reservations, type Answer, type Ceiling, type Worst } from '../../src/engine/ceilings/reservation.js';
import { CallAborted } from '../../src/provider/provider-errors.js';

const worst = (usd: number, tokens = 0): Worst => ({ usd, tokens });
const signal = () => new AbortController().signal;
const tick = () => new Promise((r) => setTimeout(r, 5));

/** A local ceiling of `cap` dollars over `spent()`, refused with its name. */
function capped(name: string, cap: number, spent = () => 0): Ceiling & { local: LocalCeiling } {
  const local = new LocalCeiling((held) => spent() + held.usd <= cap);
  return { local, hold: (w) => local.hold(w, (x) => new Error(`${name}: ${x.usd} does not fit`)) };
}

/** A ceiling that answers what it is told to, and records what was held and settled. */
function scripted(answers: Answer[]): Ceiling & { settled: number[]; asked: number } {
  const c = {
    settled: [] as number[],
    asked: 0,
    hold: async (): Promise<Answer> => {
      c.asked++;
      return answers.shift() ?? { held: { settle: (cost: number) => void c.settled.push(cost) } };
    },
  };
  return c;
}

describe('the reservation primitive', () => {
  it('holds under every ceiling in order, and settles each once, the last taken first', async () => {
    const order: string[] = [];
    const ceiling = (name: string): Ceiling => ({
      hold: () => (order.push(`hold ${name}`), { held: { settle: (c) => void order.push(`settle ${name} ${c}`) } }),
    });
    const r = new Reservations();
    const settle = await r.reserve([ceiling('a'), ceiling('b'), ceiling('c')], worst(1), signal());
    await settle(0.25);
    await settle(0.5);
    expect(order).toEqual(['hold a', 'hold b', 'hold c', 'settle c 0.25', 'settle b 0.25', 'settle a 0.25']);
  });

  it('a refusal gives back what the earlier ceilings held, and names the ceiling that refused', async () => {
    const first = scripted([]);
    const r = new Reservations();
    await expect(r.reserve([first, scripted([{ refused: new Error('pool org is spent') }])], worst(1), signal())).rejects.toThrow('pool org is spent');
    expect(first.settled).toEqual([0]);
  });

  it('a ceiling that throws has the holds before it given back, and the error goes up as it is', async () => {
    const first = scripted([]);
    const failing: Ceiling = {
      hold: async () => {
        throw new Error('store down');
      },
    };
    await expect(new Reservations().reserve([first, failing], worst(1), signal())).rejects.toThrow('store down');
    expect(first.settled).toEqual([0]);
  });

  it('a call that must wait holds nothing meanwhile, and tries every ceiling again once a hold settles', async () => {
    const run = capped('budget', 1);
    const pool = scripted([]);
    const r = new Reservations();
    const settleFirst = await r.reserve([run, pool], worst(0.6), signal());
    let second: ((cost: number) => Promise<void>) | undefined;
    const waiting = r.reserve([run, pool], worst(0.6), signal()).then((s) => (second = s));
    await tick();
    expect(second).toBeUndefined();
    expect(pool.asked).toBe(1);
    await settleFirst(0.1);
    await waiting;
    expect(second).toBeDefined();
    expect(pool.asked).toBe(2);
  });

  it('a waiting call that gives back its own holds does not wake itself (no busy loop)', async () => {
    const first = scripted([]);
    const blocker = scripted([{ wait: 'settle' }]);
    const r = new Reservations();
    let done = false;
    const waiting = r.reserve([first, blocker], worst(1), signal()).then(() => (done = true));
    await tick();
    expect(first.asked, 'asked once, then waits').toBe(1);
    expect(done).toBe(false);
    r.wake();
    await waiting;
    expect(first.asked).toBe(2);
  });

  it('looks again after the given time when others hold the room, and at once when something settled while it asked', async () => {
    const poll = scripted([{ wait: 30 }]);
    const started = Date.now();
    await new Reservations().reserve([poll], worst(1), signal());
    expect(poll.asked).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);

    const r = new Reservations();
    let release!: (a: Answer) => void;
    const slow: Ceiling = { hold: () => new Promise<Answer>((resolve) => (release = resolve)) };
    const asking = r.reserve([slow], worst(1), signal());
    await tick();
    r.wake(); // a settlement lands while the ceiling is being asked
    release({ wait: 'settle' });
    await tick();
    // Had the change been missed, the call would wait for one that may never come.
    release({ held: { settle: () => {} } });
    await expect(asking).resolves.toBeTypeOf('function');
  });

  it('an aborted wait ends as aborted and leaves no listener; an aborted signal is refused before any ceiling is asked', async () => {
    const r = new Reservations();
    const run = capped('budget', 1);
    const settleFirst = await r.reserve([run], worst(0.6), signal());
    const controller = new AbortController();
    const waiting = r.reserve([run], worst(0.6), controller.signal);
    await tick();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    await expect(waiting).rejects.toThrow(CallAborted);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const never = scripted([]);
    await expect(r.reserve([never], worst(0), controller.signal)).rejects.toThrow(CallAborted);
    expect(never.asked).toBe(0);
    await settleFirst(0);
  });

  it('a signal that aborts while the ceilings are asked ends the wait at once', async () => {
    const controller = new AbortController();
    const aborting: Ceiling = { hold: () => (controller.abort(), { wait: 'settle' }) };
    await expect(new Reservations().reserve([aborting], worst(1), controller.signal)).rejects.toThrow(CallAborted);
  });

  it('one settle that throws does not keep the others from settling', async () => {
    const after = scripted([]);
    const throwing: Ceiling = {
      hold: () => ({
        held: {
          settle: () => {
            throw new Error('store down');
          },
        },
      }),
    };
    const settle = await new Reservations().reserve([after, throwing], worst(1), signal());
    await settle(0.5);
    expect(after.settled).toEqual([0.5]);
  });
});

describe('a local ceiling', () => {
  it('holds a worst case that fits exactly, refuses one over when nothing is held, and makes it wait when something is', () => {
    let spent = 0.25;
    const c = capped('carve', 1, () => spent);
    const held = c.local.hold(worst(0.75), () => new Error('over'));
    expect('held' in held).toBe(true);
    expect(c.local.hold(worst(0.01), () => new Error('over'))).toEqual({ wait: 'settle' });
    if ('held' in held) void held.held.settle(0);
    const refused = c.local.hold(worst(0.76), (w) => new Error(`over by ${w.usd}`));
    expect(refused).toEqual({ refused: new Error('over by 0.76') });
    spent = 0;
    expect('held' in c.local.hold(worst(1), () => new Error('over'))).toBe(true);
  });

  it('counts tokens as well as dollars, and is exactly empty once every hold settled', () => {
    const seen: Worst[] = [];
    const c = new LocalCeiling((held) => (seen.push(held), held.tokens <= 10));
    const a = c.hold(worst(0.1, 4), () => new Error('over'));
    const b = c.hold(worst(0.2, 6), () => new Error('over'));
    expect(seen.at(-1)).toEqual({ usd: 0.30000000000000004, tokens: 10 });
    expect(c.hold(worst(0, 1), () => new Error('over'))).toEqual({ wait: 'settle' });
    for (const h of [a, b]) if ('held' in h) void h.held.settle(0);
    c.hold(worst(0, 0), () => new Error('over'));
    expect(seen.at(-1)).toEqual({ usd: 0, tokens: 0 });
  });
});
