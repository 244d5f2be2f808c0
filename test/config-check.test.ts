/**
 * Configuration you can check (docs/operations/configuration-check.md): the committed JSON Schema is the
 * generator's output, it accepts what loadConfig accepts and refuses what it refuses, and `herald config
 * check` names the key or variable at fault and prints the effective configuration with secrets masked.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import AjvModule from 'ajv';
import { describe, expect, it } from 'vitest';
import { checkConfiguration } from '../src/cli/config.ts';
import { loadConfig, unknownEnvironmentVariables } from '../src/config/config.ts';
import { configJsonSchema } from '../src/config/json-schema.ts';

// ajv is CommonJS: under NodeNext its class is the default export's `default` (as in src/api/validation.ts).
const Ajv = AjvModule.default;
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'herald-config-check-'));
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('HERALD_') && name !== 'DATABASE_URL'));

function writeConfig(name: string, settings: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(settings));
  return file;
}

async function configCheck(file: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('node', ['bin/herald.js', 'config', 'check', '--config', file], { env: { ...cleanEnv, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const example = {
  $schema: './herald.config.schema.json',
  port: 8081,
  databaseUrl: 'postgres://herald:db-password-1@db.internal/herald',
  alerts: { webhookUrl: 'https://ops.example.com/herald', secret: 'alert-secret-value-1' },
  secrets: { encryptionKey: Buffer.alloc(32, 7).toString('base64') },
  chains: [
    { blockchain: 'ethereum', network: 'mainnet', rpcUrl: 'https://mainnet.example.io/v3/0123456789abcdef0123' },
    { blockchain: 'litecoin', network: 'mainnet', rpcUrl: 'http://ltc:9332', rpcUser: 'herald', rpcPassword: 'node-password-1' },
  ],
};

describe('the JSON Schema of herald.config.json', () => {
  it('is committed as deploy/herald.config.schema.json, exactly what `herald config schema` generates (regenerate with it)', () => {
    const committed = JSON.parse(readFileSync('deploy/herald.config.schema.json', 'utf8'));
    expect(committed).toEqual(configJsonSchema());
  });

  it('accepts a partial file (defaults fill the rest) and refuses an unknown key or a wrong type, as loadConfig does', () => {
    const validate = new Ajv({ strict: false }).compile(configJsonSchema());
    expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
    expect(() => loadConfig({ configFile: writeConfig('example.json', example) }, {})).not.toThrow();

    const unknownKey = { ...example, delivery: { timeoutMS: 5000 } };
    expect(validate(unknownKey)).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ instancePath: '/delivery', params: { additionalProperty: 'timeoutMS' } });
    expect(() => loadConfig({ configFile: writeConfig('unknown.json', unknownKey) }, {})).toThrow(/\/delivery\/timeoutMS: unknown key/);

    const wrongType = { ...example, port: '8081' };
    expect(validate(wrongType)).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ instancePath: '/port' });
    expect(() => loadConfig({ configFile: writeConfig('wrong-type.json', wrongType) }, {})).toThrow(/\/port: Expected integer/);

    const chainWithoutNetwork = { chains: [{ blockchain: 'ethereum', rpcUrl: 'http://eth:8545' }] };
    expect(validate(chainWithoutNetwork)).toBe(false);
    expect(() => loadConfig({ configFile: writeConfig('no-network.json', chainWithoutNetwork) }, {})).toThrow(/\/chains\/0\/network/);
  });
});

describe('herald config check', () => {
  it('prints the effective configuration (file, then environment) with every secret and URL credential masked', async () => {
    const file = writeConfig('valid.json', example);
    const { code, stdout, stderr } = await configCheck(file, { HERALD_PORT: '9090', HERALD_RPC_ETHEREUM_SEPOLIA: 'http://user:rpc-pass-1@sepolia:8545' });
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('the configuration is valid');
    const printed = JSON.parse(stdout);
    expect(printed.port).toBe(9090);
    expect(printed.delivery.timeoutMs).toBe(5000);
    expect(printed.alerts.secret).toBe('***');
    expect(printed.secrets.encryptionKey).toBe('***');
    expect(printed.databaseUrl).toBe('postgres://db.internal/herald');
    expect(printed.chains.map((c: { network: string }) => c.network)).toEqual(['mainnet', 'mainnet', 'sepolia']);
    for (const secret of ['db-password-1', 'alert-secret-value-1', 'node-password-1', 'rpc-pass-1', '0123456789abcdef0123', example.secrets.encryptionKey]) {
      expect(stdout).not.toContain(secret);
    }
  });

  it('names an unknown key, a wrong type, or an unknown HERALD_ variable (the command exits 2 with it)', () => {
    const problem = (settings: unknown, env: NodeJS.ProcessEnv = {}) => {
      const result = checkConfiguration(writeConfig('check.json', settings), env);
      return 'problem' in result ? result.problem : 'valid';
    };
    expect(problem(example)).toBe('valid');
    expect(problem({ ...example, retention: { deliverdDays: 3 } })).toContain('/retention/deliverdDays: unknown key');
    expect(problem(example, { HERALD_PORT: 'eighty' })).toContain('/port: Expected integer');
    // Every variable the loader reads is known to the check (a new one added to one list and not the other fails here).
    const read = [...readFileSync('src/config/config.ts', 'utf8').matchAll(/env\.(HERALD_[A-Z0-9_]+)/g)].map((m) => m[1]);
    expect(read.length).toBeGreaterThan(15);
    expect(unknownEnvironmentVariables(Object.fromEntries(read.map((name) => [name, 'x'])))).toEqual([]);
    expect(problem(example, { HERALD_DELIVERY_TIMEOUT: '10', HERALD_RPC_ETHEREUM_MAINET: 'http://x', HERALD_RPC_ETHEREUM_MAINNET: 'http://x' })).toContain(
      'unknown environment variables HERALD_DELIVERY_TIMEOUT, HERALD_RPC_ETHEREUM_MAINET (',
    );
  });
});
