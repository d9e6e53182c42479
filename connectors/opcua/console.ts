/**
 * node-opcua prints its warnings and errors with console.log, i.e. on stdout.
 * linekeeper's stdout carries machine-read lines only (the `serve` ready line,
 * the `sim` endpoints line), so route them to the structured log or stderr.
 */
import { format } from 'node:util';
import { setErrorLogger, setWarningLogger } from 'node-opcua-client';
import type { Logger } from '../../src/log.js';

/** Send node-opcua's warnings and errors to `logger` (as warn/error lines) or, without one, to stderr. */
export function routeOpcUaConsole(logger?: Logger): void {
  const sink =
    (level: 'warn' | 'error') =>
    (_ctx: unknown, ...args: unknown[]): void => {
      const msg = format(...args);
      if (logger) logger[level]({ component: 'node-opcua' }, msg);
      else process.stderr.write(`${msg}\n`);
    };
  setWarningLogger(sink('warn'));
  setErrorLogger(sink('error'));
}
