import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, chainNodes, loadConfig, reorgBreakerDepthOf } from './config.ts';

describe('chains configuration', () => {
  it('reads HERALD_RPC_<BLOCKCHAIN>_<NETWORK> and HERALD_WS_..., dashes as underscores', () => {
    const config = loadConfig(
      {},
      {
        HERALD_RPC_ETHEREUM_GOERLI: 'http://127.0.0.1:8545',
        HERALD_WS_ETHEREUM_GOERLI: 'ws://127.0.0.1:8545',
        HERALD_RPC_BINANCE_SMART_CHAIN_TESTNET: 'http://bsc:8545',
      },
    );
    expect(config.chains).toEqual([
      expect.objectContaining({
        blockchain: 'ethereum',
        network: 'goerli',
        rpcUrl: 'http://127.0.0.1:8545',
        wsUrl: 'ws://127.0.0.1:8545',
        pollIntervalMs: 1000,
      }),
      expect.objectContaining({ blockchain: 'binance-smart-chain', network: 'testnet', rpcUrl: 'http://bsc:8545' }),
    ]);
    expect(config.roles).toEqual(['api', 'ingest', 'delivery']);
  });

  it("names ethereum's current test networks too: HERALD_RPC_ETHEREUM_SEPOLIA and HERALD_RPC_ETHEREUM_HOODI", () => {
    const config = loadConfig(
      {},
      { HERALD_RPC_ETHEREUM_SEPOLIA: 'http://sepolia:8545', HERALD_WS_ETHEREUM_SEPOLIA: 'ws://sepolia:8546', HERALD_RPC_ETHEREUM_HOODI: 'http://hoodi:8545' },
    );
    expect(config.chains).toEqual([
      expect.objectContaining({ blockchain: 'ethereum', network: 'sepolia', rpcUrl: 'http://sepolia:8545', wsUrl: 'ws://sepolia:8546' }),
      expect.objectContaining({ blockchain: 'ethereum', network: 'hoodi', rpcUrl: 'http://hoodi:8545' }),
    ]);
  });

  it('takes Bitcoin-family node credentials: user and password, or a cookie file (also HERALD_RPC_COOKIE_...), not both', () => {
    const config = loadConfig({}, { HERALD_RPC_LITECOIN_TESTNET: 'http://127.0.0.1:19332', HERALD_RPC_COOKIE_LITECOIN_TESTNET: '/var/lib/litecoind/.cookie' });
    expect(config.chains).toEqual([expect.objectContaining({ blockchain: 'litecoin', network: 'testnet', rpcCookieFile: '/var/lib/litecoind/.cookie' })]);
    const dir = mkdtempSync(join(tmpdir(), 'herald-config-'));
    const file = join(dir, 'config.json');
    const write = (chain: Record<string, unknown>) =>
      writeFileSync(file, JSON.stringify({ chains: [{ blockchain: 'bitcoin', network: 'mainnet', rpcUrl: 'http://btc:8332', ...chain }] }));
    write({ rpcUser: 'herald', rpcPassword: 'secret' });
    expect(loadConfig({ configFile: file }, {}).chains[0]).toMatchObject({ rpcUser: 'herald', rpcPassword: 'secret' });
    write({ rpcUser: 'herald', rpcPassword: 'secret', rpcCookieFile: '/c' });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/either rpcUser and rpcPassword or rpcCookieFile, not both/);
    write({ rpcUser: 'herald' });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/rpcUser and rpcPassword go together/);
    write({ blockchain: 'ethereum', rpcUser: 'a', rpcPassword: 'b' });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/for Bitcoin-family nodes/);
  });

  it('takes blockWorkers (Bitcoin-family block worker threads) from 0 to 16; absent, the registry uses its default', () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-config-'));
    const file = join(dir, 'config.json');
    const write = (chain: Record<string, unknown>) =>
      writeFileSync(file, JSON.stringify({ chains: [{ blockchain: 'bitcoin', network: 'mainnet', rpcUrl: 'http://btc:8332', ...chain }] }));
    write({ blockWorkers: 0 });
    expect(loadConfig({ configFile: file }, {}).chains[0]?.blockWorkers).toBe(0);
    write({ blockWorkers: 2 });
    expect(loadConfig({ configFile: file }, {}).chains[0]?.blockWorkers).toBe(2);
    write({});
    expect(loadConfig({ configFile: file }, {}).chains[0]?.blockWorkers).toBeUndefined();
    write({ blockWorkers: 17 });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/blockWorkers/);
    write({ blockWorkers: 1.5 });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/blockWorkers/);
  });

  it('takes mempoolCatchUpYieldMs from 0 to 60000; absent, the mempool loop uses its default', () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-config-'));
    const file = join(dir, 'config.json');
    const write = (chain: Record<string, unknown>) =>
      writeFileSync(file, JSON.stringify({ chains: [{ blockchain: 'bitcoin', network: 'mainnet', rpcUrl: 'http://btc:8332', ...chain }] }));
    write({ mempoolCatchUpYieldMs: 0 });
    expect(loadConfig({ configFile: file }, {}).chains[0]?.mempoolCatchUpYieldMs).toBe(0);
    write({});
    expect(loadConfig({ configFile: file }, {}).chains[0]?.mempoolCatchUpYieldMs).toBeUndefined();
    write({ mempoolCatchUpYieldMs: -1 });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/mempoolCatchUpYieldMs/);
  });

  it('merges the environment over the file entry of the same chain', () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-config-'));
    const file = join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({ chains: [{ blockchain: 'ethereum', network: 'mainnet', rpcUrl: 'http://file', confirmations: 12, startHeight: 100 }] }),
    );
    const config = loadConfig({ configFile: file }, { HERALD_RPC_ETHEREUM_MAINNET: 'http://env' });
    expect(config.chains).toEqual([
      expect.objectContaining({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: 'http://env', confirmations: 12, startHeight: 100 }),
    ]);
  });

  it('takes several nodes: rpcUrls and wsUrls, or comma-separated HERALD_RPC_... and HERALD_WS_...; a single rpcUrl is a pool of one', () => {
    const single = loadConfig({}, { HERALD_RPC_ETHEREUM_MAINNET: 'http://a:8545' }).chains[0];
    expect(single).toMatchObject({ rpcUrl: 'http://a:8545', rpcUrls: ['http://a:8545'], wsUrls: [], maxLagBlocks: 3, reorgQuorumDepth: 2 });
    expect(single && chainNodes(single)).toEqual([{ rpcUrl: 'http://a:8545' }]);
    const several = loadConfig({}, { HERALD_RPC_ETHEREUM_MAINNET: 'http://a:8545, http://b:8545,', HERALD_WS_ETHEREUM_MAINNET: 'ws://a:8546' }).chains[0];
    expect(several).toMatchObject({ rpcUrl: 'http://a:8545', rpcUrls: ['http://a:8545', 'http://b:8545'], wsUrl: 'ws://a:8546', wsUrls: ['ws://a:8546'] });
    expect(several && chainNodes(several)).toEqual([{ rpcUrl: 'http://a:8545', wsUrl: 'ws://a:8546' }, { rpcUrl: 'http://b:8545' }]);
    // Entries built in code (tests) may give either spelling and leave out the defaults.
    expect(chainNodes({ blockchain: 'xrp', network: 'mainnet', rpcUrl: 'http://x', pollIntervalMs: 1, concurrency: 1, requestTimeoutMs: 100 })).toEqual([
      { rpcUrl: 'http://x' },
    ]);

    const dir = mkdtempSync(join(tmpdir(), 'herald-config-'));
    const file = join(dir, 'config.json');
    const write = (chain: Record<string, unknown>) =>
      writeFileSync(file, JSON.stringify({ chains: [{ blockchain: 'litecoin', network: 'testnet', ...chain }] }));
    write({ rpcUrls: ['http://l1:19332', 'http://l2:19332'], maxLagBlocks: 6, reorgQuorumDepth: 1 });
    expect(loadConfig({ configFile: file }, {}).chains[0]).toMatchObject({ rpcUrl: 'http://l1:19332', maxLagBlocks: 6, reorgQuorumDepth: 1 });
    // The variable's nodes replace the file's.
    expect(loadConfig({ configFile: file }, { HERALD_RPC_LITECOIN_TESTNET: 'http://l3:19332' }).chains[0]).toMatchObject({
      rpcUrl: 'http://l3:19332',
      rpcUrls: ['http://l3:19332'],
    });
    write({ rpcUrl: 'http://l1:19332', rpcUrls: ['http://l2:19332'] });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/either rpcUrl or rpcUrls, not both/);
    write({});
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/rpcUrl \(one node\) or rpcUrls \(several\)/);
    write({ rpcUrls: ['http://l1:19332', 'http://l1:19332'] });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/a node is listed twice/);
    write({ rpcUrls: ['http://l1:19332'], wsUrls: ['ws://a', 'ws://b'] });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/2 WebSocket URLs for 1 node/);
    write({ rpcUrls: [] });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/rpcUrls/);
    // ZMQ rawtx publishers go with the Bitcoin-family nodes like wsUrls.
    write({ rpcUrl: 'http://l1:19332', zmqUrl: 'tcp://l1:28332' });
    const zmq = loadConfig({ configFile: file }, {}).chains[0];
    expect(zmq && chainNodes(zmq)).toEqual([{ rpcUrl: 'http://l1:19332', zmqUrl: 'tcp://l1:28332' }]);
    const zmqEnv = loadConfig({}, { HERALD_RPC_LITECOIN_TESTNET: 'http://l1:19332,http://l2:19332', HERALD_ZMQ_LITECOIN_TESTNET: 'tcp://l1:28332' }).chains[0];
    expect(zmqEnv).toMatchObject({ zmqUrl: 'tcp://l1:28332', zmqUrls: ['tcp://l1:28332'] });
    expect(zmqEnv && chainNodes(zmqEnv)).toEqual([{ rpcUrl: 'http://l1:19332', zmqUrl: 'tcp://l1:28332' }, { rpcUrl: 'http://l2:19332' }]);
    write({ rpcUrl: 'http://l1:19332', zmqUrl: 'http://l1:28332' });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/zmqUrl/);
    write({ rpcUrl: 'http://l1:19332', zmqUrls: ['tcp://a:1', 'tcp://b:1'] });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/2 ZMQ URLs for 1 node/);
    expect(() => loadConfig({}, { HERALD_RPC_ETHEREUM_MAINNET: 'http://a:8545', HERALD_ZMQ_ETHEREUM_MAINNET: 'tcp://a:28332' })).toThrow(
      /zmqUrl is for Bitcoin-family nodes/,
    );
    write({ rpcUrl: 'http://l1:19332', maxLagBlocks: -1 });
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/maxLagBlocks/);
  });

  it('refuses unknown chains, wrong networks and twins with a message naming them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-config-'));
    const file = join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({
        chains: [
          { blockchain: 'solana', network: 'mainnet', rpcUrl: 'http://x' },
          { blockchain: 'ethereum', network: 'testnet', rpcUrl: 'http://x' },
          { blockchain: 'tron', network: 'nile', rpcUrl: 'http://x' },
          { blockchain: 'tron', network: 'nile', rpcUrl: 'http://y' },
        ],
      }),
    );
    expect(() => loadConfig({ configFile: file }, {})).toThrow(ConfigError);
    try {
      loadConfig({ configFile: file }, {});
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toContain("'solana' is not one of");
      expect(message).toContain('ethereum takes mainnet, sepolia, hoodi or goerli');
      expect(message).toContain('tron/nile is configured twice');
    }
  });
});

describe('database behind a pooler', () => {
  it('takes listenDatabaseUrl and databasePreparedStatements from HERALD_LISTEN_DATABASE_URL and HERALD_DB_PREPARED_STATEMENTS', () => {
    const defaults = loadConfig({}, {});
    expect(defaults.listenDatabaseUrl).toBeUndefined();
    expect(defaults.databasePreparedStatements).toBeUndefined(); // decided at start: store/pooler-probe.ts
    const config = loadConfig(
      {},
      { DATABASE_URL: 'postgres://h@pgbouncer:6432/herald', HERALD_LISTEN_DATABASE_URL: 'postgres://h@db:5432/herald', HERALD_DB_PREPARED_STATEMENTS: 'false' },
    );
    expect(config).toMatchObject({
      databaseUrl: 'postgres://h@pgbouncer:6432/herald',
      listenDatabaseUrl: 'postgres://h@db:5432/herald',
      databasePreparedStatements: false,
    });
    expect(loadConfig({}, { HERALD_DB_PREPARED_STATEMENTS: '1' }).databasePreparedStatements).toBe(true);
    expect(() => loadConfig({}, { HERALD_DB_PREPARED_STATEMENTS: 'no' })).toThrow(/databasePreparedStatements/);
  });
});

describe('alerts configuration', () => {
  it('reads HERALD_ALERTS_WEBHOOK_URL, HERALD_ALERTS_SECRET and HERALD_ALERTS_LAG_SECONDS; defaults otherwise', () => {
    expect(loadConfig({}, {}).alerts).toEqual({
      lagSeconds: 300,
      holdSeconds: 60,
      groupSeconds: 300,
      intervalSeconds: 10,
      retrySeconds: [10, 30, 120, 600, 1800, 3600],
    });
    const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    const config = loadConfig(
      {},
      { HERALD_ALERTS_WEBHOOK_URL: 'https://ops.example.com/herald', HERALD_ALERTS_SECRET: secret, HERALD_ALERTS_LAG_SECONDS: '120' },
    );
    expect(config.alerts).toMatchObject({ webhookUrl: 'https://ops.example.com/herald', secret, lagSeconds: 120, holdSeconds: 60 });
  });

  it('refuses a webhook without a secret, a plain-http webhook, a short whsec_ secret and a non-number lag', () => {
    expect(() => loadConfig({}, { HERALD_ALERTS_WEBHOOK_URL: 'https://ops.example.com/herald' })).toThrow(/alerts\/secret: required/);
    expect(() => loadConfig({}, { HERALD_ALERTS_WEBHOOK_URL: 'http://ops.example.com/herald', HERALD_ALERTS_SECRET: 's3cret' })).toThrow(/must be https/);
    expect(() => loadConfig({}, { HERALD_ALERTS_WEBHOOK_URL: 'https://ops.example.com/', HERALD_ALERTS_SECRET: 'whsec_AAAA' })).toThrow(/at least 16/);
    expect(() => loadConfig({}, { HERALD_ALERTS_SECRET: 's3cret' })).toThrow(/without alerts.webhookUrl/);
    expect(() => loadConfig({}, { HERALD_ALERTS_LAG_SECONDS: 'soon' })).toThrow(/alerts\/lagSeconds/);
  });
});

describe('reorgBreakerDepth (docs/reference/configuration.md#the-deep-reorganisation-breaker)', () => {
  it("is the chain's own when given (0: off), else its blockchain's default", () => {
    expect(reorgBreakerDepthOf({ blockchain: 'litecoin' })).toBe(6);
    expect(reorgBreakerDepthOf({ blockchain: 'bitcoin' })).toBe(3);
    expect(reorgBreakerDepthOf({ blockchain: 'ethereum-classic' })).toBe(20);
    expect(reorgBreakerDepthOf({ blockchain: 'ethereum', reorgBreakerDepth: 0 })).toBe(0);
    expect(reorgBreakerDepthOf({ blockchain: 'litecoin', reorgBreakerDepth: 3 })).toBe(3);
    const file = join(mkdtempSync(join(tmpdir(), 'herald-config-')), 'config.json');
    const write = (depth: number) =>
      writeFileSync(file, JSON.stringify({ chains: [{ blockchain: 'litecoin', network: 'testnet', rpcUrl: 'http://ltc:9332', reorgBreakerDepth: depth }] }));
    write(3);
    expect(loadConfig({ configFile: file }, {}).chains[0]?.reorgBreakerDepth).toBe(3);
    write(-1);
    expect(() => loadConfig({ configFile: file }, {})).toThrow(/reorgBreakerDepth/);
  });
});
