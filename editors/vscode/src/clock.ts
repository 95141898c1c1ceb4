/**
 * Time as an input. The status bar (how long a reason stays), the approval prompt (time left) and
 * the notification sequencer (how long to wait for a missing `seq`) take a `Clock`, so the unit
 * tests drive them with a manual clock instead of node's fake timers, which mishandle a
 * `clearInterval` called from inside the interval's own callback (node 20).
 */

/** A pending timeout or interval; `cancel` is idempotent and safe inside the callback. */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  setTimeout(callback: () => void, ms: number): Timer;
  setInterval(callback: () => void, ms: number): Timer;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, ms) {
    const handle = setTimeout(callback, ms);
    return { cancel: () => clearTimeout(handle) };
  },
  setInterval(callback, ms) {
    const handle = setInterval(callback, ms);
    return { cancel: () => clearInterval(handle) };
  },
};
