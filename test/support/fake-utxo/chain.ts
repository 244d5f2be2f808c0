/**
 * The chain state behind a fake Bitcoin-family node: blocks (a coinbase plus the pending transactions
 * that can be mined), parent links, the main chain and the stale blocks a reorganisation left behind, the
 * UTXO set of the main chain, a mempool, and a wallet that holds the key of every address it hands out
 * (the miner's address is the faucet that funds sends). Everything is synchronous and in memory; the RPC
 * layer (rpc.ts) only reads it.
 */
import { sha256 } from '@noble/hashes/sha256';
import type { DialectParams } from './dialects.ts';
import {
  ByteWriter,
  concat,
  decodeBase58Address,
  decodeCashAddress,
  decodeSegwitAddress,
  displayHex,
  internalBytes,
  pushData,
  scriptNum,
  sha256d,
  toHex,
  utf8,
} from './encoding.ts';
import { encodeOmniPayload, type OmniMessage } from './omni-payload.ts';
import { type AddressType, addressOf, describeScript, fakeKey, fakeSignature, nullDataScript, p2pkhScript, p2shScript, p2wpkhScript } from './script.ts';
import {
  buildTx,
  type HeaderSpec,
  merkleRoot,
  type ShieldedOutput,
  type ShieldedSpend,
  serialiseBlock,
  serialiseHeader,
  type Tx,
  type TxInput,
  type TxOutput,
  type TxSpec,
} from './tx.ts';

export const ZERO_HASH = '0'.repeat(64);
/** Outputs below this are not created as change (they go to the fee). */
const DUST = 546n;
/** regtest's minimum-difficulty bits, as every fake block carries. */
const BITS = 0x207fffff;
const ZCASH_BITS = 0x200f0f0f;
const SEQUENCE_FINAL = 0xffffffff;
const SEQUENCE_RBF = 0xfffffffd;
/** Sorts mempool outputs after every confirmed one when the wallet picks coins. */
const PENDING_HEIGHT = Number.MAX_SAFE_INTEGER;

export interface Coin {
  txid: string;
  vout: number;
  value: bigint;
  script: Uint8Array;
  height: number;
  coinbase: boolean;
}

export interface Block {
  hash: string;
  height: number;
  header: HeaderSpec;
  headerRaw: Uint8Array;
  txs: Tx[];
  raw: Uint8Array;
  size: number;
  strippedSize: number;
  weight: number;
  /** Cumulative work up to and including this block. */
  chainwork: bigint;
  /** zcash: value of the Sapling pool after this block, and the block's change to it. */
  sapling?: { value: bigint; delta: bigint };
}

export interface TxLocation {
  tx: Tx;
  /** Undefined while the transaction is in the mempool. */
  block?: Block;
  index: number;
  inMainChain: boolean;
}

interface OwnKey {
  type: AddressType;
  pubkey: Uint8Array;
  hash: Uint8Array;
}

export const outpointKey = (txid: string, vout: number): string => `${txid}:${vout}`;

export class FakeChain {
  readonly blocks = new Map<string, Block>();
  readonly main: Block[] = [];
  mempool: Tx[] = [];
  /** Every block a transaction is in (stale blocks included), in the order they were mined. */
  private readonly locations = new Map<string, { block: Block; index: number }[]>();
  private utxo = new Map<string, Coin>();
  private readonly keys = new Map<string, OwnKey>();
  private keyCounter = 0;
  /** Makes every coinbase (and so every block) unique, also when a height is mined again. */
  private extranonce = 0;
  readonly minerAddress: string;
  /** Called after every change of the main chain or the mempool (the Omni layer recomputes its state). */
  onChange: () => void = () => {};
  /**
   * A node that is not in step with its network (getblockchaininfo): in initial block download, and/or with
   * headers this many blocks beyond its blocks. Undefined: in step.
   */
  syncState: { initialBlockDownload?: boolean; headersAhead?: number } | undefined;

  constructor(
    readonly params: DialectParams,
    private readonly clock: () => number,
    initialBlocks: number,
  ) {
    this.minerAddress = this.newAddress();
    // The pre-mined blocks are spread over the past, ten minutes apart, so the tip is "now".
    const start = clock() - 600 * (initialBlocks + 1);
    this.mineBlock(this.minerAddress, start);
    for (let i = 1; i <= initialBlocks; i++) this.mineBlock(this.minerAddress, start + 600 * i);
  }

  get tip(): Block {
    return this.main[this.main.length - 1] as Block;
  }
  get height(): number {
    return this.main.length - 1;
  }

  isMain(block: Block): boolean {
    return this.main[block.height] === block;
  }

  /**
   * Dash: the highest ChainLocked height (the LLMQ's lock on a block covers its ancestors); undefined: every
   * block of the main chain is locked as soon as it is mined (what the fake always said). Settable.
   */
  chainLockedHeight: number | undefined;

  /** Dash getblock's `chainlock`: a main-chain block at or below the ChainLocked height. */
  isChainLocked(block: Block): boolean {
    return this.isMain(block) && (this.chainLockedHeight === undefined || block.height <= this.chainLockedHeight);
  }

  // --- wallet ------------------------------------------------------------------------------------

  newAddress(type: AddressType = this.params.defaultAddressType): string {
    if (type === 'p2sh') throw new Error('the fake wallet makes single-key addresses only (p2pkh, p2wpkh)');
    const key = fakeKey(`${this.params.dialect}/${this.params.network}`, this.keyCounter++);
    const address = addressOf(this.params, type, key.hash);
    this.keys.set(address, { type, ...key });
    return address;
  }

  ownsAddress(address: string): boolean {
    return this.keys.has(address);
  }

  /** The output script paying `address` (any valid address of the chain, not only the wallet's). */
  scriptFor(address: string): Uint8Array {
    const own = this.keys.get(address);
    if (own) return own.type === 'p2wpkh' ? p2wpkhScript(own.hash) : p2pkhScript(own.hash);
    const p = this.params;
    if (p.hrp) {
      const segwit = decodeSegwitAddress(address, p.hrp);
      if (segwit) return concat(Uint8Array.of(segwit.version === 0 ? 0 : 0x50 + segwit.version, segwit.program.length), segwit.program);
    }
    if (p.cashPrefix) {
      const cash = decodeCashAddress(address, p.cashPrefix);
      if (cash && cash.hash.length === 20) return cash.type === 0 ? p2pkhScript(cash.hash) : p2shScript(cash.hash);
    }
    const legacy = decodeBase58Address(address, p.versionBytes);
    if (legacy?.version === p.p2pkh) return p2pkhScript(legacy.hash);
    if (legacy?.version === p.p2sh) return p2shScript(legacy.hash);
    throw new Error(`${address} is not a ${p.blockchain} ${p.network} address the fake node can pay`);
  }

  /** The address a script pays, as the node prints it. */
  addressOfScript(script: Uint8Array): string | undefined {
    return describeScript(this.params, script).address;
  }

  private signInput(prevout: Coin, message: string): Pick<TxInput, 'scriptSig' | 'scriptSigParts' | 'witness'> {
    const address = this.addressOfScript(prevout.script);
    const key = address === undefined ? undefined : this.keys.get(address);
    if (!key) throw new Error(`the fake wallet holds no key for the output ${prevout.txid}:${prevout.vout} (${address ?? 'no address'})`);
    const sig = fakeSignature(`${message}/${prevout.txid}/${prevout.vout}`, this.params.sighash);
    if (key.type === 'p2wpkh') return { scriptSig: new Uint8Array(), scriptSigParts: [], witness: [sig, key.pubkey] };
    return { scriptSig: concat(Uint8Array.of(sig.length), sig, Uint8Array.of(key.pubkey.length), key.pubkey), scriptSigParts: [sig, key.pubkey], witness: [] };
  }

  // --- coins -------------------------------------------------------------------------------------

  /** Confirmed unspent outputs of the main chain paying `address`. */
  confirmedCoins(address: string): Coin[] {
    return [...this.utxo.values()].filter((c) => this.addressOfScript(c.script) === address);
  }

  utxoSet(): IterableIterator<Coin> {
    return this.utxo.values();
  }

  getCoin(txid: string, vout: number): Coin | undefined {
    return this.utxo.get(outpointKey(txid, vout));
  }

  /** Spendable coins of `address`: confirmed or created in the mempool, not spent in the mempool. */
  spendableCoins(address: string): Coin[] {
    const spent = new Set(this.mempool.flatMap((tx) => tx.vin.flatMap((i) => (i.prevout ? [outpointKey(i.prevout.txid, i.prevout.vout)] : []))));
    const pending: Coin[] = this.mempool.flatMap((tx) =>
      tx.vout.map((o, vout) => ({ txid: tx.txid, vout, value: o.value, script: o.script, height: PENDING_HEIGHT, coinbase: false })),
    );
    return [...this.utxo.values(), ...pending]
      .filter((c) => !spent.has(outpointKey(c.txid, c.vout)) && this.addressOfScript(c.script) === address)
      .sort((a, b) => a.height - b.height || (a.value > b.value ? -1 : a.value < b.value ? 1 : 0));
  }

  // --- transactions ------------------------------------------------------------------------------

  /**
   * Builds, "signs" and queues a transaction spending coins of `from` to `outputs`; what is left, less
   * the fee (fee rate × virtual size), goes to `change` (dropped into the fee when below dust).
   */
  createTransaction(args: {
    from: string;
    outputs: TxOutput[];
    change: string;
    omni?: OmniMessage;
    /** zcash: shielded parts; a negative valueBalance is value entering the shielded pool. */
    zcash?: { valueBalance: bigint; spends: ShieldedSpend[]; outputs: ShieldedOutput[] };
  }): Tx {
    const coins = this.spendableCoins(args.from);
    const wanted = args.outputs.reduce((n, o) => n + o.value, 0n) - (args.zcash?.valueBalance ?? 0n);
    const chosen: Coin[] = [];
    let total = 0n;
    const changeScript = this.scriptFor(args.change);
    for (const coin of coins) {
      if (total >= wanted + this.params.feeRate * 2_000n) break; // enough for any fee of a small transaction
      chosen.push(coin);
      total += coin.value;
    }
    const nonce = `${this.extranonce}/${this.mempool.length}/${args.from}`;
    const build = (fee: bigint, withChange: boolean): Tx => {
      const change = total - wanted - fee;
      const vout = withChange ? [...args.outputs, { value: change, script: changeScript }] : args.outputs;
      const vin = chosen.map((c) => ({ prevout: { txid: c.txid, vout: c.vout }, sequence: SEQUENCE_RBF, ...this.signInput(c, nonce) }));
      return buildTx(this.txSpec(vin, vout, { fee: withChange ? fee : total - wanted, omni: args.omni, zcash: args.zcash }));
    };
    const draft = build(0n, true);
    const fee = BigInt(draft.vsize) * this.params.feeRate;
    if (total < wanted + fee) {
      throw new Error(`${args.from} has ${total} base units spendable, not enough for ${wanted} plus a fee of ${fee}`);
    }
    const tx = total - wanted - fee >= DUST ? build(fee, true) : build(fee, false);
    this.mempool.push(tx);
    this.onChange();
    return tx;
  }

  /** The chain's transaction format around inputs and outputs (version, Dash type, zcash v4 fields). */
  private txSpec(
    vin: TxInput[],
    vout: TxOutput[],
    extra: Pick<TxSpec, 'fee' | 'omni'> & { zcash?: Omit<TxSpec['zcash'] & object, 'versionGroupId' | 'expiryHeight' | 'bindingSig'> },
  ): TxSpec {
    const p = this.params;
    if (p.profile === 'zcash') {
      const z = extra.zcash ?? { valueBalance: 0n, spends: [], outputs: [] };
      const shielded = z.spends.length + z.outputs.length > 0;
      return {
        version: 4,
        locktime: 0,
        vin,
        vout,
        fee: extra.fee,
        zcash: {
          versionGroupId: 0x892f2085,
          expiryHeight: extra.fee === undefined ? 0 : this.height + 21,
          ...z,
          bindingSig: shielded ? toHex(sha256(utf8(`binding/${vin.length}/${this.extranonce}`))).repeat(2) : undefined,
        },
      };
    }
    if (p.profile === 'dash')
      return { version: 3, locktime: 0, vin, vout, fee: extra.fee, omni: extra.omni, dash: { type: 0, extraPayload: new Uint8Array() } };
    return { version: 2, locktime: 0, vin, vout, fee: extra.fee, omni: extra.omni };
  }

  send(to: string, amount: bigint): Tx {
    return this.createTransaction({ from: this.minerAddress, outputs: [{ value: amount, script: this.scriptFor(to) }], change: this.minerAddress });
  }

  /**
   * A BIP125 replacement, as Bitcoin Core's mempool takes one: `txid` (a pending spend of `from`'s coins)
   * leaves the mempool and a new spend of `from`'s coins (the same ones, the wallet choosing in the same
   * order) to `to` takes its place.
   */
  replace(txid: string, from: string, to: string, amount: bigint): Tx {
    const at = this.mempool.findIndex((tx) => tx.txid === txid);
    if (at < 0) throw new Error(`${txid} is not in the mempool`);
    this.mempool.splice(at, 1);
    return this.spend(from, to, amount);
  }

  spend(from: string, to: string, amount: bigint): Tx {
    if (!this.keys.has(from)) throw new Error(`the fake wallet holds no key for ${from}`);
    return this.createTransaction({ from, outputs: [{ value: amount, script: this.scriptFor(to) }], change: this.minerAddress });
  }

  /**
   * An Omni class C transaction from `message.sender`: OP_RETURN "omni"+payload, the reference output
   * (dust) to the receiver when the type has one, change back to the sender.
   */
  sendOmni(message: OmniMessage): Tx {
    const outputs: TxOutput[] = [{ value: 0n, script: nullDataScript(encodeOmniPayload(message)) }];
    if ('reference' in message) outputs.push({ value: DUST, script: this.scriptFor(message.reference) });
    return this.createTransaction({ from: message.sender, outputs, change: message.sender, omni: message });
  }

  /** zcash: moves `amount` of `from`'s transparent coins into the Sapling pool (a z-address the fake holds). */
  shield(from: string, amount: bigint): Tx {
    return this.createTransaction({
      from,
      outputs: [],
      change: from,
      zcash: { valueBalance: -amount, spends: [], outputs: [saplingOutput(`${from}/${amount}/${this.extranonce}`)] },
    });
  }

  /** zcash: pays `amount` from the Sapling pool to `to` (no transparent input; the fee comes from the pool). */
  unshield(to: string, amount: bigint): Tx {
    const fee = 10_000n;
    const spec = this.txSpec([], [{ value: amount, script: this.scriptFor(to) }], {
      fee,
      zcash: { valueBalance: amount + fee, spends: [saplingSpend(`${to}/${amount}/${this.extranonce}/${this.mempool.length}`)], outputs: [] },
    });
    const tx = buildTx(spec);
    this.mempool.push(tx);
    this.onChange();
    return tx;
  }

  // --- blocks ------------------------------------------------------------------------------------

  /** Mines `count` blocks; the first takes every pending transaction whose inputs are available. */
  mine(count: number, to: string = this.minerAddress): Block[] {
    const mined: Block[] = [];
    for (let i = 0; i < count; i++) mined.push(this.mineBlock(to, Math.max(this.tip.header.time + 1, this.clock())));
    return mined;
  }

  /**
   * Replaces the last `depth` blocks with `depth + 1` new ones. Transactions of the dropped blocks go back
   * to the mempool (and so into the first new block), except those in `drop`, which are discarded.
   */
  reorg(depth: number, drop: readonly string[] = []): Block[] {
    if (!Number.isInteger(depth) || depth < 1 || depth > this.height) throw new Error(`cannot reorganise ${depth} blocks of a chain of height ${this.height}`);
    const removed = this.main.splice(this.height - depth + 1);
    const dropped = new Set(drop.map((t) => t.toLowerCase()));
    const returning = removed.flatMap((b) => b.txs.filter((tx) => !tx.coinbase));
    this.mempool = [...returning, ...this.mempool].filter((tx) => !dropped.has(tx.txid));
    this.rebuildUtxo();
    this.onChange();
    return this.mine(depth + 1);
  }

  private mineBlock(to: string, time: number): Block {
    const parent = this.main[this.main.length - 1];
    const height = parent ? parent.height + 1 : 0;
    const available = new Map(this.utxo);
    const included: Tx[] = [];
    const waiting: Tx[] = [];
    for (const tx of this.mempool) {
      const keys = tx.vin.flatMap((i) => (i.prevout ? [outpointKey(i.prevout.txid, i.prevout.vout)] : []));
      if (!keys.every((k) => available.has(k))) {
        waiting.push(tx);
        continue;
      }
      for (const k of keys) available.delete(k);
      tx.vout.forEach((o, vout) => {
        available.set(outpointKey(tx.txid, vout), { txid: tx.txid, vout, value: o.value, script: o.script, height, coinbase: false });
      });
      included.push(tx);
    }
    const fees = included.reduce((n, tx) => n + (tx.fee ?? 0n), 0n);
    const coinbase = this.coinbaseTx(height, to, this.params.subsidy + fees, included);
    const txs = [coinbase, ...included];
    const version = this.params.profile === 'doge' ? 0x00620004 : this.params.profile === 'zcash' ? 4 : 0x20000000;
    const root = merkleRoot(txs.map((t) => t.txid));
    const zcash =
      this.params.profile === 'zcash'
        ? {
            finalSaplingRoot: toHex(sha256(utf8(`sapling/${height}/${this.extranonce}`))),
            nonce: toHex(sha256(utf8(`nonce/${height}/${this.extranonce}`))),
            solution: toHex(sha256d(utf8(`solution/${height}`))).padEnd(72, '0'),
          }
        : undefined;
    const header: HeaderSpec = {
      version,
      prevHash: parent?.hash ?? ZERO_HASH,
      merkleRoot: root,
      time,
      bits: zcash ? ZCASH_BITS : BITS,
      nonce: this.extranonce,
      zcash,
    };
    const headerRaw = serialiseHeader(header);
    const raw = serialiseBlock(headerRaw, txs);
    const strippedSize = serialiseBlock(headerRaw, txs, false).length;
    const saplingDelta = txs.reduce((n, tx) => n - (tx.zcash?.valueBalance ?? 0n), 0n);
    const block: Block = {
      hash: displayHex(sha256d(headerRaw)),
      height,
      header,
      headerRaw,
      txs,
      raw,
      size: raw.length,
      strippedSize,
      weight: strippedSize * 3 + raw.length,
      chainwork: (parent?.chainwork ?? 0n) + 2n,
      sapling: zcash ? { value: (parent?.sapling?.value ?? 0n) + saplingDelta, delta: saplingDelta } : undefined,
    };
    this.blocks.set(block.hash, block);
    this.main.push(block);
    txs.forEach((tx, index) => {
      const list = this.locations.get(tx.txid) ?? [];
      list.push({ block, index });
      this.locations.set(tx.txid, list);
    });
    this.applyBlock(block);
    this.mempool = waiting;
    this.onChange();
    return block;
  }

  private coinbaseTx(height: number, to: string, value: bigint, included: readonly Tx[]): Tx {
    const nonce = this.extranonce++;
    const script = concat(scriptNum(height), pushData(new ByteWriter().u32(nonce).build()), pushData(utf8('/herald/')));
    const vout: TxOutput[] = [{ value, script: this.scriptFor(to) }];
    const segwit = this.params.hrp !== undefined;
    const witness: Uint8Array[] = [];
    if (segwit) {
      // BIP-141 commitment to the witness merkle root (the coinbase's wtxid counts as zero).
      const witnessRoot = merkleRoot([ZERO_HASH, ...included.map((t) => t.hash)]);
      const commitment = sha256d(concat(internalBytes(witnessRoot), new Uint8Array(32)));
      vout.push({ value: 0n, script: concat(Uint8Array.of(0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed), commitment) });
      witness.push(new Uint8Array(32));
    }
    const vin: TxInput[] = [{ scriptSig: script, scriptSigParts: [script], witness, sequence: SEQUENCE_FINAL }];
    if (this.params.profile === 'dash') {
      const cbTx = {
        version: 2,
        height,
        merkleRootMNList: toHex(sha256(utf8(`mnlist/${height}`))),
        merkleRootQuorums: toHex(sha256(utf8(`quorums/${height}`))),
      };
      const extraPayload = new ByteWriter()
        .u16(cbTx.version)
        .u32(height)
        .bytes(internalBytes(cbTx.merkleRootMNList))
        .bytes(internalBytes(cbTx.merkleRootQuorums))
        .build();
      return buildTx({ version: 3, locktime: 0, vin, vout, dash: { type: 5, extraPayload, cbTx } });
    }
    return buildTx(this.txSpec(vin, vout, {}));
  }

  private applyBlock(block: Block): void {
    // As in Bitcoin Core, the genesis coinbase never enters the UTXO set (it cannot be spent).
    if (block.height === 0) return;
    for (const tx of block.txs) {
      for (const input of tx.vin) if (input.prevout) this.utxo.delete(outpointKey(input.prevout.txid, input.prevout.vout));
      tx.vout.forEach((o, vout) => {
        // Nulldata outputs are unspendable and never enter the UTXO set.
        if (o.script[0] === 0x6a) return;
        this.utxo.set(outpointKey(tx.txid, vout), { txid: tx.txid, vout, value: o.value, script: o.script, height: block.height, coinbase: tx.coinbase });
      });
    }
  }

  private rebuildUtxo(): void {
    this.utxo = new Map();
    for (const block of this.main) this.applyBlock(block);
  }

  // --- lookups -----------------------------------------------------------------------------------

  /** The block at `height` on the path from genesis to `block`. */
  ancestor(block: Block, height: number): Block | undefined {
    let b: Block | undefined = block;
    while (b && b.height > height) b = this.blocks.get(b.header.prevHash);
    return b?.height === height ? b : undefined;
  }

  /** Where a transaction is: main chain first, then the mempool, then a stale block. */
  findTransaction(txid: string): TxLocation | undefined {
    const id = txid.toLowerCase();
    const places = this.locations.get(id) ?? [];
    const main = [...places].reverse().find((p) => this.isMain(p.block));
    if (main) return { tx: main.block.txs[main.index] as Tx, block: main.block, index: main.index, inMainChain: true };
    const pending = this.mempool.findIndex((tx) => tx.txid === id);
    if (pending >= 0) return { tx: this.mempool[pending] as Tx, index: pending, inMainChain: false };
    const stale = places[places.length - 1];
    return stale ? { tx: stale.block.txs[stale.index] as Tx, block: stale.block, index: stale.index, inMainChain: false } : undefined;
  }

  /**
   * The output an input of a transaction in `block` spends (undo data): the transaction that created it
   * on `block`'s own branch, with its height and whether it is a coinbase. For a mempool transaction
   * (block undefined), the main chain or the mempool.
   */
  spentOutput(prevTxid: string, vout: number, block: Block | undefined): Coin | undefined {
    for (const p of [...(this.locations.get(prevTxid) ?? [])].reverse()) {
      const onBranch = block ? this.ancestor(block, p.block.height) === p.block : this.isMain(p.block);
      if (!onBranch) continue;
      const tx = p.block.txs[p.index] as Tx;
      const out = tx.vout[vout];
      return out && { txid: prevTxid, vout, value: out.value, script: out.script, height: p.block.height, coinbase: tx.coinbase };
    }
    const pending = block ? undefined : this.mempool.find((t) => t.txid === prevTxid);
    const out = pending?.vout[vout];
    return out && { txid: prevTxid, vout, value: out.value, script: out.script, height: -1, coinbase: false };
  }

  /** Median of the times of the last 11 blocks up to `block` (BIP-113). */
  medianTime(block: Block): number {
    const times: number[] = [];
    let b: Block | undefined = block;
    while (b && times.length < 11) {
      times.push(b.header.time);
      b = this.blocks.get(b.header.prevHash);
    }
    times.sort((x, y) => x - y);
    return times[Math.floor(times.length / 2)] as number;
  }
}

function hexOf(seed: string, bytes: number): string {
  let out = '';
  for (let i = 0; out.length < bytes * 2; i++) out += toHex(sha256(utf8(`${seed}/${i}`)));
  return out.slice(0, bytes * 2);
}

function saplingOutput(seed: string): ShieldedOutput {
  return {
    cv: hexOf(`cv/${seed}`, 32),
    cmu: hexOf(`cmu/${seed}`, 32),
    ephemeralKey: hexOf(`epk/${seed}`, 32),
    encCiphertext: hexOf(`enc/${seed}`, 580),
    outCiphertext: hexOf(`out/${seed}`, 80),
    proof: hexOf(`proof/${seed}`, 192),
  };
}

function saplingSpend(seed: string): ShieldedSpend {
  return {
    cv: hexOf(`cv/${seed}`, 32),
    anchor: hexOf(`anchor/${seed}`, 32),
    nullifier: hexOf(`nf/${seed}`, 32),
    rk: hexOf(`rk/${seed}`, 32),
    proof: hexOf(`proof/${seed}`, 192),
    spendAuthSig: hexOf(`sig/${seed}`, 64),
  };
}
