/**
 * A scripted HTTP server on 127.0.0.1 (ephemeral port) for the unit tests of the node clients
 * (src/chains/node-http.ts and the EVM, Tron and XRP clients over it): the test decides each answer, a
 * dropped connection or no answer at all. The fakes that follow a chain are the other files of this folder.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { freePort } from '../../src/store/embedded.ts';

/**
 * What the server does with one request: answer [HTTP status, body] (a string body is sent as it is,
 * anything else as JSON), 'drop' (destroys the socket without an answer) or 'hang' (never answers).
 */
export type ScriptedAnswer = [number, unknown] | 'drop' | 'hang';

export interface ScriptedServer {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  base: string;
  close(): Promise<void>;
}

/**
 * Starts a server that reads each request's body whole and does what `answer` says; a string body goes
 * with the content type `textType` (a node's error page is HTML or plain text).
 */
export async function startScriptedServer(answer: (req: IncomingMessage, body: string) => ScriptedAnswer, textType = 'text/plain'): Promise<ScriptedServer> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const a = answer(req, body);
      if (a === 'hang') return;
      if (a === 'drop') return void req.socket.destroy();
      const [status, payload] = a;
      const isText = typeof payload === 'string';
      res.writeHead(status, { 'content-type': isText ? textType : 'application/json' }).end(isText ? payload : JSON.stringify(payload));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A port on 127.0.0.1 that nothing listens on (bound and released again): a connection to it is refused. */
export const refusedPort: () => Promise<number> = freePort;

/** The error `promise` rejects with, checked to be a `type`; the test fails if it resolves. */
export async function rejection<E extends Error>(promise: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as E;
}
