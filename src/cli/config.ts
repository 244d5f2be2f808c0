/**
 * `herald config check [--config F]`: validates the configuration file and the environment as `herald serve`
 * would read them, and prints the effective configuration with its secrets masked; `herald config schema`
 * prints the file's JSON Schema (docs/operations/configuration-check.md).
 */
import type { Command } from 'commander';
import { type Config, ConfigError, loadConfig, unknownEnvironmentVariables } from '../config/config.ts';
import { configJsonSchema } from '../config/json-schema.ts';
import { redactUrl } from '../domain/node-urls.ts';
import { commandGroup, withStoreOptions } from './options.ts';

/** Settings whose values are secrets: never printed. */
const SECRET_KEYS = new Set(['secret', 'rpcPassword', 'encryptionKey', 'previousEncryptionKeys']);
/** Settings holding URLs that may carry credentials (user:password@, an API key in the path or query). */
const URL_KEYS = new Set(['databaseUrl', 'listenDatabaseUrl', 'webhookUrl', 'rpcUrl', 'rpcUrls', 'wsUrl', 'wsUrls']);

function masked(key: string, value: unknown): unknown {
  if (SECRET_KEYS.has(key)) return Array.isArray(value) ? value.map(() => '***') : '***';
  if (URL_KEYS.has(key)) return Array.isArray(value) ? value.map((u) => redactUrl(String(u))) : redactUrl(String(value));
  if (Array.isArray(value)) return value.map((item) => masked('', item));
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, masked(k, v)]));
  return value;
}

/** The configuration as `herald config check` prints it: every value, secrets and URL credentials masked. */
export function maskedConfig(config: Config): unknown {
  return masked('', config);
}

/**
 * What `herald config check` finds: the effective configuration (masked), or the problem (the key or
 * variable at fault). The file and the variables herald reads first, as `herald serve` would; then the
 * HERALD_* variables it does not read.
 */
export function checkConfiguration(configFile: string | undefined, env: NodeJS.ProcessEnv): { effective: unknown } | { problem: string } {
  let config: Config;
  try {
    config = loadConfig({ configFile }, env);
  } catch (error) {
    if (error instanceof ConfigError) return { problem: error.message };
    throw error;
  }
  const unknown = unknownEnvironmentVariables(env);
  if (unknown.length > 0) {
    return {
      problem:
        `unknown environment variable${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (not read by herald: a misspelt name, ` +
        'or a chain herald does not know; docs/operations/configuration-check.md lists the variables)',
    };
  }
  return { effective: maskedConfig(config) };
}

export function registerConfigCommands(program: Command): void {
  const config = commandGroup(program, 'config', 'check the configuration, print its JSON Schema');
  withStoreOptions(
    config
      .command('check')
      .description(
        'validate the configuration file and the HERALD_* environment as `herald serve` reads them, and print the effective configuration (secrets masked); exit 2 when invalid',
      ),
  ).action((o: { dataDir?: string; config?: string }) => {
    const result = checkConfiguration(o.config, process.env);
    if ('problem' in result) throw new ConfigError(result.problem);
    process.stdout.write(`${JSON.stringify(result.effective, null, 2)}\n`);
    process.stderr.write('herald: the configuration is valid\n');
  });
  config
    .command('schema')
    .description('print the JSON Schema of herald.config.json (deploy/herald.config.schema.json is a copy)')
    .action(() => {
      process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
    });
}
