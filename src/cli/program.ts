/**
 * The `herald` command line as a commander program: every command with its options, nothing parsed yet
 * (cli/main.ts parses process.argv; test/docs.test.ts checks docs/reference/cli.md against it).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { ROLES } from '../config/config.ts';
import { HERALD_VERSION } from '../version.ts';
import { registerAdminCommands } from './admin.ts';
import { registerBackupCommands } from './backup.ts';
import { registerConfigCommands } from './config.ts';
import { registerDevCommands } from './dev.ts';
import { registerImportCommand } from './import.ts';
import { registerListCommands } from './lists.ts';
import { configFrom, integer, markRequiredOptions, withStoreOptions } from './options.ts';
import { registerPruneCommand } from './prune.ts';
import { registerSecretsCommands } from './secrets.ts';

/** Every `herald` command, as `herald --help` lists them. */
export function buildProgram(): Command {
  const program = new Command('herald')
    .description(
      'Blockchain event callbacks and wallet asset listing, self-hosted.\n\n' +
        'Start the service:      herald serve            (embedded PostgreSQL under ./data)\n' +
        'Use your own database:  DATABASE_URL=postgres://... herald serve\n' +
        'Make a customer a key:  herald customers create --name acme && herald keys create --customer acme\n' +
        'Follow a chain:         HERALD_RPC_ETHEREUM_MAINNET=http://node:8545 herald serve',
    )
    .version(HERALD_VERSION, '-V, --version', 'print the version of herald')
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ showGlobalOptions: true });

  withStoreOptions(
    program
      .command('serve')
      .description('run the service: the HTTP API, chain following and the callback delivery worker (docs/getting-started/quickstart.md shows a first call)')
      .addHelpText(
        'after',
        '\nFollowing chains (ingest role): give each chain its node with HERALD_RPC_<BLOCKCHAIN>_<NETWORK>\n' +
          '(upper case, dashes as underscores) and optionally HERALD_WS_<BLOCKCHAIN>_<NETWORK> for new-head\n' +
          'notifications, or a "chains" list in the configuration file:\n' +
          '  HERALD_RPC_ETHEREUM_MAINNET=http://127.0.0.1:8545 HERALD_WS_ETHEREUM_MAINNET=ws://127.0.0.1:8546 herald serve\n' +
          '  { "chains": [ { "blockchain": "binance-smart-chain", "network": "mainnet", "rpcUrl": "http://bsc:8545",\n' +
          '                  "confirmations": 15, "pollIntervalMs": 1000, "startHeight": 38000000 } ] }\n' +
          "A chain starts at the node's head (or startHeight) and resumes where it stopped after a restart.\n" +
          'Several nodes of one chain: a comma-separated list (HERALD_RPC_ETHEREUM_MAINNET=http://a:8545,http://b:8545)\n' +
          'or "rpcUrls" (and "wsUrls", same order); blocks are read from the eligible ones (answering, not syncing,\n' +
          'head within "maxLagBlocks", default 3, of the best); a reorganisation deeper than "reorgQuorumDepth"\n' +
          '(default 2) is followed only when a second node agrees.\n' +
          "GET /blockchain-events/status shows each chain's head, processed height, lag and nodes.\n\n" +
          'Nodes per chain family:\n' +
          '  ethereum, ethereum-classic, binance-smart-chain  any Ethereum JSON-RPC node (geth, erigon, nethermind, ...)\n' +
          '  bitcoin, bitcoin-cash, litecoin, dogecoin, dash, zcash  Bitcoin Core-style JSON-RPC (bitcoind, BCHN,\n' +
          '      litecoind, dogecoind, dashd, zcashd); Omni Core on bitcoin for OMNI tokens. Credentials: in the URL\n' +
          '      (http://user:password@host:8332), rpcUser/rpcPassword, or the cookie file:\n' +
          '      HERALD_RPC_LITECOIN_MAINNET=http://127.0.0.1:9332 HERALD_RPC_COOKIE_LITECOIN_MAINNET=/var/lib/litecoin/.cookie\n' +
          '  tron  a java-tron full node HTTP API, e.g. HERALD_RPC_TRON_MAINNET=http://127.0.0.1:8090\n' +
          '  xrp   rippled JSON-RPC, e.g. HERALD_RPC_XRP_MAINNET=http://127.0.0.1:5005 (validated ledgers only)',
      )
      .addHelpText(
        'after',
        '\nOperator alerts (delivery role): chain stopped, lagging or recovered, node ineligible or eligible again,\n' +
          'subscriptions deactivated, callbacks exhausted, the embedded database started again after it died.\n' +
          'Always logged (warn) and counted (herald_alerts_total);\n' +
          'POSTed, signed with the Standard Webhooks headers, when a webhook is given:\n' +
          '  HERALD_ALERTS_WEBHOOK_URL=https://ops.example.com/herald HERALD_ALERTS_SECRET=whsec_... herald serve\n' +
          '  HERALD_ALERTS_LAG_SECONDS=300   a chain this far behind for a minute is lagging (docs/operations/alerts.md)',
      )
      .addOption(new Option('--port <port>', 'TCP port to listen on (default: HERALD_PORT, the config file, or 8080)').argParser(integer('--port')))
      .addOption(new Option('--host <host>', 'address to listen on (default: HERALD_HOST, the config file, or 127.0.0.1)'))
      .addOption(
        new Option(
          '--roles <roles>',
          'what this process does, comma-separated: api (HTTP API), ingest (follows the configured chains), delivery (sends callbacks); default all three',
        ).argParser((v) => {
          const roles = v.split(',').map((r) => r.trim());
          const unknown = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
          if (unknown.length > 0) throw new InvalidArgumentError(`unknown role ${unknown.join(', ')}; the roles are ${ROLES.join(', ')}.`);
          return roles;
        }),
      ),
  ).action(async (options) => {
    // Loaded here, not at the top: the server's modules (HTTP, chain adapters, delivery) take most of a
    // second to load, which every other command would otherwise pay.
    const { serve } = await import('./serve.ts');
    await serve(configFrom(options));
  });

  registerAdminCommands(program);
  registerListCommands(program);
  registerPruneCommand(program);
  registerImportCommand(program);
  registerSecretsCommands(program);
  registerConfigCommands(program);
  registerBackupCommands(program);
  registerDevCommands(program);
  markRequiredOptions(program);
  return program;
}
