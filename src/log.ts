/**
 * Structured logging (pino). One root logger per process, created by main-level
 * code; modules take a child logger as a parameter, never a global.
 *
 * Secrets never reach the journal: the paths in {@link REDACT_PATHS} (passwords, tokens, authorization
 * headers, private keys) are replaced by "[redacted]" wherever a log call puts them, up to three levels deep.
 * pino's `*` matches one level, hence the explicit depths.
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';
import { LkError } from './errors.js';

export type { Logger };

const SECRET_KEYS = ['password', 'passwd', 'passphrase', 'token', 'accessToken', 'refreshToken', 'secret', 'privateKey', 'private_key', 'apiKey', 'api_key', 'authorization', 'cookie', 'signingKey'];

/** Every logged path whose value is a secret. */
export const REDACT_PATHS: readonly string[] = [
  ...SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]),
  'req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers["x-api-key"]', 'req.headers["x-api-key"]',
];


export function createLogger(level: LevelWithSilent = 'info', destination: NodeJS.WritableStream | number = 2): Logger {
  const dest = typeof destination === 'number' ? pino.destination({ fd: destination, sync: true }) : destination;
  return pino({ level, base: { app: 'linekeeper' }, timestamp: pino.stdTimeFunctions.isoTime, redact: { paths: [...REDACT_PATHS], censor: '[redacted]' } }, dest);
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
