/**
 * A stand-in supervisor process that only writes heartbeats, so a test can
 * SIGKILL it and watch the simulated PLC revert to LKG by itself (rule R8).
 *
 *   node --import tsx test/fault/heartbeat-writer.ts opcua <opc.tcp://...> <namespaceUri> <equipment> <pkiDir> [periodMs]
 *   node --import tsx test/fault/heartbeat-writer.ts modbus <host:port> <unitId> [periodMs]
 *
 * Prints `ready` on stdout after the first heartbeat was accepted, then one
 * heartbeat every periodMs (default 100) until killed.
 */
import m from 'modbus-serial';
import { AttributeIds, DataType, OPCUACertificateManager, OPCUAClient } from 'node-opcua';

const [mode, ...args] = process.argv.slice(2);

async function opcua(url: string, nsUri: string, equipment: string, pkiDir: string, periodMs: number): Promise<void> {
  const client = OPCUAClient.create({
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 0 },
    clientCertificateManager: new OPCUACertificateManager({ rootFolder: pkiDir, automaticallyAcceptUnknownCertificate: true }),
  });
  await client.connect(url);
  const session = await client.createSession();
  const ns = (await session.readNamespaceArray()).indexOf(nsUri);
  const nodeId = `ns=${ns};s=${equipment}.Supervisor.Heartbeat`;
  let n = 0;
  const beat = async (): Promise<void> => {
    n = (n + 1) % 2 ** 32;
    const s = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.UInt32, value: n } } });
    if (s.name !== 'Good') throw new Error(`heartbeat refused: ${s.name}`);
  };
  await beat();
  process.stdout.write('ready\n');
  setInterval(() => void beat().catch((e: Error) => process.stderr.write(`${e.message}\n`)), periodMs);
}

async function modbus(endpoint: string, unitId: number, periodMs: number): Promise<void> {
  const [host, port] = endpoint.split(':');
  const client = new m.default();
  client.setTimeout(1000);
  await client.connectTCP(host ?? '127.0.0.1', { port: Number(port) });
  client.setID(unitId);
  let n = 0;
  const beat = async (): Promise<void> => {
    n = (n + 1) % 2 ** 32;
    await client.writeRegisters(0, [Math.floor(n / 65536), n % 65536]);
  };
  await beat();
  process.stdout.write('ready\n');
  setInterval(() => void beat().catch((e: Error) => process.stderr.write(`${e.message}\n`)), periodMs);
}

const fail = (msg: string): never => {
  process.stderr.write(`heartbeat-writer: ${msg}\n`);
  process.exit(2);
};

if (mode === 'opcua') {
  const [url, nsUri, equipment, pkiDir, period] = args;
  if (!url || !nsUri || !equipment || !pkiDir) fail('usage: opcua <url> <namespaceUri> <equipment> <pkiDir> [periodMs]');
  await opcua(url!, nsUri!, equipment!, pkiDir!, Number(period ?? 100));
} else if (mode === 'modbus') {
  const [endpoint, unit, period] = args;
  if (!endpoint || !unit) fail('usage: modbus <host:port> <unitId> [periodMs]');
  await modbus(endpoint!, Number(unit), Number(period ?? 100));
} else {
  fail('first argument must be opcua or modbus');
}
