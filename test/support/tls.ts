/**
 * The tests' certificate authority: a throw-away CA (src/dev/certificate-authority.ts) and a file of its
 * certificate for processes that read one (delivery.caFile, NODE_EXTRA_CA_CERTS).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CertificateAuthority, createCertificateAuthority } from '../../src/dev/certificate-authority.ts';

export type { IssuedCertificate } from '../../src/dev/certificate-authority.ts';
export type TestCa = CertificateAuthority;

const DAY_MS = 24 * 60 * 60 * 1000;

export function createTestCa(): Promise<TestCa> {
  return createCertificateAuthority('herald test CA');
}

const caDir = join(tmpdir(), 'herald-test-ca');
const written = new Set<string>();

/**
 * Writes the CA certificate to a temporary file and returns its path: tmpdir()/herald-test-ca/<hash>.pem,
 * named by content, so writing the same CA again returns the same file. Files are removed when the process
 * exits normally (test workers are often killed instead, so files older than two days are pruned here too).
 */
export function writeCaFile(caPem: string): string {
  mkdirSync(caDir, { recursive: true });
  if (written.size === 0) {
    process.once('exit', () => {
      for (const path of written) rmSync(path, { force: true });
    });
    const cutoff = Date.now() - 2 * DAY_MS;
    for (const file of readdirSync(caDir)) {
      const path = join(caDir, file);
      try {
        if (statSync(path).mtimeMs < cutoff) rmSync(path, { force: true });
      } catch {
        // another process pruned it first
      }
    }
  }
  const path = join(caDir, `${createHash('sha256').update(caPem).digest('hex').slice(0, 32)}.pem`);
  if (!written.has(path)) {
    const temporary = `${path}.${process.pid}.tmp`;
    writeFileSync(temporary, caPem);
    renameSync(temporary, path); // atomic: a reader never sees half a file
    written.add(path);
  }
  return path;
}
