import type { Command } from 'commander';
import { registerAudit } from './audit.js';
import { registerCerts } from './certs.js';
import { registerConfig } from './config.js';
import { registerModels } from './models.js';
import { registerPolicy } from './policy.js';
import { registerReplay } from './replay.js';
import { registerRuns } from './runs.js';
import { registerServe } from './serve.js';
import { registerSim } from './sim.js';
import { registerTwin } from './twin.js';

/** Every subcommand of `linekeeper`, in the order `--help` lists them. */
export function registerAll(program: Command): void {
  registerServe(program);
  registerConfig(program);
  registerAudit(program);
  registerPolicy(program);
  registerSim(program);
  registerCerts(program);
  registerTwin(program);
  registerModels(program);
  registerRuns(program);
  registerReplay(program);
}
