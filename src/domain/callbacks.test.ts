import { describe, expect, it } from 'vitest';
import { callbackBody } from './callbacks.ts';

describe('callbackBody itemTail', () => {
  it('gives the bytes of the same members set last on the item (a test body too, an empty item too)', () => {
    const target = { id: '00000000-0000-0000-0000-000000000001', eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED' as const, apiVersion: '2021-03-20' };
    const safety = { verdict: 'review', flags: ['dust', 'failed'] };
    for (const item of [{ blockchain: 'bitcoin', amount: '0.1', note: 'é "q" }}}' }, {}]) {
      for (const isTest of [false, true]) {
        expect(callbackBody(target, 'key', item, { isTest, itemTail: `,"safety":${JSON.stringify(safety)}` })).toBe(
          callbackBody(target, 'key', { ...item, safety }, { isTest }),
        );
      }
    }
  });
});
