/**
 * Argument parsers for commander options, shared by the commands so that
 * `--seed 1.5` is refused with the same words everywhere.
 */
import { InvalidArgumentError } from 'commander';

/**
 * A whole number that survives the round trip through a double.
 * @throws InvalidArgumentError (commander prints it as a usage error) for anything else.
 */
export function integer(v: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('must be an integer');
  return n;
}

/**
 * A finite number above zero.
 * @throws InvalidArgumentError for zero, negatives, NaN and infinities.
 */
export function positive(v: string): number {
  const n = Number(v);
  if (!(Number.isFinite(n) && n > 0)) throw new InvalidArgumentError('must be a positive number');
  return n;
}
