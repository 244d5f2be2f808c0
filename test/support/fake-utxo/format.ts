/**
 * JSON results of the block and transaction RPCs in each node's own shape and key order (see the profile
 * list in dialects.ts). Values are plain objects for json-text.ts to write; coin amounts are Coins so they
 * print as the node prints them.
 */
import { type Block, type Coin, type FakeChain, ZERO_HASH } from './chain.ts';
import type { Profile } from './dialects.ts';
import { toHex } from './encoding.ts';
import { Coins, RawNumber } from './json-text.ts';
import { describeScript, scriptSigAsm } from './script.ts';
import type { Tx } from './tx.ts';

/** Difficulty of regtest's minimum-difficulty bits (0x207fffff), as Core prints the double. */
const REGTEST_DIFFICULTY = new RawNumber('4.656542373906925e-10');
const REGTEST_TARGET = `7fffff${'0'.repeat(58)}`;

/** How much of a transaction to show. */
export interface TxView {
  /** Include `hex` (getblock verbosity >= 2 and getrawtransaction do; Dash and zcash getblock too). */
  hex: boolean;
  /** Include `fee` (Core, BCHN: getblock verbosity >= 2 when undo data exists). */
  fee: boolean;
  /** Include `vin[].prevout` (Core, BCHN: verbosity 3). */
  prevout: boolean;
  /** The block the transaction is in (undefined: mempool); its inputs' spent outputs are looked up on its branch. */
  block?: Block;
}

export class Formatter {
  readonly profile: Profile;

  constructor(private readonly chain: FakeChain) {
    this.profile = chain.params.profile;
  }

  confirmations(block: Block): number {
    return this.chain.isMain(block) ? this.chain.height - block.height + 1 : -1;
  }

  private nextHash(block: Block): string | undefined {
    return this.chain.isMain(block) ? this.chain.main[block.height + 1]?.hash : undefined;
  }

  private prevHash(block: Block): string | undefined {
    return block.header.prevHash === ZERO_HASH ? undefined : block.header.prevHash;
  }

  scriptPubKey(script: Uint8Array): Record<string, unknown> {
    const info = describeScript(this.chain.params, script);
    if (this.profile === 'core') {
      const address = info.type === 'pubkey' ? undefined : info.address;
      return { asm: info.asm, desc: info.desc, hex: info.hex, address, type: info.type };
    }
    // Pre-22 Core and the forks: reqSigs and addresses[] only when a destination was extracted.
    if (info.address === undefined) return { asm: info.asm, hex: info.hex, type: info.type };
    return { asm: info.asm, hex: info.hex, reqSigs: info.reqSigs, type: info.type, addresses: [info.address] };
  }

  /** `prevout` of verbosity 3: Core prints a full scriptPubKey; BCHN asm, hex, type and one `address`. */
  private prevout(coin: Coin): Record<string, unknown> {
    const info = describeScript(this.chain.params, coin.script);
    const scriptPubKey =
      this.profile === 'bchn'
        ? { asm: info.asm, hex: info.hex, type: info.type, address: info.type === 'pubkey' ? undefined : info.address }
        : this.scriptPubKey(coin.script);
    return { generated: coin.coinbase, height: coin.height, value: new Coins(coin.value), scriptPubKey };
  }

  private vin(tx: Tx, view: TxView): Record<string, unknown>[] {
    const withWitness = this.profile === 'core' || this.profile === 'core020';
    return tx.vin.map((input) => {
      const witness = withWitness && input.witness.length > 0 ? input.witness.map(toHex) : undefined;
      if (!input.prevout) return { coinbase: toHex(input.scriptSig), txinwitness: witness, sequence: input.sequence };
      const spent = view.prevout ? this.chain.spentOutput(input.prevout.txid, input.prevout.vout, view.block) : undefined;
      return {
        txid: input.prevout.txid,
        vout: input.prevout.vout,
        scriptSig: { asm: scriptSigAsm(input.scriptSigParts), hex: toHex(input.scriptSig) },
        txinwitness: witness,
        prevout: spent && this.prevout(spent),
        sequence: input.sequence,
      };
    });
  }

  private vout(tx: Tx): Record<string, unknown>[] {
    return tx.vout.map((o, n) => {
      const value = new Coins(o.value);
      const scriptPubKey = this.scriptPubKey(o.script);
      if (this.profile === 'dash') return { value, valueSat: o.value, n, scriptPubKey };
      if (this.profile === 'zcash') return { value, valueZat: o.value, n, scriptPubKey };
      return { value, n, scriptPubKey };
    });
  }

  /** A transaction as getblock (verbosity >= 2) prints it. */
  tx(tx: Tx, view: TxView): Record<string, unknown> {
    const hex = view.hex ? toHex(tx.raw) : undefined;
    const fee = view.fee && !tx.coinbase && tx.fee !== undefined ? new Coins(tx.fee) : undefined;
    const vin = this.vin(tx, view);
    const vout = this.vout(tx);
    switch (this.profile) {
      case 'core':
        return {
          txid: tx.txid,
          hash: tx.hash,
          version: tx.version,
          size: tx.size,
          vsize: tx.vsize,
          weight: tx.weight,
          locktime: tx.locktime,
          vin,
          vout,
          fee,
          hex,
        };
      case 'core020':
        return { txid: tx.txid, hash: tx.hash, version: tx.version, size: tx.size, vsize: tx.vsize, weight: tx.weight, locktime: tx.locktime, vin, vout, hex };
      case 'bchn':
        return { txid: tx.txid, hash: tx.hash, version: tx.version, size: tx.size, locktime: tx.locktime, vin, vout, fee, hex };
      case 'doge':
        return { hex, txid: tx.txid, hash: tx.hash, size: tx.size, vsize: tx.vsize, version: tx.version, locktime: tx.locktime, vin, vout };
      case 'dash': {
        const special = tx.dash && tx.dash.type !== 0;
        return {
          txid: tx.txid,
          version: tx.version,
          type: tx.dash?.type ?? 0,
          size: tx.size,
          locktime: tx.locktime,
          vin,
          vout,
          extraPayloadSize: special ? tx.dash?.extraPayload.length : undefined,
          extraPayload: special ? toHex(tx.dash?.extraPayload ?? new Uint8Array()) : undefined,
          cbTx: tx.dash?.cbTx,
          hex,
        };
      }
      case 'zcash': {
        const z = tx.zcash;
        return {
          txid: tx.txid,
          overwintered: true,
          version: tx.version,
          versiongroupid: z ? z.versionGroupId.toString(16).padStart(8, '0') : undefined,
          locktime: tx.locktime,
          expiryheight: z?.expiryHeight,
          vin,
          vout,
          vjoinsplit: [],
          valueBalance: new Coins(z?.valueBalance ?? 0n),
          vShieldedSpend: z?.spends ?? [],
          vShieldedOutput: z?.outputs ?? [],
          bindingSig: z?.bindingSig,
        };
      }
    }
  }

  /** A transaction of getblock verbosity >= 2 (Dash adds its InstantSend state). */
  blockTx(tx: Tx, view: TxView & { block: Block }): Record<string, unknown> {
    const body = this.tx(tx, view);
    if (this.profile !== 'dash') return body;
    const locked = this.chain.isMain(view.block);
    return { ...body, instantlock: locked, instantlock_internal: false };
  }

  /** getrawtransaction <txid> true: the transaction, then where it is mined (nothing for the mempool). */
  rawTransaction(tx: Tx, block: Block | undefined, options: { inActiveChain?: boolean; verbosity2?: boolean } = {}): Record<string, unknown> {
    const view: TxView = { hex: true, fee: options.verbosity2 === true, prevout: options.verbosity2 === true, block };
    const body = this.tx(tx, view);
    const main = block !== undefined && this.chain.isMain(block);
    const mined = block && {
      blockhash: block.hash,
      confirmations: main ? this.chain.height - block.height + 1 : 0,
      time: main ? block.header.time : undefined,
      blocktime: main ? block.header.time : undefined,
    };
    const head = options.inActiveChain === undefined ? {} : { in_active_chain: options.inActiveChain };
    switch (this.profile) {
      case 'doge':
      case 'zcash':
        // These nodes print `hex` first.
        return { ...head, hex: toHex(tx.raw), ...omit(body, 'hex'), ...mined };
      case 'dash':
        return {
          ...head,
          ...omit(body, 'hex'),
          blockhash: block?.hash,
          hex: body.hex,
          height: block ? (main ? block.height : -1) : undefined,
          confirmations: mined?.confirmations,
          time: mined?.time,
          blocktime: mined?.blocktime,
          instantlock: main,
          instantlock_internal: false,
          chainlock: block !== undefined && this.chain.isChainLocked(block),
        };
      default:
        return { ...head, ...body, ...mined };
    }
  }

  private ablastate(block: Block): Record<string, unknown> {
    return { epsilon: 16_000_000, beta: 16_000_000, blocksize: block.size, blocksizelimit: 32_000_000, nextblocksizelimit: 32_000_000 };
  }

  private valuePools(block: Block): Record<string, unknown>[] {
    const value = block.sapling?.value ?? 0n;
    const delta = block.sapling?.delta ?? 0n;
    return [
      { id: 'sprout', monitored: true, chainValue: new Coins(0n), chainValueZat: 0, valueDelta: new Coins(0n), valueDeltaZat: 0 },
      { id: 'sapling', monitored: true, chainValue: new Coins(value), chainValueZat: value, valueDelta: new Coins(delta), valueDeltaZat: delta },
    ];
  }

  /** getblock with verbosity 1 (`txs` = ids) or 2/3 (`txs` = objects). */
  block(block: Block, txs: unknown[]): Record<string, unknown> {
    const h = block.header;
    const common = {
      hash: block.hash,
      confirmations: this.confirmations(block),
      version: h.version,
      versionHex: h.version.toString(16).padStart(8, '0'),
      merkleroot: h.merkleRoot,
      time: h.time,
      mediantime: this.chain.medianTime(block),
      nonce: h.nonce,
      bits: h.bits.toString(16).padStart(8, '0'),
      difficulty: REGTEST_DIFFICULTY,
      chainwork: block.chainwork.toString(16).padStart(64, '0'),
      nTx: block.txs.length,
      previousblockhash: this.prevHash(block),
      nextblockhash: this.nextHash(block),
    };
    switch (this.profile) {
      case 'core': {
        const cb = block.txs[0] as Tx;
        const input = cb.vin[0];
        return {
          hash: common.hash,
          confirmations: common.confirmations,
          height: block.height,
          version: common.version,
          versionHex: common.versionHex,
          merkleroot: common.merkleroot,
          time: common.time,
          mediantime: common.mediantime,
          nonce: common.nonce,
          bits: common.bits,
          target: REGTEST_TARGET,
          difficulty: common.difficulty,
          chainwork: common.chainwork,
          nTx: common.nTx,
          previousblockhash: common.previousblockhash,
          nextblockhash: common.nextblockhash,
          strippedsize: block.strippedSize,
          size: block.size,
          weight: block.weight,
          coinbase_tx: {
            version: cb.version,
            locktime: cb.locktime,
            sequence: input?.sequence,
            coinbase: toHex(input?.scriptSig ?? new Uint8Array()),
            witness: input?.witness[0] ? toHex(input.witness[0]) : undefined,
          },
          tx: txs,
        };
      }
      case 'core020':
      case 'doge':
        return {
          hash: common.hash,
          confirmations: common.confirmations,
          strippedsize: block.strippedSize,
          size: block.size,
          weight: block.weight,
          height: block.height,
          version: common.version,
          versionHex: common.versionHex,
          merkleroot: common.merkleroot,
          tx: txs,
          time: common.time,
          mediantime: common.mediantime,
          nonce: common.nonce,
          bits: common.bits,
          difficulty: common.difficulty,
          chainwork: common.chainwork,
          nTx: this.profile === 'core020' ? common.nTx : undefined,
          previousblockhash: common.previousblockhash,
          nextblockhash: common.nextblockhash,
        };
      case 'bchn':
      case 'dash':
        return {
          hash: common.hash,
          confirmations: common.confirmations,
          size: block.size,
          height: block.height,
          version: common.version,
          versionHex: common.versionHex,
          merkleroot: common.merkleroot,
          tx: txs,
          cbTx: this.profile === 'dash' ? block.txs[0]?.dash?.cbTx : undefined,
          time: common.time,
          mediantime: common.mediantime,
          nonce: common.nonce,
          bits: common.bits,
          difficulty: common.difficulty,
          chainwork: common.chainwork,
          nTx: common.nTx,
          previousblockhash: common.previousblockhash,
          nextblockhash: common.nextblockhash,
          ablastate: this.profile === 'bchn' ? this.ablastate(block) : undefined,
          chainlock: this.profile === 'dash' ? this.chain.isChainLocked(block) : undefined,
        };
      case 'zcash':
        return {
          hash: common.hash,
          confirmations: common.confirmations,
          size: block.size,
          height: block.height,
          version: common.version,
          merkleroot: common.merkleroot,
          finalsaplingroot: h.zcash?.finalSaplingRoot,
          tx: txs,
          time: common.time,
          nonce: h.zcash?.nonce,
          solution: h.zcash?.solution,
          bits: common.bits,
          difficulty: new RawNumber('1'),
          chainwork: common.chainwork,
          anchor: 'fbc2f4300c01f0b7820d00e3347c8da4ee614674376cbc45359daa54f9b5493e',
          valuePools: this.valuePools(block),
          previousblockhash: common.previousblockhash,
          nextblockhash: common.nextblockhash,
        };
    }
  }

  /** getblockheader <hash> true */
  header(block: Block): Record<string, unknown> {
    const full = this.block(block, []);
    const pick = (keys: string[]) => Object.fromEntries(keys.map((k) => [k, full[k]]));
    const links = ['previousblockhash', 'nextblockhash'];
    const base = ['hash', 'confirmations', 'height', 'version', 'versionHex', 'merkleroot', 'time', 'mediantime', 'nonce', 'bits'];
    switch (this.profile) {
      case 'core':
        return pick([...base, 'target', 'difficulty', 'chainwork', 'nTx', ...links]);
      case 'core020':
        return pick([...base, 'difficulty', 'chainwork', 'nTx', ...links]);
      case 'bchn':
        return pick([...base, 'difficulty', 'chainwork', 'nTx', ...links, 'ablastate']);
      case 'doge':
        return pick([...base, 'difficulty', 'chainwork', ...links]);
      case 'dash':
        return pick([...base, 'difficulty', 'chainwork', 'nTx', ...links, 'chainlock']);
      case 'zcash':
        return pick([
          'hash',
          'confirmations',
          'height',
          'version',
          'merkleroot',
          'finalsaplingroot',
          'time',
          'nonce',
          'solution',
          'bits',
          'difficulty',
          'chainwork',
          ...links,
        ]);
    }
  }

  blockchainInfo(): Record<string, unknown> {
    const tip = this.chain.tip;
    const size = this.chain.main.reduce((n, b) => n + b.size, 0);
    const sync = this.chain.syncState;
    const common = {
      chain: this.chain.params.chainName,
      blocks: tip.height,
      headers: tip.height + (sync?.headersAhead ?? 0),
      bestblockhash: tip.hash,
    };
    // Core computes verificationprogress from the tip's time; a node still downloading is well below 1.
    const progress = sync ? 0.42 : 1;
    const initialblockdownload = sync?.initialBlockDownload ?? false;
    const chainwork = tip.chainwork.toString(16).padStart(64, '0');
    if (this.profile === 'core') {
      return {
        ...common,
        bits: '207fffff',
        target: REGTEST_TARGET,
        difficulty: REGTEST_DIFFICULTY,
        time: tip.header.time,
        mediantime: this.chain.medianTime(tip),
        verificationprogress: progress,
        initialblockdownload,
        chainwork,
        size_on_disk: size,
        pruned: false,
        warnings: [],
      };
    }
    if (this.profile === 'zcash') {
      return {
        ...common,
        difficulty: new RawNumber('1'),
        verificationprogress: progress,
        estimatedheight: tip.height,
        chainwork,
        pruned: false,
        size_on_disk: size,
        commitments: 0,
        valuePools: this.valuePools(tip),
        upgrades: {},
        consensus: { chaintip: 'c2d6d0b4', nextblock: 'c2d6d0b4' },
      };
    }
    return {
      ...common,
      difficulty: REGTEST_DIFFICULTY,
      mediantime: this.chain.medianTime(tip),
      verificationprogress: progress,
      initialblockdownload,
      chainwork,
      size_on_disk: size,
      pruned: false,
      warnings: '',
    };
  }
}

function omit(o: Record<string, unknown>, key: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => k !== key));
}
