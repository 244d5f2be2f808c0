/**
 * `herald subscriptions import --customer NAME --file subs.ndjson`: the bulk create of the API from a
 * file (docs/guides/bulk-import.md), charged to the customer as the API charges.
 *
 * One JSON object per line: either `{ "blockchain", "network", "event", "item": { ... } }`, or the item
 * alone with --blockchain, --network and --event giving the rest (they are also the defaults of the
 * first form). `event` is the create endpoint's name (address-tokens-transactions-confirmed) or its
 * event type (ADDRESS_TOKENS_TRANSACTION_CONFIRMED). Consecutive lines of one event and chain go
 * together, up to 10,000 a batch. One answer per line on stdout (NDJSON: line, status, referenceId or
 * error); progress on stderr. Exit code 1 when any line failed.
 */
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { type Command, Option } from 'commander';
import { CREATE_ROUTES } from '../api/routes/subscriptions.ts';
import { API_VERSION } from '../api/schemas.ts';
import { itemValidator } from '../api/validation.ts';
import { type Blockchain, EVENT_BLOCKCHAINS, type EventType, isBlockchain, isNetwork, type Network, supportsNetwork } from '../domain/chains.ts';
import { ApiError } from '../domain/errors.ts';
import { BULK_MAX_ITEMS, type BulkItemResult, createSubscriptionsInBulk } from '../services/bulk-subscriptions.ts';
import type { Caller } from '../services/context.ts';
import { customerNamed } from '../services/operator-customers.ts';
import { openForCommand } from './database.ts';
import { commandGroup, configFrom, withStoreOptions } from './options.ts';

interface Line {
  number: number;
  /** The batch this line goes in: event and chain (or the error of the line itself). */
  group: string;
  route?: (typeof CREATE_ROUTES)[number];
  blockchain?: Blockchain;
  network?: Network;
  item: unknown;
  error?: ApiError;
}

const ROUTES = new Map<string, (typeof CREATE_ROUTES)[number]>(CREATE_ROUTES.flatMap((r) => [[r.path, r] as const, [r.eventType, r] as const]));
const validators = new Map(CREATE_ROUTES.map((r) => [r.eventType, itemValidator(r.item)]));

function parseLine(text: string, number: number, defaults: { blockchain?: string; network?: string; event?: string }): Line {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { number, group: 'error', item: undefined, error: new ApiError('bad_json', `Line ${number} is not JSON: ${(error as Error).message}`) };
  }
  const wrapped = value !== null && typeof value === 'object' && 'item' in value;
  const o = (wrapped ? value : {}) as { blockchain?: unknown; network?: unknown; event?: unknown; item?: unknown };
  const blockchain = String(o.blockchain ?? defaults.blockchain ?? '');
  const network = String(o.network ?? defaults.network ?? '');
  const event = String(o.event ?? defaults.event ?? '');
  const item = wrapped ? o.item : value;
  const route = ROUTES.get(event);
  const fail = (message: string) => ({ number, group: 'error', item, error: new ApiError('uri_not_found', message) });
  if (!route)
    return fail(`Line ${number}: unknown event '${event}'; give "event" (or --event) as a create endpoint's name, e.g. address-tokens-transactions-confirmed.`);
  if (!isBlockchain(blockchain) || !isNetwork(network) || !supportsNetwork(blockchain, network))
    return fail(`Line ${number}: '${blockchain}' '${network}' is not a supported blockchain and network; give "blockchain" and "network" (or the flags).`);
  if (!(EVENT_BLOCKCHAINS[route.eventType] as readonly string[]).includes(blockchain))
    return fail(`Line ${number}: ${route.path} is not offered on ${blockchain}.`);
  return { number, group: `${route.eventType}/${blockchain}/${network}`, route, blockchain, network, item };
}

function answer(line: number, result: BulkItemResult) {
  switch (result.status) {
    case 'created':
      return { line, status: 'created', referenceId: result.subscription.id };
    case 'duplicate':
      return { line, status: 'duplicate', referenceId: result.referenceId };
    default:
      return {
        line,
        status: 'failed',
        error: { code: result.error.code, message: result.error.message, ...(result.error.details && { details: result.error.details }) },
      };
  }
}

export function registerImportCommand(program: Command): void {
  const subscriptions = commandGroup(program, 'subscriptions', "a customer's subscriptions");
  withStoreOptions(
    subscriptions
      .command('import')
      .description(`create a customer's subscriptions from an NDJSON file, as the bulk endpoint does (charged the same); one answer per line on stdout`)
      .requiredOption('--customer <name>', 'the customer')
      .requiredOption('--file <file>', 'NDJSON: one object per line, { blockchain, network, event, item } or the item alone (with the flags)')
      .addOption(new Option('--blockchain <blockchain>', 'blockchain of lines that name none'))
      .addOption(new Option('--network <network>', 'network of lines that name none'))
      .addOption(new Option('--event <event>', 'create endpoint (or event type) of lines that name none, e.g. address-tokens-transactions-confirmed')),
  ).action(async (o: { customer: string; file: string; blockchain?: string; network?: string; event?: string; dataDir?: string; config?: string }) => {
    const config = configFrom(o);
    const size = statSync(o.file).size;
    const database = await openForCommand(config);
    try {
      const customer = await customerNamed(database, o.customer);
      const caller: Caller = {
        owner: { ...customer, keyId: 'cli', customerId: customer.id, customerName: customer.name, allowedEndpoints: null },
        apiVersion: API_VERSION,
        requestId: 'cli-import',
        // The name an import's credits are recorded under in the customer's usage (GET /account/usage).
        endpoint: 'subscriptions-import',
      };
      const totals = { created: 0, duplicate: 0, failed: 0 };
      const started = performance.now();
      const stream = createReadStream(o.file);
      const progress = (final = false) => {
        const done = totals.created + totals.duplicate + totals.failed;
        const seconds = (performance.now() - started) / 1000;
        process.stderr.write(
          `${final ? 'done' : `${Math.floor((stream.bytesRead / Math.max(1, size)) * 100)}%`}: ${done} lines, ${totals.created} created, ` +
            `${totals.duplicate} duplicates, ${totals.failed} failed (${Math.round(done / Math.max(seconds, 0.001))} lines/s)\n`,
        );
      };
      const emit = (line: number, result: BulkItemResult) => {
        totals[result.status]++;
        process.stdout.write(`${JSON.stringify(answer(line, result))}\n`);
      };

      let batch: Line[] = [];
      const flush = async () => {
        const lines = batch;
        batch = [];
        const first = lines[0];
        if (!first) return;
        if (!first.route) {
          for (const l of lines) emit(l.number, { status: 'failed', error: l.error as ApiError });
          return;
        }
        const validate = validators.get(first.route.eventType as EventType) as (item: unknown) => ApiError | undefined;
        try {
          const outcome = await createSubscriptionsInBulk(
            { config, db: database.db, lowPriorityDb: database.lowPriorityDb },
            caller,
            first.route.eventType,
            first.blockchain as Blockchain,
            first.network as Network,
            lines.map((l) => l.item),
            validate,
          );
          outcome.results.forEach((result, i) => {
            emit((lines[i] as Line).number, result);
          });
        } catch (error) {
          // A refusal of the whole batch (a mainnet without the plan's access): every line of it answers so.
          if (!(error instanceof ApiError)) throw error;
          for (const l of lines) emit(l.number, { status: 'failed', error });
        }
        progress();
      };

      let number = 0;
      for await (const text of createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY })) {
        number++;
        if (text.trim() === '') continue;
        const line = parseLine(text, number, o);
        if (batch.length >= BULK_MAX_ITEMS || (batch[0] && batch[0].group !== line.group)) await flush();
        batch.push(line);
      }
      await flush();
      progress(true);
      if (totals.failed > 0) process.exitCode = 1;
    } finally {
      await database.close();
    }
  });
}
