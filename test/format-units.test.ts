/** The SQL amount formatter (herald_format_units) agrees with formatUnits() on every value tried. */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import type { Db } from '../src/store/db.ts';
import { openMigratedTestDatabase } from './harness.ts';

let db: Db;
beforeAll(async () => {
  db = await openMigratedTestDatabase();
});
afterAll(() => db.close());

it('matches formatUnits for 2,000 values from 0 to 2^256 and decimals 0 to 30', async () => {
  const cases = fc.sample(fc.tuple(fc.bigInt({ min: -(2n ** 256n), max: 2n ** 256n }), fc.integer({ min: 0, max: 30 })), { numRuns: 2000, seed: 7 });
  cases.push([0n, 18], [1n, 18], [10n ** 18n, 18], [2n ** 200n, 18], [123n, 0], [100n, 2], [-5n, 1]);
  const rows = await db.query<{ formatted: string }>(
    'test:format-units',
    'SELECT herald_format_units(v::numeric, d) AS formatted FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS t(v, d, n) ORDER BY n',
    [cases.map(([v]) => v.toString()), cases.map(([, d]) => d)],
  );
  expect(rows.map((r) => r.formatted)).toEqual(cases.map(([v, d]) => formatUnits(v, d)));
});
