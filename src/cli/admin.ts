/**
 * Operator commands: migrate, customers, keys, credits, domains, chains, operator tokens. Each opens the
 * store, acts, closes; each that prints data takes --json. The list commands are in lists.ts.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { NetworkList } from '../delivery/destinations.ts';
import { isBlockchain, isNetwork, supportsNetwork } from '../domain/chains.ts';
import { ENDPOINT_NAMES } from '../domain/endpoints.ts';
import { chainHolds, releaseChain, resetChain } from '../services/chains.ts';
import {
  addCustomerCredits,
  addDomain,
  createCustomer,
  createKey,
  customerKeys,
  customerWithNetworks,
  revokeKeys,
  updateCustomer,
} from '../services/operator-customers.ts';
import { createOperatorToken, listOperatorTokens, revokeOperatorToken } from '../services/operator-tokens.ts';
import { withDatabase } from './database.ts';
import { commandGroup, configFrom, integer, printResult, withJsonOption, withStoreOptions } from './options.ts';

class UsageError extends Error {}

/** --allow-networks: comma-separated networks, each checked as the destination guard reads it; '' is none. */
function parseAllowNetworks(value: string): string[] {
  const networks = value
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  for (const network of networks) {
    if (network.includes('%')) throw new UsageError(`--allow-networks: '${network}' has an interface zone; give the network without it.`);
    try {
      new NetworkList([network]);
    } catch (error) {
      throw new UsageError(`--allow-networks: ${(error as Error).message} (give e.g. 10.1.0.0/16,fd00:1::/64, or '' for none).`);
    }
  }
  return networks;
}

export function registerAdminCommands(program: Command): void {
  withStoreOptions(
    withJsonOption(
      program.command('migrate').description('create the database if there is none (embedded) and apply its migrations (serve also does this at start)'),
    ),
  ).action(async (o) => {
    await withDatabase(
      configFrom(o),
      async (_db, applied) => printResult(o, { applied }, () => [applied.length ? `applied: ${applied.join(', ')}` : 'the database is up to date']),
      { create: true },
    );
  });

  const customers = commandGroup(program, 'customers', 'create, change and list customers (tenants) and their plans');
  withStoreOptions(
    withJsonOption(
      customers
        .command('create')
        .description('create a customer; prints nothing secret (make a key with `herald keys create`)')
        .requiredOption('--name <name>', 'unique customer name')
        .addOption(new Option('--credits <n>', 'starting credits (default from the config: 10000000)').argParser(integer('--credits')))
        .option('--no-mainnet', 'plan without mainnet access (test networks only)')
        .addOption(new Option('--max-subscriptions <n>', 'cap on active subscriptions (default: none)').argParser(integer('--max-subscriptions')))
        .addOption(new Option('--rate-limit <n>', 'requests per second per API key (default 100)').argParser(integer('--rate-limit', 1))),
    ),
  ).action(async (o) => {
    const config = configFrom(o);
    await withDatabase(config, async (db) => {
      const plan = { mainnetAllowed: o.mainnet, maxActiveSubscriptions: o.maxSubscriptions, requestsPerSecond: o.rateLimit };
      const c = await createCustomer({ db, config }, o.name, plan, o.credits === undefined ? undefined : BigInt(o.credits));
      printResult(o, customerItem(c, []), () => [`created customer '${c.name}': ${planText(c)}`, `next: herald keys create --customer ${c.name}`]);
    });
  });
  withStoreOptions(
    withJsonOption(
      customers
        .command('update')
        .description("change a customer's plan")
        .requiredOption('--name <name>', 'customer name')
        .option('--mainnet', 'allow mainnets')
        .option('--no-mainnet', 'test networks only')
        .addOption(new Option('--max-subscriptions <n>', 'cap on active subscriptions').argParser(integer('--max-subscriptions')))
        .option('--unlimited-subscriptions', 'remove the cap on active subscriptions')
        .addOption(new Option('--rate-limit <n>', 'requests per second per API key').argParser(integer('--rate-limit', 1)))
        .option(
          '--allow-networks <cidrs>',
          "non-public networks this customer's callbacks and domain verification may reach, comma-separated (e.g. 10.1.0.0/16,fd00:1::/64), " +
            "on top of delivery.allowNetworks; replaces the customer's list, '' removes it",
        ),
    ),
  ).action(async (o) => {
    const allowNetworks = o.allowNetworks === undefined ? undefined : parseAllowNetworks(o.allowNetworks);
    await withDatabase(configFrom(o), async (db) => {
      const cap = o.unlimitedSubscriptions ? null : o.maxSubscriptions;
      const plan = { mainnetAllowed: o.mainnet, maxActiveSubscriptions: cap, requestsPerSecond: o.rateLimit };
      const { customer: updated, allowNetworks: networks } = await updateCustomer({ db }, o.name, { plan, allowNetworks });
      printResult(o, customerItem(updated, networks), () => [
        `updated customer '${updated.name}'`,
        ...(allowNetworks ? [`  allowed non-public networks: ${networksText(networks)}`] : []),
      ]);
    });
  });
  withStoreOptions(
    withJsonOption(customers.command('show').description('show a customer, its plan, credits and keys').requiredOption('--name <name>', 'customer name')),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const { customer: c, allowNetworks: networks } = await customerWithNetworks({ db }, o.name);
      const keys = await customerKeys({ db }, c.name);
      printResult(o, { ...customerItem(c, networks), keys }, () => [
        `customer '${c.name}' (id ${c.id}): ${planText(c)}`,
        `  allowed non-public networks: ${networksText(networks)}`,
        ...keys.map((k) => `  ${keyText(k)}`),
      ]);
    });
  });

  const keys = commandGroup(program, 'keys', 'API keys: shown once at creation, stored only as hashes');
  withStoreOptions(
    withJsonOption(
      keys
        .command('create')
        .description('create an API key for a customer and print it (the only time it is shown)')
        .requiredOption('--customer <name>', 'customer name')
        .option('--label <text>', 'a note to tell keys apart')
        .addOption(new Option('--allow <endpoints...>', 'restrict the key to these endpoints').choices([...ENDPOINT_NAMES])),
    ),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const { keyId: id, apiKey: key } = await createKey({ db }, o.customer, { label: o.label, allowedEndpoints: o.allow });
      process.stderr.write(`API key ${id} for customer '${o.customer}' (store it now; it cannot be shown again):\n`);
      printResult(o, { customer: o.customer, keyId: id, apiKey: key }, () => [key]);
    });
  });
  withStoreOptions(
    withJsonOption(
      keys
        .command('revoke')
        .description('revoke an API key at once')
        .requiredOption('--customer <name>', 'customer name')
        .requiredOption('--key <id-or-prefix>', 'the key id or its first 10 characters (see `herald keys list`)'),
    ),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const n = await revokeKeys({ db }, o.customer, o.key);
      if (n === 0) throw new UsageError(`No active key '${o.key}' of customer '${o.customer}'. List keys with: herald keys list --customer ${o.customer}`);
      printResult(o, { customer: o.customer, revoked: n }, () => [`revoked ${n} key${n > 1 ? 's' : ''}`]);
    });
  });

  withStoreOptions(
    withJsonOption(
      commandGroup(program, 'credits', 'manage credits')
        .command('add')
        .description("add credits to a customer's balance")
        .requiredOption('--customer <name>', 'customer name')
        .requiredOption('--amount <n>', 'credits to add', integer('--amount', 1)),
    ),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const credits = await addCustomerCredits({ db }, o.customer, o.amount);
      printResult(o, { customer: o.customer, credits }, () => [`customer '${o.customer}' now has ${credits} credits`]);
    });
  });

  withStoreOptions(
    withJsonOption(
      commandGroup(program, 'domains', 'callback domains of customers')
        .command('add')
        .description('register a callback domain for a customer; with --verified, mark it verified (operator override)')
        .requiredOption('--customer <name>', 'customer name')
        .requiredOption('--domain <host>', 'exact host name of callback URLs, e.g. hooks.example.com')
        .option('--verified', 'mark the domain verified without a proof'),
    ),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const d = await addDomain({ db }, o.customer, o.domain, { verified: o.verified === true });
      printResult(o, { customer: o.customer, domain: d.domain, verifiedAt: d.verifiedAt, verificationToken: d.verificationToken }, () => [
        d.verifiedAt
          ? `domain ${d.domain} is verified for customer '${o.customer}'`
          : `domain ${d.domain} registered for '${o.customer}'; verification token: ${d.verificationToken}`,
      ]);
    });
  });

  withStoreOptions(
    withJsonOption(
      commandGroup(program, 'chains', 'chain following state')
        .command('reset')
        .description(
          "forget where a chain's following stands (cursor, window of recent blocks, events waiting for confirmations, " +
            'unsent callbacks of those blocks) so it starts again at its configured startHeight or the node head: ' +
            'the way out of a chain stopped by a reorganisation deeper than the window. Events of the blocks skipped are not sent.',
        )
        .requiredOption('--blockchain <name>', 'e.g. ethereum')
        .requiredOption('--network <name>', 'e.g. mainnet')
        .requiredOption('--yes', 'confirm: blocks between the old cursor and the new start are not followed'),
    ),
  ).action(async (o) => {
    if (!isBlockchain(o.blockchain) || !isNetwork(o.network) || !supportsNetwork(o.blockchain, o.network))
      throw new UsageError(`'${o.blockchain}' '${o.network}' is not a blockchain and network herald knows.`);
    await withDatabase(configFrom(o), async (db) => {
      const removed = await resetChain(db, { blockchain: o.blockchain, network: o.network });
      printResult(o, { blockchain: o.blockchain, network: o.network, ...removed }, () => [
        removed.cursor
          ? `${o.blockchain} ${o.network}: forgot the cursor at ${removed.cursor.height} (${removed.cursor.state}), ${removed.pendingDeleted} waiting event(s) and ${removed.callbacksCancelled} unsent callback(s); a running ingest process starts again within 10 s at the configured startHeight or the node head`
          : `${o.blockchain} ${o.network} had no following state`,
      ]);
    });
  });

  withStoreOptions(
    withJsonOption(
      commandGroup(program, 'chains', 'chain following state')
        .command('release')
        .description(
          'release a chain held by the deep-reorganisation breaker (a reorganisation deeper than its reorgBreakerDepth, or its nodes ' +
            'disagreeing that deep): its held confirmed callbacks are sent now. Look at the reorganisation first (herald chains holds, ' +
            'or the console): see docs/operations/troubleshooting.md.',
        )
        .requiredOption('--blockchain <name>', 'e.g. litecoin')
        .requiredOption('--network <name>', 'e.g. mainnet'),
    ),
  ).action(async (o) => {
    if (!isBlockchain(o.blockchain) || !isNetwork(o.network) || !supportsNetwork(o.blockchain, o.network))
      throw new UsageError(`'${o.blockchain}' '${o.network}' is not a blockchain and network herald knows.`);
    await withDatabase(configFrom(o), async (db) => {
      const released = await releaseChain(db, { blockchain: o.blockchain, network: o.network });
      printResult(
        o,
        {
          blockchain: o.blockchain,
          network: o.network,
          released: released.hold !== undefined,
          callbacksReleased: released.callbacksReleased,
          ...(released.hold && { hold: released.hold }),
        },
        () => [
          released.hold
            ? `${o.blockchain} ${o.network}: released (held since ${released.hold.heldAt.toISOString()}, ${released.hold.reason} of ${released.hold.depth} blocks); ${released.callbacksReleased} held callback(s) are due now`
            : `${o.blockchain} ${o.network} was not held: nothing to release`,
        ],
      );
    });
  });

  withStoreOptions(
    withJsonOption(
      commandGroup(program, 'chains', 'chain following state')
        .command('holds')
        .description(
          'the chains held by the deep-reorganisation breaker: since when, why, how deep, the blocks involved (orphaned and new hash per height) and how many callbacks wait',
        ),
    ),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const holds = await chainHolds(db);
      printResult(o, { items: holds }, () =>
        holds.length === 0
          ? ['no chain is held']
          : holds.flatMap((h) => [
              `${h.blockchain} ${h.network}: held since ${h.heldAt.toISOString()}, ${h.reason} of ${h.depth} blocks (breaker ${h.breakerDepth}), ${h.heldCallbacks} callback(s) held`,
              ...(h.trips.at(-1)?.blocks ?? []).map((b) => `  ${b.height}: ${b.orphanedHash} -> ${b.newHash ?? '?'}`),
            ]),
      );
    });
  });

  const tokens = commandGroup(
    program,
    'operator-tokens',
    'Bearer tokens of the operator console and the /operator/* routes: shown once at creation, stored only as hashes',
  );
  withStoreOptions(
    withJsonOption(
      tokens
        .command('create')
        .description('create an operator token and print it (the only time it is shown)')
        .requiredOption('--name <name>', 'who or what holds it, e.g. alice or grafana; one active token per name'),
    ),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const created = await createOperatorToken({ db }, o.name);
      if (!created) throw new UsageError(`An active operator token named '${o.name}' exists. Revoke it first: herald operator-tokens revoke --name ${o.name}`);
      process.stderr.write(`operator token '${o.name}' (store it now; it cannot be shown again):\n`);
      printResult(o, { name: o.name, token: created.token }, () => [created.token]);
    });
  });
  withStoreOptions(withJsonOption(tokens.command('list').description('list operator tokens: name, prefix, created, revoked'))).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const all = await listOperatorTokens({ db });
      printResult(o, { items: all }, () =>
        all.length === 0
          ? ['no operator tokens (make one with: herald operator-tokens create --name NAME)']
          : all.map((t) => `${t.name} ${t.prefix}... created ${t.createdAt.toISOString()} ${t.revokedAt ? `revoked ${t.revokedAt.toISOString()}` : 'active'}`),
      );
    });
  });
  withStoreOptions(
    withJsonOption(
      tokens.command('revoke').description('revoke the active operator token of a name at once').requiredOption('--name <name>', 'the token name'),
    ),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      if (!(await revokeOperatorToken({ db }, o.name)))
        throw new UsageError(`No active operator token named '${o.name}'. List them with: herald operator-tokens list`);
      printResult(o, { name: o.name, revoked: true }, () => [`revoked operator token '${o.name}'`]);
    });
  });
}

/** A customer as --json shows it (customers create, update, show). */
function customerItem(c: Awaited<ReturnType<typeof createCustomer>>, allowNetworks: string[]) {
  return {
    name: c.name,
    id: c.id,
    credits: c.credits,
    plan: { mainnetAllowed: c.mainnetAllowed, maxActiveSubscriptions: c.maxActiveSubscriptions, requestsPerSecond: c.requestsPerSecond },
    allowNetworks,
  };
}

export function planText(c: { credits: bigint; mainnetAllowed: boolean; maxActiveSubscriptions: number | null; requestsPerSecond: number }): string {
  return (
    `credits ${c.credits}, mainnet ${c.mainnetAllowed ? 'yes' : 'no'}, ` +
    `max active subscriptions ${c.maxActiveSubscriptions ?? 'unlimited'}, ${c.requestsPerSecond} requests/s per key`
  );
}

const networksText = (networks: string[]) => `${networks.length > 0 ? networks.join(', ') : 'none of its own'} (plus delivery.allowNetworks)`;

/** One key on one line (customers show, keys list). */
export function keyText(k: Awaited<ReturnType<typeof customerKeys>>[number]): string {
  return (
    `key ${k.keyId} ${k.prefix}... ${k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active'}` +
    `${k.label ? ` (${k.label})` : ''}${k.allowedEndpoints ? ` only: ${k.allowedEndpoints.join(',')}` : ''}`
  );
}
