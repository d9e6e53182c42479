/**
 * `linekeeper sim` as a process: one JSON line with the endpoints on stdout
 * (scripts read it to find the free ports), real servers behind it, a clean
 * exit on SIGTERM.
 */
import { spawn } from 'node:child_process';
import m from 'modbus-serial';
import { describe, expect, it } from 'vitest';
import { LINEKEEPER_BIN } from '../helpers/bin.js';


describe('linekeeper sim', () => {
  it('prints one JSON line of endpoints, serves them, and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, [...LINEKEEPER_BIN, 'sim', '--watchdog-timeout-ms', '700', '--seed', '5', '--log-level', 'warn'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
    const firstLine = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0]!);
      });
      void exited.then((e) => reject(new Error(`sim exited early (${e.code}): ${err}`)));
    });
    const endpoints = JSON.parse(firstLine) as Record<string, string>;
    expect(Object.keys(endpoints).sort()).toEqual(['modbus', 'opcua']);
    expect(endpoints.opcua).toMatch(/^opc\.tcp:\/\/127\.0\.0\.1:\d+\/linekeeper\/sim$/);
    expect(endpoints.modbus).toMatch(/^127\.0\.0\.1:\d+$/);

    const client = new m.default();
    client.setTimeout(1000);
    await client.connectTCP('127.0.0.1', { port: Number(endpoints.modbus!.split(':')[1]) });
    client.setID(2);
    const { data } = await client.readHoldingRegisters(2, 2);
    expect(data[0]! * 65536 + data[1]!).toBe(700);
    await new Promise<void>((r) => client.close(() => r()));

    child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(out.trimEnd().split('\n')).toHaveLength(1);
  });

  it('refuses a malformed press skew as a usage error (exit 2), and a parameter the press does not have by name', async () => {
    const run = async (arg: string): Promise<{ code: number | null; err: string }> => {
      const child = spawn(process.execPath, [...LINEKEEPER_BIN, 'sim', '--skew-press', arg, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
      return { code, err };
    };
    expect((await run('sigma0')).code).toBe(2);
    expect((await run('sigma0=-1')).code).toBe(2);
    const unknown = await run('sigma0=1.4,hardness=2');
    expect(unknown.code).not.toBe(0);
    expect(unknown.err).toMatch(/the press has no parameter "hardness"/);
  });

  it('refuses a bad port with a usage error (exit 2)', async () => {
    const child = spawn(process.execPath, [...LINEKEEPER_BIN, 'sim', '--modbus-port', '70000'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    expect(code).toBe(2);
  });
});
