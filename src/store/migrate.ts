/**
 * Numbered, forward-only migrations: src/store/migrations/NNN_name.sql, applied in order, each in its
 * own transaction, recorded in schema_migrations. An advisory lock makes concurrent starts of several
 * processes on one database apply each migration exactly once.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.ts';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Arbitrary constant: the advisory lock id that serialises migration runs. */
const MIGRATION_LOCK = 7_405_321;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ version: Number(file.slice(0, 3)), name: file.slice(4, -4), sql: readFileSync(join(dir, file), 'utf8') }));
}

/** Applies the migrations not yet applied; returns the names of those it applied. */
export async function migrate(db: Db, migrations = listMigrations()): Promise<string[]> {
  return await db.transaction('migrate', async (tx) => {
    await tx.query('migrate:lock', 'SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      'migrate:table',
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const rows = await tx.query<{ version: number }>('migrate:applied', 'SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    const newest = Math.max(0, ...applied);
    const known = Math.max(0, ...migrations.map((m) => m.version));
    if (newest > known) {
      throw new Error(`The database has schema version ${newest}, newer than this program knows (${known}). Upgrade herald before using this database.`);
    }
    const done: string[] = [];
    for (const migration of migrations.filter((m) => !applied.has(m.version))) {
      await tx.query(`migrate:${migration.name}`, migration.sql);
      await tx.query('migrate:record', 'INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      done.push(`${String(migration.version).padStart(3, '0')}_${migration.name}`);
    }
    return done;
  });
}
