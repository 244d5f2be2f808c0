/**
 * The JSON-RPC methods of the fake nodes: argument checks and errors as each node raises them (codes and
 * messages from the node sources: Bitcoin Core rpc/blockchain.cpp, rawtransaction.cpp; Dogecoin 1.14;
 * zcashd; Bitcoin Cash Node; Omni Core), over the chain state of chain.ts. Errors are RpcError; the HTTP
 * layer (server.ts) turns them into Core's error replies.
 */
import type { Block, FakeChain } from './chain.ts';
import type { Profile } from './dialects.ts';
import { descriptorChecksum, fromHex, toHex } from './encoding.ts';
import { Formatter } from './format.ts';
import { Coins } from './json-text.ts';
import { OmniError, type OmniLayer } from './omni.ts';
import { bytesEqual, describeScript } from './script.ts';

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

// Core's RPCErrorCode values used here.
export const RPC_MISC_ERROR = -1;
export const RPC_TYPE_ERROR = -3;
export const RPC_INVALID_ADDRESS_OR_KEY = -5;
export const RPC_INVALID_PARAMETER = -8;
export const RPC_METHOD_NOT_FOUND = -32601;

type ArgType = 'hash' | 'int' | 'bool' | 'intOrBool' | 'string' | 'stringOrInt' | 'array' | 'any';

interface ArgSpec {
  name: string;
  type: ArgType;
  optional?: boolean;
}

interface Method {
  args: ArgSpec[];
  usage: string;
  run: (args: unknown[]) => unknown;
}

const typeName = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v === 'boolean' ? 'bool' : typeof v;

/** UniValue's getters' messages (pre-25 Core and the forks raise them as RPC_MISC_ERROR or RPC_TYPE_ERROR). */
const OLD_TYPE_MESSAGES: Record<string, string> = {
  int: 'JSON value is not an integer as expected',
  bool: 'JSON value is not a boolean as expected',
  string: 'JSON value is not a string as expected',
  array: 'JSON value is not an array as expected',
};

function matches(type: ArgType, v: unknown): boolean {
  switch (type) {
    case 'hash':
    case 'string':
      return typeof v === 'string';
    case 'int':
      return typeof v === 'number' && Number.isInteger(v);
    case 'bool':
      return typeof v === 'boolean';
    case 'intOrBool':
      return typeof v === 'boolean' || (typeof v === 'number' && Number.isInteger(v));
    case 'stringOrInt':
      return typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));
    case 'array':
      return Array.isArray(v);
    case 'any':
      return true;
  }
}

const expectedName = (type: ArgType): string =>
  ({
    hash: 'string',
    string: 'string',
    int: 'number',
    bool: 'boolean',
    intOrBool: 'number or boolean',
    stringOrInt: 'string or number',
    array: 'array',
    any: 'any',
  })[type];

export class RpcMethods {
  readonly formatter: Formatter;
  private readonly profile: Profile;
  private readonly methods: Record<string, Method>;

  constructor(
    private readonly chain: FakeChain,
    private readonly omni: OmniLayer | undefined,
    private readonly startedAt: number,
  ) {
    this.formatter = new Formatter(chain);
    this.profile = chain.params.profile;
    this.methods = this.table();
  }

  has(method: string): boolean {
    return Object.hasOwn(this.methods, method);
  }

  /** Runs `method`; params positional or named (as Core's transformNamedArguments maps them). */
  call(method: string, params: unknown[] | Record<string, unknown>): unknown {
    const m = this.has(method) ? this.methods[method] : undefined;
    if (!m) throw new RpcError(RPC_METHOD_NOT_FOUND, 'Method not found');
    let args: unknown[];
    if (Array.isArray(params)) {
      args = params;
    } else {
      for (const key of Object.keys(params)) {
        if (!m.args.some((a) => a.name === key)) throw new RpcError(RPC_INVALID_PARAMETER, `Unknown named parameter ${key}`);
      }
      args = m.args.map((a) => params[a.name] ?? null);
      while (args.length > 0 && args[args.length - 1] === null) args.pop();
    }
    const required = m.args.filter((a) => !a.optional).length;
    if (args.length < required || args.length > m.args.length) throw new RpcError(RPC_MISC_ERROR, `${method} ${m.usage}`);
    if (this.profile === 'core') {
      // Core >= 25 checks every argument's type before running the method.
      const wrong = m.args.flatMap((a, i) =>
        i < args.length && args[i] !== null && !matches(a.type, args[i])
          ? [`    "Position ${i + 1} (${a.name})": "JSON value of type ${typeName(args[i])} is not of expected type ${expectedName(a.type)}"`]
          : [],
      );
      if (wrong.length > 0) throw new RpcError(RPC_TYPE_ERROR, `Wrong type passed:\n{\n${wrong.join(',\n')}\n}`);
    }
    try {
      return m.run(args);
    } catch (error) {
      if (error instanceof OmniError) throw new RpcError(error.code, error.message);
      throw error;
    }
  }

  // --- argument readers (pre-25 nodes fail as their UniValue getters do) ---------------------------

  private int(v: unknown): number {
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new RpcError(RPC_MISC_ERROR, OLD_TYPE_MESSAGES.int as string);
    return v;
  }

  private str(v: unknown): string {
    if (typeof v !== 'string') throw new RpcError(RPC_MISC_ERROR, OLD_TYPE_MESSAGES.string as string);
    return v;
  }

  /** Core's ParseHashV. */
  private hash(v: unknown, name: string): string {
    const s = this.str(v);
    if (s.length !== 64) throw new RpcError(RPC_INVALID_PARAMETER, `${name} must be of length 64 (not ${s.length}, for '${s}')`);
    if (!/^[0-9a-fA-F]{64}$/.test(s)) throw new RpcError(RPC_INVALID_PARAMETER, `${name} must be hexadecimal string (not '${s}')`);
    return s.toLowerCase();
  }

  private block(hash: string): Block {
    const block = this.chain.blocks.get(hash);
    if (!block) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'Block not found');
    return block;
  }

  /** getblock/getrawtransaction verbosity: a number, or a boolean (true = 1). */
  private verbosity(v: unknown, fallback: number): number {
    if (v === undefined || v === null) return fallback;
    if (typeof v === 'boolean') return v ? 1 : 0;
    return this.int(v);
  }

  // --- methods -----------------------------------------------------------------------------------

  private table(): Record<string, Method> {
    const c = this.chain;
    const f = this.formatter;
    const p = this.profile;
    const methods: Record<string, Method> = {
      getblockcount: { args: [], usage: '\n\nReturns the height of the most-work fully-validated chain.', run: () => c.height },
      getbestblockhash: { args: [], usage: '\n\nReturns the hash of the best (tip) block in the most-work fully-validated chain.', run: () => c.tip.hash },
      getblockhash: {
        args: [{ name: 'height', type: 'int' }],
        usage: 'height\n\nReturns hash of block in best-block-chain at height provided.',
        run: ([h]) => {
          const height = this.int(h);
          if (height < 0 || height > c.height) throw new RpcError(RPC_INVALID_PARAMETER, 'Block height out of range');
          return (c.main[height] as Block).hash;
        },
      },
      getblock: {
        args: [
          { name: 'blockhash', type: p === 'zcash' ? 'stringOrInt' : 'hash' },
          { name: p === 'doge' ? 'verbose' : 'verbosity', type: p === 'doge' ? 'bool' : 'intOrBool', optional: true },
        ],
        usage:
          p === 'doge'
            ? '"blockhash" ( verbose )\n\nIf verbose is false, returns a string that is serialized, hex-encoded data for block \'hash\'.'
            : '"blockhash" ( verbosity )',
        run: ([h, v]) => this.getblock(h, v),
      },
      getblockheader: {
        args: [
          { name: 'blockhash', type: 'hash' },
          { name: 'verbose', type: 'bool', optional: true },
        ],
        usage: '"blockhash" ( verbose )',
        run: ([h, v]) => {
          const block = this.block(this.hash(h, p === 'core' ? 'hash' : 'blockhash'));
          if (v !== undefined && v !== null && typeof v !== 'boolean') throw new RpcError(RPC_MISC_ERROR, OLD_TYPE_MESSAGES.bool as string);
          return v === false ? toHex(block.headerRaw) : f.header(block);
        },
      },
      getrawtransaction: {
        args: [
          { name: 'txid', type: 'hash' },
          { name: p === 'core' ? 'verbosity' : 'verbose', type: 'intOrBool', optional: true },
          ...(p === 'doge' ? [] : [{ name: 'blockhash', type: 'hash' as const, optional: true }]),
        ],
        usage:
          p === 'doge'
            ? '"txid" ( verbose )\n\nNOTE: By default this function only works for mempool transactions. If the -txindex option is\nenabled, it also works for blockchain transactions.'
            : '"txid" ( verbose "blockhash" )',
        run: ([t, v, b]) => this.getrawtransaction(t, v, b),
      },
      gettxout: {
        args: [
          { name: 'txid', type: 'hash' },
          { name: 'n', type: 'int' },
          { name: 'include_mempool', type: 'bool', optional: true },
        ],
        usage: '"txid" n ( include_mempool )\n\nReturns details about an unspent transaction output.',
        run: ([t, n, m]) => this.gettxout(t, n, m),
      },
      getblockchaininfo: {
        args: [],
        usage: '\nReturns an object containing various state info regarding blockchain processing.',
        run: () => f.blockchainInfo(),
      },
      getnetworkinfo: {
        args: [],
        usage: '\nReturns an object containing various state info regarding P2P networking.',
        run: () => ({
          version: c.params.version,
          subversion: c.params.subversion,
          protocolversion: 70016,
          localservices: '0000000000000409',
          localrelay: true,
          timeoffset: 0,
          networkactive: true,
          connections: 0,
          relayfee: new Coins(1000n),
          warnings: p === 'core' ? [] : '',
        }),
      },
      uptime: { args: [], usage: '\nReturns the total uptime of the server.', run: () => Math.max(0, Math.floor(Date.now() / 1000) - this.startedAt) },
      getrawmempool: {
        // Core 0.21 added mempool_sequence; the older nodes take the verbose flag only.
        args: [
          { name: 'verbose', type: 'bool', optional: true },
          ...(p === 'core' ? [{ name: 'mempool_sequence', type: 'bool' as const, optional: true }] : []),
        ],
        usage: '( verbose )\n\nReturns all transaction ids in memory pool as a json array of string transaction ids.',
        run: ([v, s]) => {
          if (v !== undefined && v !== null && typeof v !== 'boolean') throw new RpcError(RPC_MISC_ERROR, OLD_TYPE_MESSAGES.bool as string);
          // The verbose objects (fees, sizes, ancestors) are not imitated: refused rather than half-made.
          if (v === true || s === true) throw new RpcError(RPC_INVALID_PARAMETER, 'Verbose getrawmempool is not served by this fake node');
          return c.mempool.map((tx) => tx.txid);
        },
      },
    };
    if (p === 'core') {
      methods.getindexinfo = {
        args: [{ name: 'index_name', type: 'string', optional: true }],
        usage: '( "index_name" )',
        run: () => ({ txindex: { synced: true, best_block_height: c.height } }),
      };
    }
    if (c.params.hasScantxoutset) {
      methods.scantxoutset = {
        args: [
          { name: 'action', type: 'string' },
          { name: 'scanobjects', type: 'array', optional: true },
        ],
        usage: '"action" ( [scanobjects,...] )',
        run: ([a, o]) => this.scantxoutset(a, o),
      };
    }
    if (this.omni) {
      const omni = this.omni;
      methods.omni_getinfo = { args: [], usage: '\nReturns various state information of the client and protocol.', run: () => omni.info() };
      methods.omni_listblocktransactions = {
        args: [{ name: 'index', type: 'int' }],
        usage: 'index\n\nLists all Omni transactions in a block.',
        run: ([i]) => omni.listBlockTransactions(this.int(i)),
      };
      methods.omni_gettransaction = {
        args: [{ name: 'txid', type: 'hash' }],
        usage: '"txid"\n\nGet detailed information about an Omni transaction.',
        run: ([t]) => omni.getTransaction(this.hash(t, 'txid')),
      };
      methods.omni_listpendingtransactions = {
        args: [{ name: 'address', type: 'string', optional: true }],
        usage: '( "address" )\n\nReturns a list of unconfirmed Omni transactions, pending in the memory pool.',
        run: ([a]) => {
          // Omni Core's ParseAddressOrEmpty: "" (or nothing) lists every pending Omni transaction.
          const filter = a === undefined || a === null ? '' : this.str(a);
          return omni.listPendingTransactions(filter === '' ? '' : this.address(filter));
        },
      };
      methods.omni_getproperty = {
        args: [{ name: 'propertyid', type: 'int' }],
        usage: 'propertyid\n\nReturns details for about the tokens or smart property to lookup.',
        run: ([id]) => omni.getProperty(this.int(id)),
      };
      methods.omni_getbalance = {
        args: [
          { name: 'address', type: 'string' },
          { name: 'propertyid', type: 'int' },
        ],
        usage: '"address" propertyid\n\nReturns the token balance for a given address and property.',
        run: ([a, id]) => omni.getBalance(this.address(a), this.int(id)),
      };
      methods.omni_getallbalancesforaddress = {
        args: [{ name: 'address', type: 'string' }],
        usage: '"address"\n\nReturns a list of all token balances for a given address.',
        run: ([a]) => omni.getAllBalances(this.address(a)),
      };
    }
    return methods;
  }

  /** Omni Core's ParseAddress. */
  private address(v: unknown): string {
    const s = this.str(v);
    try {
      this.chain.scriptFor(s);
    } catch {
      throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'Invalid address');
    }
    return s;
  }

  private getblock(h: unknown, v: unknown): unknown {
    const c = this.chain;
    let verbosity: number;
    if (this.profile === 'doge') {
      // Dogecoin 1.14 takes `verbose` as a boolean only: request.params[1].get_bool().
      if (v !== undefined && typeof v !== 'boolean') throw new RpcError(RPC_MISC_ERROR, OLD_TYPE_MESSAGES.bool as string);
      verbosity = v === false ? 0 : 1;
    } else {
      verbosity = this.verbosity(v, 1);
    }
    if (this.profile === 'zcash' && (verbosity < 0 || verbosity > 2)) throw new RpcError(RPC_INVALID_PARAMETER, 'Verbosity must be in range from 0 to 2');
    let hash: string;
    if (this.profile === 'zcash' && (typeof h === 'number' || (typeof h === 'string' && h.length < 64))) {
      // zcashd also takes a height.
      const height = typeof h === 'number' ? h : /^\d+$/.test(h) ? Number(h) : Number.NaN;
      if (!Number.isInteger(height)) throw new RpcError(RPC_INVALID_PARAMETER, 'Invalid block height parameter');
      if (height < 0 || height > c.height) throw new RpcError(RPC_INVALID_PARAMETER, 'Block height out of range');
      hash = (c.main[height] as Block).hash;
    } else {
      hash = this.hash(h, 'blockhash');
    }
    const block = this.block(hash);
    if (verbosity <= 0) return toHex(block.raw);
    if (verbosity === 1)
      return this.formatter.block(
        block,
        block.txs.map((t) => t.txid),
      );
    const modern = this.profile === 'core' || this.profile === 'bchn';
    const view = { hex: this.profile !== 'zcash', fee: modern, prevout: modern && verbosity >= 3, block };
    return this.formatter.block(
      block,
      block.txs.map((t) => this.formatter.blockTx(t, view)),
    );
  }

  private getrawtransaction(t: unknown, v: unknown, b: unknown): unknown {
    const c = this.chain;
    const txid = this.hash(t, 'parameter 1');
    let verbosity: number;
    if (v === undefined || v === null) verbosity = 0;
    else if (typeof v === 'boolean') verbosity = v ? 1 : 0;
    else if (typeof v === 'number' && Number.isInteger(v)) verbosity = this.profile === 'core' ? v : v !== 0 ? 1 : 0;
    else throw new RpcError(RPC_TYPE_ERROR, 'Invalid type provided. Verbose parameter must be a boolean.');
    if (c.main[0]?.txs[0]?.txid === txid) {
      throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'The genesis block coinbase is not considered an ordinary transaction and cannot be retrieved');
    }
    if (b !== undefined && b !== null) {
      const block = c.blocks.get(this.hash(b, 'parameter 3'));
      if (!block) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'Block hash not found');
      const tx = block.txs.find((x) => x.txid === txid);
      if (!tx) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'No such transaction found in the provided block. Use gettransaction for wallet transactions.');
      if (verbosity <= 0) return toHex(tx.raw);
      return this.formatter.rawTransaction(tx, block, { inActiveChain: c.isMain(block), verbosity2: verbosity >= 2 });
    }
    const found = c.findTransaction(txid);
    if (!found) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'No such mempool or blockchain transaction. Use gettransaction for wallet transactions.');
    if (verbosity <= 0) return toHex(found.tx.raw);
    return this.formatter.rawTransaction(found.tx, found.block, { verbosity2: verbosity >= 2 });
  }

  /** gettxout: the output when it is in the UTXO set at the tip (and, with include_mempool, not spent in the mempool), else null. */
  private gettxout(t: unknown, n: unknown, m: unknown): unknown {
    const c = this.chain;
    const txid = this.hash(t, 'txid');
    const coin = c.getCoin(txid, this.int(n));
    if (!coin) return null;
    const spentInMempool = m !== false && c.mempool.some((tx) => tx.vin.some((i) => i.prevout?.txid === txid && i.prevout.vout === coin.vout));
    if (spentInMempool) return null;
    return {
      bestblock: c.tip.hash,
      confirmations: c.height - coin.height + 1,
      value: new Coins(coin.value),
      scriptPubKey: this.formatter.scriptPubKey(coin.script),
      coinbase: coin.coinbase,
    };
  }

  /** Core's scantxoutset over `addr(...)` and `raw(...)` descriptors (the UTXO set at the tip, no mempool). */
  private scantxoutset(a: unknown, o: unknown): unknown {
    const action = this.str(a);
    if (action === 'abort') return false;
    if (action === 'status') return null;
    if (action !== 'start') throw new RpcError(RPC_INVALID_PARAMETER, 'Invalid action supplied');
    if (o === undefined || o === null) throw new RpcError(RPC_MISC_ERROR, 'scanobjects argument is required for the start action');
    if (!Array.isArray(o)) throw new RpcError(RPC_MISC_ERROR, OLD_TYPE_MESSAGES.array as string);
    const scripts = o.map((item) => this.descriptorScript(item));
    const c = this.chain;
    const tip = c.tip;
    const all = [...c.utxoSet()];
    const hits = all.filter((coin) => scripts.some((s) => bytesEqual(s, coin.script))).sort((x, y) => x.height - y.height || x.vout - y.vout);
    const modern = this.profile === 'core' || this.profile === 'bchn';
    const unspents = hits.map((coin) => ({
      txid: coin.txid,
      vout: coin.vout,
      scriptPubKey: toHex(coin.script),
      desc: describeScript(c.params, coin.script).desc,
      amount: new Coins(coin.value),
      coinbase: modern ? coin.coinbase : undefined,
      height: coin.height,
      blockhash: modern ? (c.main[coin.height] as Block).hash : undefined,
      confirmations: modern ? c.height - coin.height + 1 : undefined,
    }));
    return {
      success: true,
      txouts: all.length,
      height: tip.height,
      bestblock: tip.hash,
      unspents,
      total_amount: new Coins(hits.reduce((n, x) => n + x.value, 0n)),
    };
  }

  private descriptorScript(item: unknown): Uint8Array {
    let desc: unknown = item;
    if (item !== null && typeof item === 'object' && !Array.isArray(item)) desc = (item as { desc?: unknown }).desc;
    if (typeof desc !== 'string') throw new RpcError(RPC_INVALID_PARAMETER, 'Scan object needs to be either a string or an object');
    const [body = '', checksum] = desc.split('#');
    if (checksum !== undefined && checksum !== descriptorChecksum(body)) {
      throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, `Provided checksum '${checksum}' does not match computed checksum '${descriptorChecksum(body)}'`);
    }
    const addr = /^addr\((.+)\)$/.exec(body);
    if (addr?.[1]) {
      try {
        return this.chain.scriptFor(addr[1]);
      } catch {
        throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, `Address is not valid`);
      }
    }
    const raw = /^raw\(([0-9a-fA-F]*)\)$/.exec(body);
    if (raw?.[1] !== undefined && raw[1].length % 2 === 0) return fromHex(raw[1].toLowerCase());
    throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, `'${body}' is not a descriptor function the fake node supports (addr(), raw())`);
  }
}
