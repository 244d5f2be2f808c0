/**
 * The Omni Layer of the fake Omni Core node: token state replayed from the main chain's Omni transactions
 * (as Omni Core does, a transaction's validity is decided when its block is processed, so a send above the
 * sender's balance is mined but invalid), and the omni_* RPC results in Omni Core 0.12's shapes
 * (OmniLayer/omnicore src/omnicore/rpctxobject.cpp, rpc.cpp; recorded fixtures under omni/).
 */
import type { Block, FakeChain } from './chain.ts';
import { omniAmountText } from './json-text.ts';
import { OMNI_TYPE_NAMES, type OmniMessage } from './omni-payload.ts';
import type { Tx } from './tx.ts';

export const MAIN_ECOSYSTEM_FIRST_ID = 3;
/** Property ids from 2^31 on belong to the test ecosystem. */
const TEST_ECOSYSTEM_START = 2147483648;
const TEST_ECOSYSTEM_FIRST_ID = TEST_ECOSYSTEM_START + 3;

export interface OmniProperty {
  propertyId: number;
  name: string;
  category: string;
  subcategory: string;
  data: string;
  url: string;
  divisible: boolean;
  issuer: string;
  creationTxid: string;
  totalTokens: bigint;
}

interface OmniTxState {
  valid: boolean;
  invalidReason?: string;
  subsends?: { propertyId: number; amount: bigint }[];
  createdPropertyId?: number;
}

interface OmniState {
  properties: Map<number, OmniProperty>;
  /** address → property id → balance (base units: 1e-8 for divisible properties, whole tokens otherwise). */
  balances: Map<string, Map<number, bigint>>;
  txs: Map<string, OmniTxState>;
  /** Omni transactions (valid or not) per main-chain height. */
  byHeight: Map<number, string[]>;
  total: number;
}

export class OmniError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export class OmniLayer {
  private cached?: OmniState;

  constructor(private readonly chain: FakeChain) {}

  /** Forget the state (the chain changed); it is replayed on the next read. */
  invalidate(): void {
    this.cached = undefined;
  }

  private get state(): OmniState {
    this.cached ??= this.replay();
    return this.cached;
  }

  private replay(): OmniState {
    const s: OmniState = { properties: new Map(), balances: new Map(), txs: new Map(), byHeight: new Map(), total: 0 };
    const next = { 1: MAIN_ECOSYSTEM_FIRST_ID, 2: TEST_ECOSYSTEM_FIRST_ID };
    const balance = (address: string, id: number) => s.balances.get(address)?.get(id) ?? 0n;
    const add = (address: string, id: number, delta: bigint) => {
      const row = s.balances.get(address) ?? new Map<number, bigint>();
      row.set(id, (row.get(id) ?? 0n) + delta);
      s.balances.set(address, row);
    };
    for (const block of this.chain.main) {
      for (const tx of block.txs) {
        const m = tx.omni;
        if (!m) continue;
        s.total++;
        s.byHeight.set(block.height, [...(s.byHeight.get(block.height) ?? []), tx.txid]);
        const invalid = (reason: string) => s.txs.set(tx.txid, { valid: false, invalidReason: reason });
        switch (m.type) {
          case 0: {
            if (!s.properties.has(m.propertyId)) invalid('Property does not exist');
            else if (m.amount <= 0n) invalid('Value out of range or zero');
            else if (balance(m.sender, m.propertyId) < m.amount) invalid('Sender has insufficient balance');
            else {
              add(m.sender, m.propertyId, -m.amount);
              add(m.reference, m.propertyId, m.amount);
              s.txs.set(tx.txid, { valid: true });
            }
            break;
          }
          case 4: {
            const inEcosystem = (id: number) => (m.ecosystem === 1 ? id < TEST_ECOSYSTEM_START : id >= TEST_ECOSYSTEM_START);
            const held = [...(s.balances.get(m.sender) ?? new Map<number, bigint>()).entries()]
              .filter(([id, amount]) => amount > 0n && inEcosystem(id))
              .sort(([a], [b]) => a - b);
            if (held.length === 0) {
              invalid('Sender has no tokens to send');
              break;
            }
            for (const [id, amount] of held) {
              add(m.sender, id, -amount);
              add(m.reference, id, amount);
            }
            s.txs.set(tx.txid, { valid: true, subsends: held.map(([propertyId, amount]) => ({ propertyId, amount })) });
            break;
          }
          case 50: {
            if (m.name === '') invalid('Property name is empty');
            else if (m.amount <= 0n) invalid('Value out of range or zero');
            else {
              const propertyId = next[m.ecosystem]++;
              s.properties.set(propertyId, {
                propertyId,
                name: m.name,
                category: m.category,
                subcategory: m.subcategory,
                data: m.data,
                url: m.url,
                divisible: m.divisible,
                issuer: m.sender,
                creationTxid: tx.txid,
                totalTokens: m.amount,
              });
              add(m.sender, propertyId, m.amount);
              s.txs.set(tx.txid, { valid: true, createdPropertyId: propertyId });
            }
            break;
          }
        }
      }
    }
    return s;
  }

  /** The id the next fixed property of the main ecosystem will get (pending creations counted). */
  nextPropertyId(): number {
    const confirmed = [...this.state.properties.keys()].filter((id) => id < TEST_ECOSYSTEM_START);
    const pending = this.chain.mempool.filter((tx) => tx.omni?.type === 50 && tx.omni.ecosystem === 1).length;
    return Math.max(MAIN_ECOSYSTEM_FIRST_ID - 1, ...confirmed) + 1 + pending;
  }

  property(id: number): OmniProperty | undefined {
    return this.state.properties.get(id);
  }

  balance(address: string, propertyId: number): bigint {
    return this.state.balances.get(address)?.get(propertyId) ?? 0n;
  }

  /** Validity of a mined Omni transaction; undefined when it is not (or not yet) in the main chain. */
  validity(txid: string): OmniTxState | undefined {
    return this.state.txs.get(txid);
  }

  // --- RPC results -------------------------------------------------------------------------------

  private requireProperty(id: unknown): OmniProperty {
    const p = typeof id === 'number' ? this.state.properties.get(id) : undefined;
    if (!p) throw new OmniError(-8, 'Property identifier does not exist');
    return p;
  }

  private isDivisible(id: number): boolean {
    // Omni Core's isPropertyDivisible answers true for an unknown property.
    return this.state.properties.get(id)?.divisible ?? true;
  }

  private amount(id: number, units: bigint): string {
    return omniAmountText(units, this.isDivisible(id));
  }

  info(): Record<string, unknown> {
    const tip = this.chain.tip;
    return {
      omnicoreversion_int: 12000000,
      omnicoreversion: '0.12.0',
      mastercoreversion: '0.12.0',
      bitcoincoreversion: '0.20.1',
      block: tip.height,
      blocktime: tip.header.time,
      blocktransactions: this.state.byHeight.get(tip.height)?.length ?? 0,
      totaltransactions: this.state.total,
      alerts: [],
    };
  }

  listBlockTransactions(height: unknown): string[] {
    if (typeof height !== 'number' || !Number.isInteger(height) || height < 0 || height > this.chain.height) {
      throw new OmniError(-8, 'Block height is out of range');
    }
    return this.state.byHeight.get(height) ?? [];
  }

  getProperty(id: unknown): Record<string, unknown> {
    const p = this.requireProperty(id);
    return {
      propertyid: p.propertyId,
      name: p.name,
      category: p.category,
      subcategory: p.subcategory,
      data: p.data,
      url: p.url,
      divisible: p.divisible,
      issuer: p.issuer,
      creationtxid: p.creationTxid,
      fixedissuance: true,
      managedissuance: false,
      totaltokens: omniAmountText(p.totalTokens, p.divisible),
    };
  }

  getBalance(address: string, id: unknown): Record<string, unknown> {
    const p = this.requireProperty(id);
    return {
      balance: omniAmountText(this.balance(address, p.propertyId), p.divisible),
      reserved: omniAmountText(0n, p.divisible),
      frozen: omniAmountText(0n, p.divisible),
    };
  }

  getAllBalances(address: string): Record<string, unknown>[] {
    const rows = [...(this.state.balances.get(address) ?? new Map<number, bigint>()).entries()].filter(([, v]) => v > 0n).sort(([a], [b]) => a - b);
    if (rows.length === 0) throw new OmniError(-5, 'Address not found');
    return rows.map(([id, v]) => {
      const p = this.state.properties.get(id) as OmniProperty;
      return {
        propertyid: id,
        name: p.name,
        balance: omniAmountText(v, p.divisible),
        reserved: omniAmountText(0n, p.divisible),
        frozen: omniAmountText(0n, p.divisible),
      };
    });
  }

  getTransaction(txid: string): Record<string, unknown> {
    const loc = this.chain.findTransaction(txid);
    if (!loc || (loc.block && !loc.inMainChain)) throw new OmniError(-5, 'No information available about transaction');
    const m = loc.tx.omni;
    if (!m) throw new OmniError(-5, 'Not a Master Protocol transaction');
    return this.transactionObject(loc.tx, m, loc.block, loc.index);
  }

  /**
   * omni_listpendingtransactions: the memory pool's Omni transactions in omni_gettransaction's shape for an
   * unconfirmed one (confirmations 0, no validity nor block fields; Send All without subsends), as Omni
   * Core's rpc.cpp prints them. With `address`, only those it sends or references (Omni Core compares the
   * sender and the reference address only).
   */
  listPendingTransactions(address: string): Record<string, unknown>[] {
    return this.chain.mempool.flatMap((tx, position) => {
      const m = tx.omni;
      if (!m) return [];
      if (address !== '' && m.sender !== address && !('reference' in m && m.reference === address)) return [];
      return [this.transactionObject(tx, m, undefined, position)];
    });
  }

  private transactionObject(tx: Tx, m: OmniMessage, block: Block | undefined, position: number): Record<string, unknown> {
    const confirmed = block !== undefined;
    const state = confirmed ? this.state.txs.get(tx.txid) : undefined;
    const mine = this.chain.ownsAddress(m.sender) || ('reference' in m && this.chain.ownsAddress(m.reference));
    const head = {
      txid: tx.txid,
      fee: omniAmountText(tx.fee ?? 0n, true),
      sendingaddress: m.sender,
      referenceaddress: 'reference' in m ? m.reference : undefined,
      ismine: mine,
      version: 0,
      type_int: m.type,
      type: OMNI_TYPE_NAMES[m.type],
    };
    let details: Record<string, unknown>;
    switch (m.type) {
      case 0:
        details = { propertyid: m.propertyId, divisible: this.isDivisible(m.propertyId), amount: this.amount(m.propertyId, m.amount) };
        break;
      case 4:
        details = {
          ecosystem: m.ecosystem === 1 ? 'main' : 'test',
          subsends: state?.subsends?.map((s) => ({
            propertyid: s.propertyId,
            divisible: this.isDivisible(s.propertyId),
            amount: this.amount(s.propertyId, s.amount),
          })),
        };
        break;
      case 50: {
        const id = state?.createdPropertyId;
        details = {
          propertyid: id,
          divisible: id === undefined ? undefined : this.isDivisible(id),
          ecosystem: m.ecosystem === 1 ? 'main' : 'test',
          propertytype: m.divisible ? 'divisible' : 'indivisible',
          category: m.category,
          subcategory: m.subcategory,
          propertyname: m.name,
          data: m.data,
          url: m.url,
          amount: omniAmountText(m.amount, m.divisible),
        };
        break;
      }
    }
    const chainInfo = block
      ? {
          valid: state?.valid ?? false,
          invalidreason: state && !state.valid ? state.invalidReason : undefined,
          blockhash: block.hash,
          blocktime: block.header.time,
          positioninblock: position,
          block: block.height,
          confirmations: this.chain.height - block.height + 1,
        }
      : { confirmations: 0 };
    return { ...head, ...details, ...chainInfo };
  }
}
