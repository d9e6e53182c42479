import type { Command } from 'commander';
import { registerApprove } from './approve.js';
import { registerAudit } from './audit.js';
import { registerBackup } from './backup.js';
import { registerCerts } from './certs.js';
import { registerConfig } from './config.js';
import { registerDiscover } from './discover.js';
import { registerDoctor } from './doctor.js';
import { registerExceptions } from './exceptions.js';
import { registerLine } from './line.js';
import { registerLogin } from './login.js';
import { registerModels } from './models.js';
import { registerMoves } from './moves.js';
import { registerPolicy } from './policy.js';
import { registerReplay } from './replay.js';
import { registerRun } from './run.js';
import { registerRuns } from './runs.js';
import { registerServe } from './serve.js';
import { registerSim } from './sim.js';
import { registerTwin } from './twin.js';
import { registerUsers } from './users.js';

/** Every subcommand of `linekeeper`, in the order `--help` lists them. */
export function registerAll(program: Command): void {
  registerServe(program);
  registerLogin(program);
  registerRun(program);
  registerApprove(program);
  registerMoves(program);
  registerConfig(program);
  registerDoctor(program);
  registerDiscover(program);
  registerBackup(program);
  registerAudit(program);
  registerPolicy(program);
  registerSim(program);
  registerCerts(program);
  registerTwin(program);
  registerModels(program);
  registerRuns(program);
  registerLine(program);
  registerExceptions(program);
  registerReplay(program);
  registerUsers(program);
}
