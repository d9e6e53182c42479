/**
 * An excursion at the press, as someone at its HMI makes it: once compression has started and compress_fill has made
 * its first move (made before any tablet is measured, which would otherwise overwrite the disturbance), the main
 * force goes to 15 kN with the pre-force at 4 kN. The tablets are then far over 150 N — an OOS the twin predicts as
 * well as the press makes it, not a lost model — and do not cap (capping would push the defect rate over its limit
 * and hold the run at inspection, another test's story). The batch has failed its hardness specification.
 *
 * On a virtual line it watches on the virtual clock (the press step can pass within a wall-clock poll there);
 * otherwise it polls the wall clock.
 */
import { every } from '../../src/clock.js';
import type { ApiNode } from './api.js';

/** Returns when the disturbance is made, or when the run never reaches the press. */
export function disturbPress(node: ApiNode, tenant: string, runId: () => string | undefined): Promise<void> {
  const pressing = (): boolean => {
    const id = runId();
    return id !== undefined && node.daemon.engine.get(tenant, id).steps.find((x) => x.name === 'compress.press')?.status === 'RUNNING';
  };
  const { line } = node;
  if (line) {
    const plant = line.plant;
    return new Promise((resolve) => {
      let recipe: number | undefined;
      let waited = 0;
      let idle = 0;
      const stop = every(line.clock, 25, () => {
        if (recipe === undefined) {
          if (pressing()) recipe = plant.setpoints('press')['MainForce'];
          // the run never reached the press in four virtual hours: nothing to disturb
          else if (++idle > 576_000) {
            stop();
            resolve();
          }
          return;
        }
        if (plant.setpoints('press')['MainForce'] === recipe && ++waited < 200) return;
        plant.writeSetpoints('press', { MainForce: 15, PreForce: 4 });
        stop();
        resolve();
      });
    });
  }
  return (async () => {
    const plant = node.plant;
    for (let i = 0; i < 3000; i++) {
      if (pressing()) {
        const recipe = plant.setpoints('press')['MainForce'];
        for (let j = 0; j < 200 && plant.setpoints('press')['MainForce'] === recipe; j++) await new Promise((r) => setTimeout(r, 25));
        plant.writeSetpoints('press', { MainForce: 15, PreForce: 4 });
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
}
