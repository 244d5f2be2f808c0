import { describe, expect, it } from 'vitest';
import type { StreamRow } from '../store/event-stream.ts';
import { entryBlock, entryPieces } from './event-stream.ts';

const row = (over: Partial<StreamRow>): StreamRow => ({
  xid: '900',
  rank: 1,
  n: '7',
  id: '00000000-0000-0000-0000-000000000007',
  event_type: 'TRANSACTION_MINED',
  body: '{}',
  x: ',"sequence":7,"createdAt":1700000000',
  mark: null,
  ...over,
});

/** The entry's text, as the answer holds it. */
function text(r: StreamRow): string {
  const mark = r.mark === null ? undefined : JSON.parse(r.mark);
  const out: string[] = [];
  entryPieces(out, r, entryBlock(r, mark), mark, '');
  return out.join('');
}

describe("the event stream's entries (docs/concepts/event-stream.md)", () => {
  const mined =
    '{"apiVersion":"2021-03-20","referenceId":"r","idempotencyKey":"k","data":{"item":{"txId":"é","minedInBlock":{"height":12,"hash":"0xab","timestamp":1}}}}';
  const block =
    '{"apiVersion":"2021-03-20","referenceId":"r","idempotencyKey":"k","data":{"item":{"blockchain":"bitcoin","height":5,"hash":"00ff","extra":{"height":9,"hash":"no"}}}}';

  it('an event: its body byte for byte, then sequence, createdAt and the block it names', () => {
    expect(text(row({ body: mined }))).toBe(`${mined.slice(0, -1)},"sequence":7,"createdAt":1700000000,"blockHash":"0xab"}`);
    expect(text(row({ body: block, event_type: 'BLOCK_MINED' }))).toBe(`${block.slice(0, -1)},"sequence":7,"createdAt":1700000000,"blockHash":"00ff"}`);
    const mempool = '{"apiVersion":"2021-03-20","data":{"item":{"txId":"t"}}}';
    expect(text(row({ body: mempool, event_type: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED' }))).toBe(
      `${mempool.slice(0, -1)},"sequence":7,"createdAt":1700000000}`,
    );
  });

  it("a retraction: the event's keys, retracted and the mark's block; a reinstatement: the body with reinstated", () => {
    const retracted = row({ body: mined, rank: 0, mark: JSON.stringify(['retracted', 'sub-1', 'key-1', 12, '0xold']) });
    expect(text(retracted)).toBe(
      '{"apiVersion":"2021-03-20","referenceId":"sub-1","idempotencyKey":"key-1","retracted":true,"event":"TRANSACTION_MINED","sequence":7,"createdAt":1700000000,"blockHash":"0xold","blockHeight":12}',
    );
    // The mark's block unknown: the body's.
    const unknown = row({ body: mined, rank: 0, mark: JSON.stringify(['retracted', 'sub-1', 'key-1', 12, null]) });
    expect(text(unknown)).toContain('"blockHash":"0xab","blockHeight":12}');
    const reinstated = row({ body: mined, rank: 0, mark: JSON.stringify(['reinstated', 'sub-1', 'key-1', null, null]) });
    expect(text(reinstated)).toBe(`${mined.slice(0, -1)},"sequence":7,"createdAt":1700000000,"blockHash":"0xab","reinstated":true}`);
  });
});
