/**
 * Structured logging (pino). One root logger per process, created by main-level
 * code; modules take a child logger as a parameter, never a global.
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';
import { LkError } from './errors.js';

export type { Logger };

export function createLogger(level: LevelWithSilent = 'info', destination: NodeJS.WritableStream | number = 2): Logger {
  const dest = typeof destination === 'number' ? pino.destination({ fd: destination, sync: true }) : destination;
  return pino({ level, base: { app: 'linekeeper' }, timestamp: pino.stdTimeFunctions.isoTime }, dest);
}

/** A logger that writes nothing: for tests and library callers that pass none. */
export const silentLogger: Logger = pino({ level: 'silent' });

export const LOG_LEVELS: readonly LevelWithSilent[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * A log level named on the command line (`--log-level`), checked before a logger is made: pino throws a
 * bare Error with a stack for an unknown one.
 * @throws LkError LK_VALIDATION naming the levels there are
 */
export function parseLogLevel(v: string): LevelWithSilent {
  if ((LOG_LEVELS as readonly string[]).includes(v)) return v as LevelWithSilent;
  throw new LkError('LK_VALIDATION', `--log-level must be one of ${LOG_LEVELS.join(', ')}, not "${v}"`, { option: '--log-level', value: v });
}
