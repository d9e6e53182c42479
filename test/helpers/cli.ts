import { vi } from 'vitest';
import { main } from '../../src/cli/main.js';

/**
 * `linekeeper <args>` run in this process (a child process costs seconds of start-up per call), with its
 * exit code and what it wrote to stdout and stderr.
 */
export async function runCli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((out += String(s)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((err += String(s)), true));
  const before = process.exitCode;
  process.exitCode = undefined;
  try {
    await main(['node', 'linekeeper', ...args]);
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
  const code = Number(process.exitCode ?? 0);
  process.exitCode = before;
  return { code, out, err };
}
