/**
 * The OPC UA client imports node-opcua's client packages directly (`node-opcua-client`, `-nodeid`,
 * `-certificate-manager`), not the `node-opcua` meta package, which would load the server's code into a daemon
 * that is only a client (about 7 MB of RSS and 8 MB of heap). Those three must stay the very versions `node-opcua`
 * pins (the simulator and the tests' servers use it), so that npm installs one copy of each: a second
 * `node-opcua-nodeid` would make a NodeId from one copy a stranger to the other.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const DIRECT = ['node-opcua-client', 'node-opcua-nodeid', 'node-opcua-certificate-manager'] as const;
const require = createRequire(import.meta.url);
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
const meta = JSON.parse(readFileSync(require.resolve('node-opcua/package.json'), 'utf8')) as { dependencies: Record<string, string> };

describe('node-opcua client packages', () => {
  it('are pinned to the versions node-opcua itself pins', () => {
    for (const d of DIRECT) expect(pkg.dependencies[d], d).toBe(meta.dependencies[d]);
  });

  it('resolve to one installed copy each, from linekeeper and from node-opcua alike', () => {
    const fromMeta = createRequire(require.resolve('node-opcua/package.json'));
    const fromClient = createRequire(require.resolve('node-opcua-client'));
    for (const d of DIRECT) {
      expect(fromMeta.resolve(d), d).toBe(require.resolve(d));
      if (d !== 'node-opcua-client') expect(fromClient.resolve(d), d).toBe(require.resolve(d));
    }
  });

  it('the connector code imports no node-opcua meta package', () => {
    for (const f of readdirSync('connectors/opcua').filter((n) => n.endsWith('.ts'))) {
      expect(readFileSync(`connectors/opcua/${f}`, 'utf8'), f).not.toMatch(/from 'node-opcua'/);
    }
  });
});
