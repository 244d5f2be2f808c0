/**
 * Backups of herald's database (docs/operations/backup.md): every table of its schema read in one
 * consistent snapshot and written as gzip'd JSON lines; a restore loads them into an empty database at the
 * backup's own schema version, then applies the migrations this herald has beyond it.
 *
 * Why not pg_dump: the embedded server is PostgreSQL 17 and its npm package ships only initdb, pg_ctl and
 * postgres; a pg_dump older than the server refuses to dump it. This format needs nothing but a
 * connection, works on any server version (a backup of the embedded database restores into an external
 * PostgreSQL 15 and back), and keeps every value exact: each row goes through row_to_json and
 * json_populate_recordset, the server's own text forms of its types.
 *
 * The file: a header line {format, formatVersion, createdAt, server, migrations}, then lines
 * {table, rows} (up to ROWS_PER_LINE rows each, tables in an order their foreign keys allow), then
 * {sequences}, then {end, rows}: a file cut short lacks the last line and is refused.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip, createGzip } from 'node:zlib';
import pg from 'pg';
import type { Db } from './db.ts';
import { listMigrations, type Migration, migrate } from './migrate.ts';

export const BACKUP_FORMAT = 'herald-backup';
const FORMAT_VERSION = 1;
const ROWS_PER_LINE = 500;

export interface BackupSummary {
  file: string;
  /** Rows per table. */
  tables: Record<string, number>;
  rows: number;
  /** The schema migrations the backup was taken at. */
  migrations: string[];
}

interface Header {
  format: string;
  formatVersion: number;
  createdAt: string;
  server: string;
  migrations: { version: number; name: string }[];
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

/**
 * herald's tables (the connection's current schema, partitions read through their parent) in an order where
 * every table comes after the tables its foreign keys reference; schema_migrations is the restore's own.
 */
async function tablesInLoadOrder(client: pg.ClientBase): Promise<string[]> {
  const { rows } = await client.query<{ name: string; refs: string[] }>(
    `SELECT c.relname::text AS name,
            coalesce(array_agg(DISTINCT r.relname::text) FILTER (WHERE r.relname IS NOT NULL AND r.oid <> c.oid), '{}') AS refs
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
       LEFT JOIN pg_constraint f ON f.conrelid = c.oid AND f.contype = 'f'
       LEFT JOIN pg_class r ON r.oid = f.confrelid
      WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> 'schema_migrations'
      GROUP BY c.relname
      ORDER BY c.relname`,
  );
  const ordered: string[] = [];
  const pending = new Map(rows.map((r) => [r.name, new Set(r.refs)]));
  while (pending.size > 0) {
    const ready = [...pending].filter(([, refs]) => [...refs].every((ref) => !pending.has(ref))).map(([name]) => name);
    if (ready.length === 0) throw new Error(`circular foreign keys between ${[...pending.keys()].join(', ')}`);
    for (const name of ready) {
      ordered.push(name);
      pending.delete(name);
    }
  }
  return ordered;
}

async function writeLine(out: NodeJS.WritableStream, value: unknown): Promise<void> {
  if (!out.write(`${JSON.stringify(value)}\n`)) await once(out, 'drain');
}

/** Writes a backup of the database at `url` to `file` (gzip'd JSON lines), from one consistent snapshot. */
export async function backupDatabase(url: string, file: string): Promise<BackupSummary> {
  const client = new pg.Client({ connectionString: url, application_name: 'herald-backup' });
  await client.connect();
  const gzip = createGzip();
  const written = gzip.pipe(createWriteStream(file, { mode: 0o600 }));
  const finished = once(written, 'finish');
  try {
    // One snapshot for every table: the backup is what the database held at one instant.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const migrations = (await client.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version')).rows;
    const server = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? 'unknown';
    const header: Header = { format: BACKUP_FORMAT, formatVersion: FORMAT_VERSION, createdAt: new Date().toISOString(), server, migrations };
    await writeLine(gzip, header);
    const tables: Record<string, number> = {};
    let total = 0;
    for (const table of await tablesInLoadOrder(client)) {
      tables[table] = 0;
      await client.query(`DECLARE backup_rows NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS row FROM ${quote(table)} t`);
      for (;;) {
        const { rows } = await client.query<{ row: string }>(`FETCH ${ROWS_PER_LINE} FROM backup_rows`);
        if (rows.length === 0) break;
        // The rows' JSON as the server wrote it, spliced in unparsed: no value goes through a JavaScript number.
        const line = `{"table":${JSON.stringify(table)},"rows":[${rows.map((r) => r.row).join(',')}]}\n`;
        if (!gzip.write(line)) await once(gzip, 'drain');
        tables[table] += rows.length;
        total += rows.length;
      }
      await client.query('CLOSE backup_rows');
    }
    // Sequences are not transactional: their current values are at least those the snapshot's rows used.
    const sequences = await client.query<{ name: string; value: string | null }>(
      `SELECT sequencename AS name, last_value::text AS value FROM pg_sequences WHERE schemaname = current_schema() ORDER BY sequencename`,
    );
    await writeLine(gzip, { sequences: Object.fromEntries(sequences.rows.map((s) => [s.name, s.value])) });
    await writeLine(gzip, { end: true, rows: total });
    await client.query('COMMIT');
    gzip.end();
    await finished;
    return { file, tables, rows: total, migrations: migrations.map(migrationName) };
  } catch (error) {
    gzip.destroy();
    throw error;
  } finally {
    await client.end();
  }
}

const migrationName = (m: { version: number; name: string }) => `${String(m.version).padStart(3, '0')}_${m.name}`;

export class RestoreError extends Error {}

async function* backupLines(file: string): AsyncGenerator<Record<string, unknown>> {
  const lines = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (line.length > 0) yield JSON.parse(line) as Record<string, unknown>;
  }
}

/**
 * Loads the backup in `file` into the empty database `db` (whose connection string is `url`): the
 * backup's migrations first, its rows and sequences in one transaction (user triggers off: the counters
 * they keep are restored as rows), then this herald's later migrations. Returns the rows per table.
 */
export async function restoreDatabase(
  db: Db,
  url: string,
  file: string,
  known: Migration[] = listMigrations(),
): Promise<BackupSummary & { applied: string[] }> {
  const lines = backupLines(file);
  const first = await lines.next().catch((error: Error) => {
    throw new RestoreError(`${file} is not a herald backup (${error.message})`);
  });
  const header = first.value as Header | undefined;
  if (header?.format !== BACKUP_FORMAT || header.formatVersion !== FORMAT_VERSION)
    throw new RestoreError(`${file} is not a herald backup of format ${FORMAT_VERSION}`);
  const unknown = header.migrations.filter((m) => !known.some((k) => k.version === m.version));
  if (unknown.length > 0) {
    throw new RestoreError(
      `the backup has migrations this herald does not know (${unknown.map(migrationName).join(', ')}): restore it with a herald at least as new as the one that took it`,
    );
  }
  const client = new pg.Client({ connectionString: url, application_name: 'herald-restore' });
  await client.connect();
  const counts: Record<string, number> = {};
  try {
    const existing = await client.query(
      `SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema() WHERE c.relkind IN ('r', 'p')`,
    );
    if ((existing.rowCount ?? 0) > 0) {
      throw new RestoreError('the database is not empty: restore into a new data directory (--data-dir) or an empty database (DATABASE_URL)');
    }
    await migrate(
      db,
      known.filter((k) => header.migrations.some((m) => m.version === k.version)),
    );
    const tables = await tablesInLoadOrder(client);
    const columns = new Map<string, string[]>();
    for (const table of tables) {
      const { rows } = await client.query<{ name: string }>(
        `SELECT attname AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
        [quote(table)],
      );
      columns.set(
        table,
        rows.map((r) => quote(r.name)),
      );
    }
    let total = 0;
    let ended = false;
    await client.query('BEGIN');
    // Rows the migrations seeded are in the backup too; the triggers' bookkeeping (counters, change
    // announcements) is in it as well, so they stay off while its rows go in. Foreign keys stay checked.
    await client.query(`TRUNCATE ${tables.map(quote).join(', ')}`);
    for (const table of tables) await client.query(`ALTER TABLE ${quote(table)} DISABLE TRIGGER USER`);
    for await (const line of lines) {
      if (typeof line.table === 'string') {
        const list = columns.get(line.table);
        if (!list) throw new RestoreError(`the backup has rows of a table this schema lacks: ${line.table}`);
        const rows = line.rows as unknown[];
        await client.query(
          `INSERT INTO ${quote(line.table)} (${list.join(', ')}) OVERRIDING SYSTEM VALUE
           SELECT ${list.join(', ')} FROM json_populate_recordset(NULL::${quote(line.table)}, $1::json)`,
          [JSON.stringify(rows)],
        );
        counts[line.table] = (counts[line.table] ?? 0) + rows.length;
        total += rows.length;
      } else if (line.sequences) {
        for (const [name, value] of Object.entries(line.sequences as Record<string, string | null>)) {
          await client.query(
            value === null ? 'SELECT setval($1::regclass, 1, false)' : 'SELECT setval($1::regclass, $2::bigint)',
            value === null ? [quote(name)] : [quote(name), value],
          );
        }
      } else if (line.end === true) {
        if (line.rows !== total) throw new RestoreError(`the backup holds ${line.rows} rows but ${total} were read`);
        ended = true;
      }
    }
    if (!ended) throw new RestoreError(`${file} is cut short (no end line): it is not a complete backup`);
    for (const table of tables) await client.query(`ALTER TABLE ${quote(table)} ENABLE TRIGGER USER`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
  // The migrations this herald has beyond the backup's, on its data, as at any upgrade.
  const applied = await migrate(db, known);
  return { file, tables: counts, rows: Object.values(counts).reduce((a, b) => a + b, 0), migrations: header.migrations.map(migrationName), applied };
}
