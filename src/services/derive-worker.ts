/**
 * A derivation worker thread (started by derive-workers.ts): derives the address windows of wallet keys
 * (domain/wallet-windows.ts deriveWindow) and posts each window's addresses back as one newline-joined string
 * (one string crosses the thread boundary cheaper than thousands).
 */
import { parentPort } from 'node:worker_threads';
import { deriveWindowAddresses, parseSubscribedKey } from '../domain/wallet-windows.ts';
import type { DeriveAnswer, DeriveJob } from './derive-workers.ts';

const port = parentPort;
if (port === null) throw new Error('derive-worker.ts runs as a worker thread (derive-workers.ts starts it)');

port.on('message', (job: DeriveJob) => {
  const answer: DeriveAnswer = { id: job.id, results: [] };
  try {
    for (const request of job.requests) {
      const parsed = parseSubscribedKey(request.blockchain, request.network, request.key);
      if (!parsed.ok) {
        answer.results.push({ error: parsed.message });
        continue;
      }
      const windows = request.windows.map(({ change, from, to }) => {
        const window = deriveWindowAddresses(parsed.key, change, from, to, request.key.regtest);
        const addresses = window?.addresses ?? [];
        return { change, from, prefix: addresses.length > 0 ? (window?.prefix ?? '') : '', addresses: addresses.join('\n'), count: addresses.length };
      });
      answer.results.push({ windows });
    }
  } catch (error) {
    answer.error = (error as Error).message;
  }
  port.postMessage(answer);
});
