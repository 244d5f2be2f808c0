/**
 * The list commands: customers, a customer's keys, domains and subscriptions, and the chains' status.
 * Read-only, through the services the operator routes and the status endpoint use; each takes --json.
 */
import { type Command, Option } from 'commander';
import { BLOCKCHAINS, EVENT_TYPES, NETWORKS } from '../domain/chains.ts';
import { customerDomains, customerKeys, customerSubscriptions, listCustomers } from '../services/operator-customers.ts';
import { chainStatusItems } from '../services/status.ts';
import { keyText, planText } from './admin.ts';
import { withDatabase } from './database.ts';
import { commandGroup, configFrom, integer, printResult, withJsonOption, withStoreOptions } from './options.ts';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 10_000;

/** --limit and --offset of a list that pages. */
function withPageOptions(command: Command): Command {
  return command
    .addOption(new Option('--limit <n>', `at most this many (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`).argParser(integer('--limit', 1)))
    .addOption(new Option('--offset <n>', 'skip this many first (default 0)').argParser(integer('--offset')));
}

function pageOf(o: { limit?: number; offset?: number }) {
  return { limit: Math.min(o.limit ?? DEFAULT_LIMIT, MAX_LIMIT), offset: o.offset ?? 0 };
}

/** The line under a page that is not the whole list. */
function moreText(page: { limit: number; offset: number }, shown: number, total: number): string[] {
  if (page.offset === 0 && shown === total) return [];
  return [`(${shown} of ${total} from offset ${page.offset}${page.offset + shown < total ? `; next: --offset ${page.offset + shown}` : ''})`];
}

const when = (date: Date | null | undefined) => date?.toISOString() ?? '-';

export function registerListCommands(program: Command): void {
  withStoreOptions(
    withJsonOption(
      withPageOptions(
        commandGroup(program, 'customers', 'create, change and list customers (tenants) and their plans')
          .command('list')
          .description('list customers by name: plan, credits, active subscriptions, keys'),
      ),
    ),
  ).action(async (o) => {
    const page = pageOf(o);
    await withDatabase(configFrom(o), async (db) => {
      const result = await listCustomers({ db }, page);
      printResult(o, { ...page, total: result.total, items: result.items }, () => [
        ...(result.total === 0 ? ['no customers (make one with: herald customers create --name NAME)'] : []),
        ...result.items.map(
          (c) => `${c.name}: ${planText({ ...c.plan, credits: c.credits })}, ${c.activeSubscriptions} active subscriptions, ${c.keys} active keys`,
        ),
        ...moreText(page, result.items.length, result.total),
      ]);
    });
  });

  withStoreOptions(
    withJsonOption(
      commandGroup(program, 'keys', 'API keys: shown once at creation, stored only as hashes')
        .command('list')
        .description("list a customer's API keys (prefix only), revoked ones too")
        .requiredOption('--customer <name>', 'customer name'),
    ),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const keys = await customerKeys({ db }, o.customer);
      printResult(o, { customer: o.customer, items: keys }, () =>
        keys.length === 0 ? [`customer '${o.customer}' has no keys (make one with: herald keys create --customer ${o.customer})`] : keys.map(keyText),
      );
    });
  });

  withStoreOptions(
    withJsonOption(
      commandGroup(program, 'domains', 'callback domains of customers')
        .command('list')
        .description("list a customer's callback domains: verified or the token that proves them")
        .requiredOption('--customer <name>', 'customer name'),
    ),
  ).action(async (o) => {
    await withDatabase(configFrom(o), async (db) => {
      const domains = await customerDomains({ db }, o.customer);
      printResult(o, { customer: o.customer, items: domains }, () =>
        domains.length === 0
          ? [`customer '${o.customer}' has no callback domains`]
          : domains.map((d) => `${d.domain} ${d.verifiedAt ? `verified ${when(d.verifiedAt)}` : `not verified (token ${d.verificationToken})`}`),
      );
    });
  });

  withStoreOptions(
    withJsonOption(
      withPageOptions(
        commandGroup(program, 'subscriptions', "a customer's subscriptions")
          .command('list')
          .description("list a customer's subscriptions on every chain, oldest first, with their callbacks delivered, failed and pending")
          .requiredOption('--customer <name>', 'customer name')
          .addOption(new Option('--blockchain <name>', 'only this blockchain').choices([...BLOCKCHAINS]))
          .addOption(new Option('--network <name>', 'only this network').choices([...NETWORKS]))
          .addOption(new Option('--event-type <type>', 'only this event type').choices([...EVENT_TYPES]))
          .addOption(new Option('--active', 'only active ones').conflicts('inactive'))
          .addOption(new Option('--inactive', 'only deactivated ones'))
          .option('--search <text>', 'a reference id, address or transaction id (any spelling of it)'),
      ),
    ),
  ).action(async (o) => {
    const page = pageOf(o);
    const isActive = o.active ? true : o.inactive ? false : undefined;
    await withDatabase(configFrom(o), async (db) => {
      const result = await customerSubscriptions(
        { db },
        o.customer,
        { blockchain: o.blockchain, network: o.network, eventType: o.eventType, isActive, q: o.search },
        page,
      );
      printResult(o, { customer: o.customer, ...page, total: result.total, items: result.items }, () => [
        ...(result.total === 0
          ? [
              `customer '${o.customer}' has no subscriptions${o.blockchain || o.network || o.eventType || isActive !== undefined || o.search ? ' that match' : ''}`,
            ]
          : []),
        ...result.items.map(
          (s) =>
            `${s.referenceId} ${s.eventType} ${s.blockchain}/${s.network} ${s.address ?? s.transactionId ?? s.contractAddress ?? ''} -> ${s.callbackUrl || '(pull-only)'} ` +
            `${s.isActive ? 'active' : `inactive (${s.deactivationReasons.map((r) => r.reason).join(', ') || 'deactivated'})`}; ` +
            `callbacks: ${s.callbacks.delivered} delivered, ${s.callbacks.failed} failed, ${s.callbacks.pending} pending`,
        ),
        ...moreText(page, result.items.length, result.total),
      ]);
    });
  });

  withStoreOptions(
    withJsonOption(
      commandGroup(program, 'chains', 'chain following state')
        .command('status')
        .description('the chains followed (configured, or followed before): state, heights, lag, nodes, mempool; as GET /blockchain-events/status'),
    ),
  ).action(async (o) => {
    const config = configFrom(o);
    await withDatabase(config, async (db) => {
      const items = await chainStatusItems({ db, config }, new Date());
      printResult(o, { items }, () =>
        items.length === 0
          ? ['no chains configured or followed yet (give nodes with HERALD_RPC_<BLOCKCHAIN>_<NETWORK>; see herald serve --help)']
          : items.flatMap((c) => [
              `${c.blockchain}/${c.network}: ${c.state}, processed ${c.processedHeight ?? '-'} of ${c.nodeHeight ?? '-'}` +
                `${c.lagBlocks !== null ? `, ${c.lagBlocks} blocks / ${c.lagSeconds ?? '-'} s behind` : ''}${c.stopReason ? `; stopped: ${c.stopReason}` : ''}`,
              ...c.nodes.map((n) => `  node ${n.url}: ${n.eligible ? 'eligible' : `not eligible (${n.reason ?? 'unknown'})`}, head ${n.headHeight ?? '-'}`),
              ...(c.mempool ? [`  mempool (${c.mempool.method}): ${c.mempool.state}, backlog ${c.mempool.backlog}`] : []),
            ]),
      );
    });
  });
}
