/**
 * Response items of the Callback Data reads (docs/reference/api.md#address-details, #block-by-hash, #block-by-height, #transaction-details and #callback-data-reads), as TypeBox schemas: the
 * answers are serialised and documented with them. `blockchainSpecific` has no discriminator field (its
 * variant follows from the blockchain path parameter), so it is documented as any of the variants of
 * the chains the endpoint serves.
 */
import { type TSchema, Type } from '@sinclair/typebox';

const S = Type.String();
const I = Type.Integer();
const UnitAmount = Type.Object({ amount: Type.String({ description: 'Decimal string, whole coins.' }), unit: Type.String() });
const AddressAmount = Type.Object({ address: S, amount: Type.String({ description: 'Decimal string, whole coins.' }) });

export const AddressDetailsItem = Type.Object({
  incomingTransactionsCount: Type.Integer({
    description: 'Confirmed coin transactions that paid the address, counted by the wallet ledger over the blocks after watchedFromBlock (like the totals).',
  }),
  outgoingTransactionsCount: Type.Integer({
    description: 'Confirmed coin transactions that spent from the address (one to itself included), counted likewise.',
  }),
  transactionsCount: Type.Integer({ description: 'The sum of the two: a transaction is incoming or outgoing for an address, never both. Tokens excluded.' }),
  confirmedBalance: Type.Object(UnitAmount.properties, {
    description:
      "From herald's wallet ledger of the address (confirmed blocks only): the opening balance at watchedFromBlock (see openingBalance) plus what moved after it.",
  }),
  totalReceived: Type.Object(UnitAmount.properties, { description: 'Counted over the confirmed blocks after watchedFromBlock.' }),
  totalSpent: Type.Object(UnitAmount.properties, { description: 'Counted over the confirmed blocks after watchedFromBlock.' }),
  watchedFromBlock: Type.Union([Type.Integer(), Type.Null()], {
    description:
      "Extension. The block herald watches the address from: the chain's last processed block when the customer's first active subscription of the address was created (or a wallet of the customer added it, if earlier). The totals and counts cover the confirmed blocks after it. Null until herald follows the chain.",
  }),
  openingBalance: Type.Union([Type.Literal('read'), Type.Literal('pending'), Type.Literal('unavailable')], {
    description:
      "Extension, as a wallet's coins say it. 'read': confirmedBalance includes the balance the node gave at watchedFromBlock; 'pending': not yet (that block is not confirmed yet); 'unavailable': the node cannot tell (no scantxoutset on dogecoind and zcashd, a pruned state), so confirmedBalance counts only what moved after watchedFromBlock.",
  }),
});

// --- blocks ----------------------------------------------------------------------------------------

const utxoBlockBase = { bits: S, chainwork: S, merkleRoot: S, nonce: I, size: I, version: I };
const BitcoinBlock = Type.Object(
  { ...utxoBlockBase, difficulty: S, strippedSize: I, versionHex: S, weight: I },
  { title: 'bitcoin', additionalProperties: false },
);
const LitecoinBlock = Type.Object(
  { ...utxoBlockBase, difficulty: S, strippedsize: I, versionHex: S, weight: I },
  { title: 'litecoin', additionalProperties: false },
);
const BitcoinCashBlock = Type.Object({ ...utxoBlockBase, difficulty: S, versionHex: S }, { title: 'bitcoin-cash, dash', additionalProperties: false });
const DogecoinBlock = Type.Object({ ...utxoBlockBase, difficulty: S, strippedSize: I, weight: I }, { title: 'dogecoin', additionalProperties: false });
const ZcashBlock = Type.Object({ bits: S, chainwork: S, merkleRoot: S, nonce: S, size: I, version: I }, { title: 'zcash', additionalProperties: false });

const evmBlockFields = {
  difficulty: S,
  extraData: S,
  gasLimit: S,
  gasUsed: S,
  nonce: S,
  sha3Uncles: S,
  totalDifficulty: Type.String({ description: "'' when the node does not give it (nodes after the merge may not)." }),
  minedInSeconds: I,
  size: I,
};
const EvmBlock = Type.Object(
  { ...evmBlockFields, uncles: Type.Optional(Type.Array(S)) },
  { title: 'ethereum, ethereum-classic, binance-smart-chain', additionalProperties: false },
);

const XrpBlock = Type.Object(
  { totalCoins: UnitAmount, totalFees: Type.Object(UnitAmount.properties, { description: 'The fees of the ledger’s transactions.' }) },
  { title: 'xrp', additionalProperties: false },
);

const TronBlock = Type.Object(
  {
    bandwidthUsed: Type.String({ description: 'Bandwidth points of the block’s transactions (receipts’ net_usage).' }),
    burnedTrx: Type.String({ description: 'TRX burnt by the block’s transactions (their fee).' }),
    energyUsed: Type.String({ description: 'Energy of the block’s transactions (receipts’ energy_usage_total).' }),
    size: Type.Integer({ description: 'Always -1: java-tron does not tell a block’s size.' }),
  },
  { title: 'tron', additionalProperties: false },
);

const BlockSpecific = Type.Union([BitcoinBlock, LitecoinBlock, BitcoinCashBlock, DogecoinBlock, ZcashBlock, EvmBlock, XrpBlock, TronBlock], {
  description: "The chain's block fields; the variant follows from the blockchain path parameter.",
});

const blockBase = { hash: S, height: I, previousBlockHash: S, timestamp: I, transactionsCount: I };

export const BlockByHeightItem = Type.Object({ ...blockBase, blockchainSpecific: BlockSpecific });

/** The block read by hash puts the EVM fields at the top level too; herald gives them on the EVM chains only (docs/reference/api.md#settled-callback-data-reads). */
export const BlockByHashItem = Type.Object({
  ...blockBase,
  ...Object.fromEntries(Object.entries(evmBlockFields).map(([k, v]) => [k, Type.Optional(v as TSchema)])),
  uncles: Type.Optional(Type.Array(S)),
  blockchainSpecific: BlockSpecific,
});

// --- transactions ------------------------------------------------------------------------------

const Vin = Type.Object({
  addresses: Type.Array(S),
  coinbase: Type.Optional(S),
  scriptSig: Type.Object({ asm: S, hex: S, type: Type.String({ description: "The spent output's script type." }) }),
  sequence: I,
  txid: Type.Optional(S),
  txinwitness: Type.Array(S),
  value: Type.Optional(Type.String({ description: 'The spent output, whole coins.' })),
  vout: Type.Optional(I),
});
const Vout = Type.Object({
  isSpent: Type.Boolean({ description: "At the node's tip (unconfirmed spends included)." }),
  scriptPubKey: Type.Object({ addresses: Type.Array(S), asm: S, hex: S, reqSigs: I, type: S }),
  value: S,
});
const utxoTxBase = { locktime: I, size: I, version: I, vin: Type.Array(Vin), vout: Type.Array(Vout) };
const BitcoinTx = Type.Object({ ...utxoTxBase, vSize: I }, { title: 'bitcoin, litecoin', additionalProperties: false });
const BitcoinCashTx = Type.Object(utxoTxBase, { title: 'bitcoin-cash, dash, dogecoin', additionalProperties: false });
const ZcashTx = Type.Object(
  {
    ...utxoTxBase,
    bindingSig: S,
    expiryHeight: I,
    joinSplitPubKey: S,
    joinSplitSig: S,
    overwintered: Type.Boolean(),
    vJoinSplit: Type.Array(
      Type.Object({
        anchor: S,
        cipherTexts: Type.Array(S),
        commitments: Type.Array(S),
        macs: Type.Array(S),
        nullifiers: Type.Array(S),
        oneTimePubKey: S,
        proof: S,
        randomSeed: S,
        vPubNew: S,
        vPubOld: S,
      }),
    ),
    vShieldedOutput: Type.Array(Type.Object({ cmu: S, cv: S, encCipherText: S, ephemeralKey: S, outCipherText: S, proof: S })),
    vShieldedSpend: Type.Array(Type.Object({ anchor: S, cv: S, nullifier: S, proof: S, rk: S, spendAuthSig: S })),
    valueBalance: S,
    versionGroupId: S,
  },
  { title: 'zcash', additionalProperties: false },
);
const evmTxFields = { contract: S, gasLimit: S, gasPrice: UnitAmount, gasUsed: S, inputData: S, nonce: I };
const EthereumTx = Type.Object(
  { ...evmTxFields, transactionStatus: Type.String({ description: "'0x1' success, '0x0' failure." }) },
  { title: 'ethereum', additionalProperties: false },
);
const EvmTx = Type.Object(evmTxFields, { title: 'ethereum-classic, binance-smart-chain', additionalProperties: false });
const XrpTx = Type.Object(
  {
    additionalData: Type.String({ description: "Always ''." }),
    destinationTag: Type.Optional(I),
    offer: Type.Object(UnitAmount.properties, { description: 'OfferCreate: TakerGets; 0 XRP otherwise.' }),
    receive: Type.Object(UnitAmount.properties, { description: 'OfferCreate: TakerPays; 0 XRP otherwise.' }),
    sequence: I,
    status: Type.String({ description: 'The transaction result, e.g. tesSUCCESS.' }),
    type: Type.String({ description: 'TransactionType, e.g. Payment.' }),
    value: Type.Object(UnitAmount.properties, { description: 'What a payment delivered (partial payments included).' }),
  },
  { title: 'xrp', additionalProperties: false },
);

const TronTx = Type.Object(
  {
    amount: Type.String({ description: 'TRX moved (TransferContract amount or the call value).' }),
    bandwidthUsed: Type.Object(UnitAmount.properties, { description: "Bandwidth points, unit 'BANDWIDTH'." }),
    contract: Type.String({ description: "The contract called or created; '' otherwise." }),
    energyUsed: Type.Object(UnitAmount.properties, { description: "Energy, unit 'ENERGY'." }),
    hasInternalTransactions: Type.Boolean(),
    hasTokenTransfers: Type.String({ description: "'true' or 'false' (a string, as in the catalogue)." }),
    input: S,
    recipients: S,
    senders: S,
    transactionStatus: Type.String({ description: "contractRet, e.g. 'SUCCESS', 'REVERT'." }),
  },
  { title: 'tron', additionalProperties: false },
);

export const TransactionItem = Type.Object({
  index: Type.Integer({ description: 'Position in the block.' }),
  isConfirmed: Type.Boolean({ description: 'Always true: herald answers mined transactions only.' }),
  minedInBlockHash: S,
  minedInBlockHeight: I,
  recipients: Type.Array(AddressAmount),
  senders: Type.Array(AddressAmount, { description: 'Sender amounts include the fee.' }),
  timestamp: Type.Integer({ description: 'Time of the block, Unix seconds.' }),
  transactionHash: S,
  fee: UnitAmount,
  blockchainSpecific: Type.Union([BitcoinTx, ZcashTx, BitcoinCashTx, EthereumTx, EvmTx, XrpTx, TronTx], {
    description: "The chain's transaction fields; the variant follows from the blockchain path parameter.",
  }),
});
