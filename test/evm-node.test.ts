/**
 * The local EVM node (test/support/evm-node.ts) and the test contracts (test/support/evm-contracts.ts)
 * work for real: HTTP and WS JSON-RPC, logs of the expected shapes, callTracer traces with internal value
 * transfers (also failed ones), snapshots, subscriptions, the down switch, and the methods EDR lacks.
 */
import { type Address, decodeAbiParameters, encodeFunctionData, type Hex, hexToString, keccak256, stringToHex, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { compileContracts, deployContract, readContract, sendEth, writeContract } from './support/evm-contracts.ts';
import { type EvmNode, JsonRpcError, startEvmNode } from './support/evm-node.ts';

const TRANSFER_TOPIC = keccak256(stringToHex('Transfer(address,address,uint256)'));

interface CallFrame {
  type: string;
  from: Address;
  to: Address;
  value?: Hex;
  error?: string;
  revertReason?: string;
  calls?: CallFrame[];
}

let node: EvmNode;

/** The address of node.accounts[i]. */
function addr(i: number): Address {
  const account = node.accounts[i];
  if (!account) throw new Error(`no account ${i}`);
  return account.address;
}

/** POSTs `body` as JSON (a string is sent as is). */
async function post(body: unknown): Promise<{ status: number; json: unknown }> {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  const response = await fetch(node.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: payload });
  const text = await response.text();
  return { status: response.status, json: response.headers.get('content-type') === 'application/json' ? JSON.parse(text) : text };
}

function trace(hash: Hex): Promise<CallFrame> {
  return node.request<CallFrame>('debug_traceTransaction', [hash, { tracer: 'callTracer' }]);
}

/** A WebSocket client that collects every message. */
async function openWs(): Promise<{
  ws: WebSocket;
  messages: Record<string, unknown>[];
  next: (pred: (m: Record<string, unknown>) => boolean) => Promise<Record<string, unknown>>;
}> {
  const ws = new WebSocket(node.wsUrl);
  const messages: Record<string, unknown>[] = [];
  const waiters: { pred: (m: Record<string, unknown>) => boolean; resolve: (m: Record<string, unknown>) => void }[] = [];
  ws.on('message', (raw) => {
    const message = JSON.parse(raw.toString()) as Record<string, unknown>;
    messages.push(message);
    for (const w of waiters.splice(0)) {
      if (w.pred(message)) w.resolve(message);
      else waiters.push(w);
    }
  });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const next = (pred: (m: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const seen = messages.find(pred);
      if (seen) resolve(seen);
      else waiters.push({ pred, resolve });
    });
  return { ws, messages, next };
}

beforeAll(async () => {
  [node] = await Promise.all([startEvmNode(), compileContracts()]);
});

afterAll(async () => {
  await node?.close();
});

describe('evm node', () => {
  it('answers HTTP JSON-RPC, single and batch, with the well-known funded accounts', async () => {
    expect(await post({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] })).toEqual({
      status: 200,
      json: { jsonrpc: '2.0', id: 1, result: '0x0' },
    });
    const batch = await post([
      { jsonrpc: '2.0', id: 'a', method: 'eth_chainId', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_getBalance', params: [addr(9), 'latest'] },
      { jsonrpc: '2.0', id: 3, method: 'no_such_method', params: [] },
    ]);
    expect(batch.json).toEqual([
      { jsonrpc: '2.0', id: 'a', result: '0x5' },
      { jsonrpc: '2.0', id: 2, result: toHex(10_000n * 10n ** 18n) },
      { jsonrpc: '2.0', id: 3, error: expect.objectContaining({ code: -32004 }) },
    ]);
    expect((await post('{not json')).json).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    expect((await post('[]')).json).toMatchObject({ error: { code: -32600 } });
    const subscribeOverHttp = await post({ jsonrpc: '2.0', id: 4, method: 'eth_subscribe', params: ['newHeads'] });
    expect(subscribeOverHttp.json).toMatchObject({ id: 4, error: { code: -32601 } });
    expect(node.accounts).toHaveLength(10);
    expect(node.accounts[0]).toEqual({
      address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
    });
  });

  it('ERC-20 mint and transfer give 3-topic Transfer logs', async () => {
    const token = await deployContract(node, 'TestToken', ['Test Token', 'TT', 6]);
    expect(await readContract(node, 'TestToken', token, 'decimals')).toBe(6);
    await writeContract(node, 'TestToken', token, 'mint', [addr(0), 1_000n]);
    const { receipt } = await writeContract(node, 'TestToken', token, 'transfer', [addr(1), 250n]);
    expect(receipt?.status).toBe('success');
    expect(receipt?.logs).toHaveLength(1);
    const log = receipt?.logs[0];
    expect(log?.address).toBe(token.toLowerCase());
    expect(log?.topics).toHaveLength(3);
    expect(log?.topics[0]).toBe(TRANSFER_TOPIC);
    expect(log?.topics[2]).toBe(`0x${addr(1).slice(2).toLowerCase().padStart(64, '0')}`);
    expect(BigInt(log?.data ?? '0x')).toBe(250n);
    expect(await readContract(node, 'TestToken', token, 'balanceOf', [addr(1)])).toBe(250n);
  });

  it('ERC-721 transfer gives a 4-topic Transfer log', async () => {
    const nft = await deployContract(node, 'TestNft', ['Test NFT', 'TNFT']);
    await writeContract(node, 'TestNft', nft, 'mint', [addr(0), 42n]);
    const { receipt } = await writeContract(node, 'TestNft', nft, 'transferFrom', [addr(0), addr(1), 42n]);
    const log = receipt?.logs[0];
    expect(log?.topics).toHaveLength(4);
    expect(log?.topics[0]).toBe(TRANSFER_TOPIC);
    expect(BigInt(log?.topics[3] ?? '0x')).toBe(42n);
    expect(log?.data).toBe('0x');
    expect(await readContract(node, 'TestNft', nft, 'ownerOf', [42n])).toBe(addr(1));
  });

  it('Forwarder: callTracer shows the internal value transfers as child CALL frames', async () => {
    const forwarder = await deployContract(node, 'Forwarder');
    const forward = await writeContract(node, 'Forwarder', forwarder, 'forward', [addr(1)], { value: 1234n });
    const top = await trace(forward.hash);
    expect(top).toMatchObject({ type: 'CALL', to: forwarder.toLowerCase(), value: toHex(1234n) });
    expect(top.calls).toEqual([expect.objectContaining({ type: 'CALL', from: forwarder.toLowerCase(), to: addr(1).toLowerCase(), value: toHex(1234n) })]);
    expect(top.calls?.[0]?.error).toBeUndefined();

    const split = await trace((await writeContract(node, 'Forwarder', forwarder, 'split', [addr(1), addr(2)], { value: 1001n })).hash);
    expect(split.calls?.map((c) => [c.to, c.value])).toEqual([
      [addr(1).toLowerCase(), toHex(500n)],
      [addr(2).toLowerCase(), toHex(501n)],
    ]);

    const plain = await trace((await sendEth(node, addr(2), 5n)).hash);
    expect(plain).toMatchObject({ type: 'CALL', value: '0x5' });
    expect(plain.calls).toBeUndefined();
  });

  it('Swallower: a failed value-carrying frame has value and error, the transaction succeeds', async () => {
    const swallower = await deployContract(node, 'Swallower');
    const before = await node.request<Hex>('eth_getBalance', [addr(1), 'latest']);
    const { hash, receipt } = await writeContract(node, 'Swallower', swallower, 'trySend', [addr(1)], { value: 777n });
    expect(receipt?.status).toBe('success');
    expect(await node.request<Hex>('eth_getBalance', [addr(1), 'latest'])).toBe(before);
    const top = await trace(hash);
    expect(top.error).toBeUndefined();
    const failed = top.calls?.[0];
    expect(failed).toMatchObject({ type: 'CALL', value: toHex(777n), error: 'execution reverted', revertReason: 'swallowed' });
    // The payment inside the failed frame is undone too, but its own frame carries no error: only an ancestor's.
    expect(failed?.calls).toEqual([expect.objectContaining({ to: addr(1).toLowerCase(), value: toHex(777n) })]);
    expect(failed?.calls?.[0]?.error).toBeUndefined();
  });

  it('non-standard metadata: bytes32 symbol, missing decimals()', async () => {
    const name = stringToHex('Maker', { size: 32 });
    const symbol = stringToHex('MKR', { size: 32 });
    const b32 = await deployContract(node, 'Bytes32Token', [name, symbol]);
    const raw = await node.request<Hex>('eth_call', [{ to: b32, data: encodeFunctionData({ abi: stringAbi, functionName: 'symbol' }) }, 'latest']);
    expect(raw).toBe(symbol);
    expect(() => decodeAbiParameters([{ type: 'string' }], raw)).toThrow();
    expect(hexToString(raw, { size: 32 })).toBe('MKR');

    const noDecimals = await deployContract(node, 'NoDecimalsToken', ['No Decimals', 'NOD']);
    expect(await readContract(node, 'NoDecimalsToken', noDecimals, 'symbol')).toBe('NOD');
    const error = await node.request('eth_call', [{ to: noDecimals, data: '0x313ce567' }, 'latest']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JsonRpcError);
    expect((error as JsonRpcError).message).toMatch(/revert/i);
  });

  it('evm_snapshot / evm_revert rewinds blocks, and a re-mined branch with other timestamps has other hashes', async () => {
    const start = Number(await node.request<Hex>('eth_blockNumber'));
    const id = await node.snapshot();
    expect(await node.mine(3)).toBe(start + 3);
    const oldHead = await node.request<{ hash: Hex; timestamp: Hex }>('eth_getBlockByNumber', ['latest', false]);
    await node.revert(id);
    expect(Number(await node.request<Hex>('eth_blockNumber'))).toBe(start);
    await node.mine(3, { timestamp: Number(oldHead.timestamp) + 100 });
    const newHead = await node.request<{ hash: Hex }>('eth_getBlockByNumber', ['latest', false]);
    expect(newHead.hash).not.toBe(oldHead.hash);
    await expect(node.revert('0x9999')).rejects.toThrow(/unknown snapshot/);
  });

  it('WebSocket: plain requests, eth_subscribe newHeads and logs, eth_unsubscribe', async () => {
    const { ws, next } = await openWs();
    try {
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }));
      expect(await next((m) => m.id === 1)).toEqual({ jsonrpc: '2.0', id: 1, result: '0x5' });
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_subscribe', params: ['newHeads'] }));
      const subscription = (await next((m) => m.id === 2)).result as string;
      expect(subscription).toMatch(/^0x[0-9a-f]+$/);
      const head = await node.mine(1);
      const notification = await next((m) => m.method === 'eth_subscription');
      expect(notification).toMatchObject({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription, result: { number: toHex(head) } } });

      const token = await deployContract(node, 'TestToken', ['Sub', 'SUB', 18]);
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'eth_subscribe', params: ['logs', { address: token }] }));
      const logSubscription = (await next((m) => m.id === 3)).result as string;
      await node.mine(1); // an empty block: no notification for the logs subscription
      await writeContract(node, 'TestToken', token, 'mint', [addr(1), 9n]);
      const logNotification = await next((m) => (m.params as { subscription?: string } | undefined)?.subscription === logSubscription);
      expect(logNotification).toMatchObject({
        params: { result: { address: token.toLowerCase(), topics: [TRANSFER_TOPIC, expect.any(String), expect.any(String)] } },
      });

      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'eth_unsubscribe', params: [subscription] }));
      expect((await next((m) => m.id === 4)).result).toBe(true);
    } finally {
      ws.close();
    }
  });

  it('down() fails HTTP with 503 and drops and refuses WebSockets; up() restores', async () => {
    const { ws } = await openWs();
    const closed = new Promise((resolve) => ws.once('close', resolve));
    node.down();
    await closed;
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] })).status).toBe(503);
    await expect(openWs()).rejects.toThrow(/503/);
    expect(await node.request('eth_chainId')).toBe('0x5'); // direct requests still work
    node.up();
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] })).status).toBe(200);
    (await openWs()).ws.close();
  });

  it('EDR lacks eth_getBlockReceipts, debug_traceBlockByNumber and trace_block (production nodes have them)', async () => {
    for (const [method, params] of [
      ['eth_getBlockReceipts', ['latest']],
      ['debug_traceBlockByNumber', ['latest', { tracer: 'callTracer' }]],
      ['trace_block', ['latest']],
    ] as const) {
      const { json } = await post({ jsonrpc: '2.0', id: 1, method, params });
      expect(json).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32004, message: `Method ${method} is not supported` } });
    }
  });
});

const stringAbi = [{ type: 'function', name: 'symbol', stateMutability: 'view', inputs: [], outputs: [{ type: 'string' }] }] as const;
