/**
 * How a command opens the database: only serve and migrate may make the embedded one (a command run in
 * the wrong directory stops with a message instead of making an empty database there); what the
 * pooler probe found goes to stderr.
 */
import type { Config } from '../config/config.ts';
import type { Db } from '../store/db.ts';
import { type OpenDatabase, openDatabase } from '../store/open.ts';

export async function openForCommand(config: Config, options: { create?: boolean } = {}): Promise<OpenDatabase> {
  const database = await openDatabase(config, { poolSize: 2, create: options.create ?? false });
  if (database.poolerNotice) process.stderr.write(`herald: ${database.poolerNotice}\n`);
  return database;
}

export async function withDatabase<T>(config: Config, work: (db: Db, applied: string[]) => Promise<T>, options: { create?: boolean } = {}): Promise<T> {
  const database = await openForCommand(config, options);
  try {
    return await work(database.db, database.applied);
  } finally {
    await database.close();
  }
}
