/**
 * `npm run demo` (scripts/demo.ts) runs as a newcomer would run it: a child process that starts its own
 * EVM node, receiver and herald, and must exit 0 having printed the three kinds of callbacks, each with
 * a valid signature, and the wallet's assets.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

function runDemo(timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const timer = setTimeout(() => {
      child.kill('SIGINT'); // the demo stops what it started on SIGINT
      setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      reject(new Error(`the demo did not finish within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

it('npm run demo: starts everything, receives the three callbacks signed, lists the wallet assets and exits 0', async () => {
  const { code, output } = await runDemo(55_000);
  expect(code, output).toBe(0);
  for (const event of ['TRANSACTION_MINED', 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER']) {
    expect(output).toMatch(new RegExp(`received: ${event}\\n`));
  }
  expect(output.match(/<- callback #\d+ received/g)).toHaveLength(4);
  expect(output.match(/signature: valid/g)).toHaveLength(4);
  expect(output).not.toContain('INVALID');
  // The wallet's assets: the 1.5 ETH of the internal transfer, the ERC-20 and the NFT.
  expect(output).toContain('coin   10001.5 ETH confirmed');
  expect(output).toContain('token  2.5 HDT (ERC-20');
  expect(output).toContain('NFT    HDN #42 (ERC-721');
  expect(output).toContain('"state": "following"');
  expect(output).toMatch(/Done in \d+\.\d s\./);
}, 60_000);
