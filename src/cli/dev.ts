/** `herald dev receiver`: a local HTTPS receiver that prints each callback (docs/getting-started/receive-locally.md). */
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import { startDevReceiver } from '../dev/receiver.ts';
import { commandGroup, configFrom, integer, withStoreOptions } from './options.ts';

const HOST = '127.0.0.1';

export function registerDevCommands(program: Command): void {
  const dev = commandGroup(program, 'dev', 'tools for trying herald on your own machine');
  withStoreOptions(
    dev
      .command('receiver')
      .description('start an HTTPS callback receiver on this machine that checks and prints every callback it gets')
      .addOption(new Option('--port <port>', 'port to listen on (0: any free port)').argParser(integer('--port')).default(8443))
      .addOption(
        new Option(
          '--secret <secret>',
          "the subscription's callbackSecretKey to check signatures with (default: one made at the first start and kept in <data-dir>/dev-receiver/secret)",
        ),
      )
      .addHelpText(
        'after',
        '\nA callback goes only to an https:// URL with a certificate herald trusts, on a network it may reach, at a\n' +
          'domain verified for the customer. This receiver makes the certificate (from a throw-away CA, kept in\n' +
          '<data-dir>/dev-receiver/ca.pem) and prints the settings that give a local herald the other two:\n\n' +
          '  ./bin/herald.js dev receiver             # terminal 1: prints the settings below, then each callback\n' +
          '  HERALD_DELIVERY_CA_FILE=data/dev-receiver/ca.pem HERALD_DELIVERY_ALLOW_NETWORKS=127.0.0.1/32 \\\n' +
          '  HERALD_SUBSCRIPTIONS_ALLOW_UNFOLLOWED_CHAINS=true npm start        # terminal 2: herald\n' +
          '  ./bin/herald.js domains add --customer default --domain localhost --verified\n\n' +
          'Then subscribe with "callbackUrl": "https://localhost:8443/callbacks" and the printed secret as\n' +
          '"callbackSecretKey", and POST .../subscriptions/{referenceId}/test-callback. Each callback is printed with\n' +
          'its signatures checked (x-signature and webhook-signature, timestamp within 5 minutes) and answered 204,\n' +
          'or 401 when a signature is missing or wrong. Walk-through: docs/getting-started/receive-locally.md.',
      ),
  ).action(async (o: { port: number; secret?: string; dataDir?: string; config?: string }) => {
    // Not o.port: that is the receiver's; herald's own port (for the printed curl lines) comes from its configuration.
    const config = configFrom({ dataDir: o.dataDir, config: o.config });
    const print = (text: string) => process.stdout.write(`${text}\n`);
    const receiver = await startDevReceiver({ port: o.port, host: HOST, directory: join(config.dataDir, 'dev-receiver'), secret: o.secret, print });
    const api = `http://${config.host}:${config.port}`;
    const callbackUrl = `${receiver.url}/callbacks`;
    print(
      [
        `herald dev receiver: listening on ${receiver.url} (this machine only), certificate from a throw-away CA`,
        '',
        'Give a local herald these settings (restart it after setting them):',
        `  HERALD_DELIVERY_CA_FILE=${receiver.caFile}    trust this receiver's certificate`,
        `  HERALD_DELIVERY_ALLOW_NETWORKS=${HOST}/32    let callbacks reach this machine`,
        '  HERALD_SUBSCRIPTIONS_ALLOW_UNFOLLOWED_CHAINS=true    subscribe on chains without a node (for test callbacks)',
        '  ./bin/herald.js domains add --customer default --domain localhost --verified    localhost as a verified callback domain',
        'that is:',
        `  HERALD_DELIVERY_CA_FILE=${receiver.caFile} HERALD_DELIVERY_ALLOW_NETWORKS=${HOST}/32 HERALD_SUBSCRIPTIONS_ALLOW_UNFOLLOWED_CHAINS=true npm start`,
        '',
        'Subscribe with this callbackUrl and callbackSecretKey, then ask for a test callback:',
        `  curl -s -X POST -H "x-api-key: $KEY" -H 'content-type: application/json' \\`,
        `    ${api}/blockchain-events/ethereum/goerli/subscriptions/transaction-mined \\`,
        `    -d '{"data":{"item":{"transactionId":"0x${'1'.repeat(64)}","callbackUrl":"${callbackUrl}","callbackSecretKey":"${receiver.secret}"}}}'`,
        `  curl -s -X POST -H "x-api-key: $KEY" ${api}/blockchain-events/subscriptions/$REFERENCE_ID/test-callback`,
        '',
        'Waiting for callbacks (Ctrl-C stops)...',
      ].join('\n'),
    );
    const stop = () => void receiver.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
