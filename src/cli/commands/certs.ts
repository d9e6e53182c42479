/**
 * `linekeeper certs`: the OPC UA server certificates this edge node trusts.
 *
 * linekeeper never accepts an unknown server certificate by itself: the
 * first connection fails with LK_CERT_UNTRUSTED and puts the certificate in
 * `<data>/pki/rejected`. An operator checks its thumbprint against the one
 * the equipment shows and trusts it here; the daemon picks the change up on
 * its next connection attempt.
 */
import { checkDataDirPath } from '../../files.js';
import type { Command } from 'commander';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import type { CertificateInfo } from '../../../connectors/opcua/pki.js';

// Loaded on use: node-opcua takes a second to import and most commands do not need it.
const pki = (): Promise<typeof import('../../../connectors/opcua/pki.js')> => import('../../../connectors/opcua/pki.js');

interface DataOpts {
  data?: string;
  config?: string;
  json?: boolean;
}

/** `--data` wins; otherwise the data directory of the site configuration. */
function dataDirOf(opts: DataOpts): string {
  if (opts.data === undefined) return loadConfig(opts.config ?? defaultConfigFile()).dataDir;
  checkDataDirPath(opts.data);
  return opts.data;
}

function line(c: CertificateInfo): string {
  return `${c.status.padEnd(8)} ${c.thumbprint}  ${c.subject}  valid ${c.validFrom.slice(0, 10)} → ${c.validTo.slice(0, 10)}${c.valid ? '' : ' (NOT VALID NOW)'}`;
}

export function registerCerts(program: Command): void {
  const certs = program
    .command('certs')
    .description('Trusted and rejected OPC UA server certificates (<data>/pki): unknown servers are never trusted automatically');
  const withData = (c: Command): Command =>
    c.option('-d, --data <dir>', 'data directory (default: data_dir of the site configuration)').option('-c, --config <file>', 'site configuration file', defaultConfigFile());

  withData(certs.command('list').description('List trusted and rejected server certificates with thumbprint, subject and validity'))
    .option('--json', 'print JSON')
    .action(async (opts: DataOpts) => {
      const list = (await pki()).listCertificates(dataDirOf(opts));
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
        return;
      }
      if (list.length === 0) {
        process.stdout.write('no server certificates (connect once with security Sign/SignAndEncrypt to receive one)\n');
        return;
      }
      for (const c of list) process.stdout.write(`${line(c)}\n`);
    });

  withData(certs.command('trust').description('Trust a server certificate (moves it from rejected to trusted)'))
    .argument('<thumbprint>', 'SHA-1 thumbprint as listed (or a unique prefix of at least 8 hex digits)')
    .action(async (thumbprint: string, opts: DataOpts) => {
      const c = await (await pki()).trustServerCertificate(dataDirOf(opts), thumbprint);
      process.stdout.write(`trusted ${c.thumbprint}  ${c.subject}\n`);
    });

  withData(certs.command('reject').description('Reject a server certificate (moves it to rejected): connections to that server fail with LK_CERT_UNTRUSTED'))
    .argument('<thumbprint>', 'SHA-1 thumbprint as listed (or a unique prefix of at least 8 hex digits)')
    .action(async (thumbprint: string, opts: DataOpts) => {
      const c = await (await pki()).rejectServerCertificate(dataDirOf(opts), thumbprint);
      process.stdout.write(`rejected ${c.thumbprint}  ${c.subject}\n`);
    });
}
