/**
 * The threads that do heavy work beside the heartbeat loop (release package, large rehearsals) run at a lower
 * scheduling priority than the loop itself. On a two-core edge node such a worker and the main thread compete
 * for the same cores; at equal priority the heartbeat loop waits its turn behind the worker's time slices.
 * Linux keeps the nice value per thread (setpriority(2) on the calling thread, which `os.setPriority` without a
 * pid is), so only the worker is lowered; threads it starts inherit it. Elsewhere, or where it is refused, the
 * worker keeps the process's priority: slower to yield, never wrong.
 */
import { getPriority, setPriority } from 'node:os';

/** How much nicer than the process a worker thread runs (CFS weight about a tenth of the loop's). */
export const WORKER_NICENESS = 10;

/** Lower the calling thread's priority by {@link WORKER_NICENESS} (up to 19); returns the nice value it runs at. */
export function lowerThreadPriority(): number {
  try {
    setPriority(Math.min(19, getPriority() + WORKER_NICENESS));
  } catch {
    // not supported here, or refused: the thread keeps the process's priority
  }
  try {
    return getPriority();
  } catch {
    return 0;
  }
}
