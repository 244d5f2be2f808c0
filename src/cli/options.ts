/** What every command shares: the store options, the configuration they lead to, integer arguments, --json, the command groups. */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type ConfigOverrides, loadConfig } from '../config/config.ts';

export function integer(name: string, min = 0) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be an integer of at least ${min}.`);
    return n;
  };
}

/** Options every command shares. */
export function withStoreOptions(command: Command): Command {
  return (
    command
      // No commander defaults: a flag given wins, otherwise the config file, the environment, then the built-in default.
      .addOption(new Option('--data-dir <dir>', 'directory of the embedded database, ignored when DATABASE_URL is set (default: HERALD_DATA_DIR or ./data)'))
      .addOption(new Option('--config <file>', 'JSON configuration file (default ./herald.config.json when present)'))
  );
}

export function configFrom(options: { dataDir?: string; config?: string; port?: number; host?: string; roles?: string[] }) {
  const overrides: ConfigOverrides = { dataDir: options.dataDir, configFile: options.config, port: options.port, host: options.host, roles: options.roles };
  return loadConfig(overrides);
}

/** The command group `name` (customers, keys, subscriptions, ...), made by the first file that adds a command to it. */
export function commandGroup(program: Command, name: string, description: string): Command {
  return program.commands.find((c) => c.name() === name) ?? program.command(name).description(description);
}

/** --json: the command prints its result as one JSON document on stdout instead of lines of text. */
export function withJsonOption(command: Command): Command {
  return command.option('--json', 'print the result as JSON (one document on stdout) instead of text');
}

/** Credits are bigint in the store: numbers in JSON, as the API answers them. */
const jsonValue = (_key: string, value: unknown) => (typeof value === 'bigint' ? Number(value) : value);

/** The result of a command: `data` as JSON with --json, else the text lines. */
export function printResult(options: { json?: boolean }, data: unknown, lines: () => string[]): void {
  const text = options.json ? [JSON.stringify(data, jsonValue, 2)] : lines();
  for (const line of text) process.stdout.write(`${line}\n`);
}

/** Every required option's help says so: "(required)" before its description, in each command's --help. */
export function markRequiredOptions(command: Command): void {
  for (const option of command.options) {
    if (option.mandatory && !option.description.startsWith('(required)')) option.description = `(required) ${option.description}`;
  }
  for (const sub of command.commands) markRequiredOptions(sub);
}
