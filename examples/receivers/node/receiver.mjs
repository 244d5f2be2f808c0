// A herald callback receiver in Node.js, with nothing but Node (20 or newer) and the receiver kit's signature check:
//
//   HERALD_CALLBACK_SECRET=the-subscriptions-callbackSecretKey PORT=8443 node receiver.mjs
//
// It answers every POST: 401 unless both signatures are right (docs/guides/verify-signatures.md), else 204
// at once, then handles the callback once per idempotencyKey. HTTPS when TLS_CERT_FILE and TLS_KEY_FILE are
// set (herald only calls https:// URLs), plain HTTP otherwise (behind your TLS-terminating proxy).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import * as verification from '../../../packages/receiver/src/verify.js';

const SECRET = process.env.HERALD_CALLBACK_SECRET; // the subscription's callbackSecretKey
const PORT = Number(process.env.PORT ?? 8443);
const TOLERANCE_SECONDS = 5 * 60; // refuse a webhook-timestamp further than this from now: a replay
const MAX_BODY_BYTES = 1024 * 1024;
if (!SECRET) {
  console.error("Set HERALD_CALLBACK_SECRET to the subscription's callbackSecretKey.");
  process.exit(2);
}

// idempotencyKeys already handled. In production: a unique column in your database, written in the same
// transaction as the callback's effect, so a callback sent twice (at-least-once delivery) counts once.
const handled = new Set();

/** Why this request is not a callback signed with SECRET (a sentence), or null when it is one. */
function refusal(headers, body) {
  // Both signatures, in constant time, the timestamp within TOLERANCE_SECONDS: the receiver kit's check
  // (packages/receiver, docs/guides/verify-signatures.md), imported from this repository. In a project of
  // your own: npm install the kit and import it by its package name.
  return verification.refusal({ rawBody: body, headers, secrets: [SECRET], toleranceSeconds: TOLERANCE_SECONDS })?.message ?? null;
}

function handle(callback) {
  // Your work goes here: credit a deposit, update an order... It runs after the answer, so take your time.
  console.log(`callback ${callback.idempotencyKey} ${callback.data.event} ${JSON.stringify(callback.data.item)}`);
}

async function onRequest(req, res) {
  if (req.method !== 'POST') return res.writeHead(405).end();
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return res.writeHead(413).end();
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks); // the raw bytes, as signed: never a re-serialised JSON.parse result
  const why = refusal(req.headers, body);
  if (why) {
    console.log(`refused ${why}`);
    return res.writeHead(401).end(why);
  }
  const callback = JSON.parse(body); // signed by herald: well-formed
  res.writeHead(204).end(); // answer at once: herald waits 5 s at most, then retries
  const key = callback.idempotencyKey;
  if (callback.data.isTest) {
    // A test callback (POST .../test-callback): acknowledge, act on nothing. Check data.isTest, which is
    // signed, not the x-callback-test header, which is not.
    console.log(`test callback ${key} ${callback.data.event}`);
  } else if (handled.has(key)) {
    console.log(`duplicate ${key}`); // sent again (a retry after a lost answer, a resend): already handled
  } else {
    handled.add(key);
    setImmediate(handle, callback);
  }
}

// A request that fails half way (the client hung up) ends its connection, not the receiver.
const listener = (req, res) => onRequest(req, res).catch(() => res.destroy());
const tls = process.env.TLS_CERT_FILE && process.env.TLS_KEY_FILE;
const server = tls
  ? https.createServer({ cert: readFileSync(process.env.TLS_CERT_FILE), key: readFileSync(process.env.TLS_KEY_FILE) }, listener)
  : http.createServer(listener);
server.listen(PORT, () => console.log(`listening on ${tls ? 'https' : 'http'}://localhost:${server.address().port}`));
