/**
 * The ceiling of the API benchmark: a bare fastify 5 server, no database, no plugins, in a process of
 * its own. One POST route that parses a JSON body and one GET route, both answering small JSON.
 * Usage: node --import tsx bench/bare-server.ts <port>; prints `listening <url>` on stdout when ready.
 */
import Fastify from 'fastify';

const port = Number(process.argv[2] ?? 0);
const app = Fastify({ logger: false });

let n = 0;
app.post('/bare', async (request) => {
  const body = request.body as { data?: { item?: { transactionId?: string } } };
  return { ok: true, n: ++n, transactionId: body.data?.item?.transactionId ?? null };
});
app.get('/bare', async () => ({ ok: true, n: ++n }));

const url = await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`listening ${url}\n`);

const stop = () => {
  void app.close().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
