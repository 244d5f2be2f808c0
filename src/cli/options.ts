/** What every command shares: the store options, the configuration they lead to, integer arguments. */
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
