/**
 * The `herald` command line. Every command takes --data-dir (or DATABASE_URL) and works whether or not
 * a server is running on that data directory: the embedded database is shared, not started twice. Only
 * serve and migrate make one where there is none (cli/database.ts).
 */
import { ConfigError } from '../config/config.ts';
import { NoDatabaseError } from '../store/embedded.ts';
import { buildProgram } from './program.ts';

const program = buildProgram();

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof ConfigError || error instanceof NoDatabaseError) {
    process.stderr.write(`herald: ${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`herald: ${(error as Error).message}\n`);
  process.exit(1);
}
