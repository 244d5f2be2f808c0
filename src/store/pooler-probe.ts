/**
 * Is there a pooler in transaction (or statement) mode between us and the server at `url`? Behind one,
 * a named prepared statement lives on a server connection that the pooler hands to another client next,
 * so herald's named statements fail (docs/operations/pgbouncer.md). Asked at start when
 * `databasePreparedStatements` is not set (store/open.ts).
 *
 * The probe: two client connections, open at the same time, take turns asking `pg_backend_pid()`, the
 * process id of the server session that answers. On a direct connection (or a pooler in session mode)
 * each client keeps one session for as long as it is connected, and two live sessions never share a
 * process: client A always sees one pid and client B always another. A transaction-mode pooler returns
 * the server connection to its pool after every statement outside a transaction and gives it to the next
 * client that asks (PgBouncer takes the one released last): B is answered by A's server process, or A by
 * a new one. Either is proof; a direct connection can give neither, so there is no false positive.
 * Three rounds (six statements) also catch a pooler that hands connections out in turn.
 */
import pg from 'pg';

const ROUNDS = 3;

export async function transactionPoolerInFront(url: string): Promise<boolean> {
  const clients = [
    new pg.Client({ connectionString: url, application_name: 'herald-probe' }),
    new pg.Client({ connectionString: url, application_name: 'herald-probe' }),
  ];
  try {
    for (const client of clients) await client.connect();
    const seenBy = clients.map(() => new Set<number>());
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, client] of clients.entries()) {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        seenBy[i]?.add(Number(rows[0]?.pid));
      }
    }
    const [a, b] = seenBy as [Set<number>, Set<number>];
    return a.size > 1 || b.size > 1 || [...a].some((pid) => b.has(pid));
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  }
}
