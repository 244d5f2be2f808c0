// A receiver built only from the receiver kit (packages/receiver), for test/exactly-once.test.ts: HTTPS,
// verifyCallback, then handleOnce on its own PostgreSQL database, whose handler writes one row to `effects`
// and then takes HANDLER_MS (so that a SIGKILL lands mid-handler), and 204 after the commit. It prints
// `begin` when a handler starts and `end` when its transaction has committed (stdout is a pipe: written
// synchronously, so a line printed before a SIGKILL is never lost): a kill after more begins than ends
// landed mid-handler.
//   PORT CERT_FILE KEY_FILE SECRET DATABASE_URL HANDLER_MS node kit-receiver.mjs
import { readFileSync } from 'node:fs';
import https from 'node:https';
import pg from 'pg';
import { createInbox, handleOnce, VerificationError, verifyCallback } from '../../packages/receiver/src/index.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 8 });
const setup = await pool.connect();
await createInbox(setup);
await setup.query('CREATE TABLE IF NOT EXISTS effects (n bigserial PRIMARY KEY, key text NOT NULL)');
setup.release();
const handlerMs = Number(process.env.HANDLER_MS ?? 0);
const effect = async (client, event) => {
  process.stdout.write('begin\n');
  await client.query('INSERT INTO effects (key) VALUES ($1)', [event.idempotencyKey]);
  if (handlerMs > 0) await new Promise((resolve) => setTimeout(resolve, handlerMs));
};
const undo = (client, retraction) => client.query('DELETE FROM effects WHERE key = $1', [retraction.idempotencyKey]);

const server = https.createServer({ cert: readFileSync(process.env.CERT_FILE), key: readFileSync(process.env.KEY_FILE) }, async (req, res) => {
  try {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const event = verifyCallback({ rawBody: Buffer.concat(chunks), headers: req.headers, secret: process.env.SECRET });
    const client = await pool.connect();
    try {
      let began = false;
      await handleOnce(
        client,
        event,
        (c, e) => {
          began = true;
          return effect(c, e);
        },
        { onRetract: undo },
      );
      if (began) process.stdout.write('end\n');
    } finally {
      client.release();
    }
    res.writeHead(204).end();
  } catch (error) {
    res.writeHead(error instanceof VerificationError ? 401 : 500).end(String(error.message));
  }
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`listening ${server.address().port}`));
