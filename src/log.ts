/**
 * Structured logging (pino). One root logger per process, created by main-level
 * code; modules take a child logger as a parameter, never a global.
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

export function createLogger(level: LevelWithSilent = 'info', destination: NodeJS.WritableStream | number = 2): Logger {
  const dest = typeof destination === 'number' ? pino.destination({ fd: destination, sync: true }) : destination;
  return pino({ level, base: { app: 'linekeeper' }, timestamp: pino.stdTimeFunctions.isoTime }, dest);
}

/** A logger that writes nothing: for tests and library callers that pass none. */
export const silentLogger: Logger = pino({ level: 'silent' });
