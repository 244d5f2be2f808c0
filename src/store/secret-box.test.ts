/** Callback secrets at rest: AES-256-GCM with a key id per value, bound to its row; stored as given without a key. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isCurrent, keyringOf, openSecret, sealSecret, useKeyring } from './secret-box.ts';

const newKey = () => randomBytes(32).toString('base64');
const ROW = '0190f0c2-0000-7000-8000-000000000001';
const keys = (encryptionKey: string, previousEncryptionKeys: string[] = []) => keyringOf({ encryptionKey, previousEncryptionKeys });

afterEach(() => useKeyring(undefined));

describe('with a key', () => {
  it('stores enc:v1:<keyId>:<iv>:<tag>:<ciphertext>, a new iv each time, and opens it again', () => {
    const ring = keys(newKey());
    useKeyring(ring);
    const sealed = sealSecret('s3cret-ü', ROW) as string;
    expect(sealed).toMatch(new RegExp(`^enc:v1:${ring?.current.id}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]+$`));
    expect(sealed).not.toContain('s3cret');
    expect(sealSecret('s3cret-ü', ROW)).not.toBe(sealed);
    expect(openSecret(sealed, ROW)).toBe('s3cret-ü');
    expect(sealSecret(null, ROW)).toBeNull();
    expect(isCurrent(sealed)).toBe(true);
    expect(isCurrent('plain')).toBe(false);
  });

  it('does not open for another row, nor when altered, nor without its key', () => {
    useKeyring(keys(newKey()));
    const sealed = sealSecret('s3cret', ROW) as string;
    expect(() => openSecret(sealed, '0190f0c2-0000-7000-8000-000000000002')).toThrow(/does not decrypt .* altered or belongs to another row/);
    const last = sealed.at(-2) === 'A' ? 'B' : 'A';
    expect(() => openSecret(`${sealed.slice(0, -2)}${last}${sealed.at(-1)}`, ROW)).toThrow(/altered/);
    useKeyring(keys(newKey()));
    expect(() => openSecret(sealed, ROW)).toThrow(/encrypted with key [0-9a-f]{8}, which this process does not have/);
  });

  it('older keys decrypt, the current one encrypts; a value under an older key is not current', () => {
    const old = newKey();
    useKeyring(keys(old));
    const before = sealSecret('s3cret', ROW) as string;
    const ring = keys(newKey(), [old]);
    useKeyring(ring);
    expect(openSecret(before, ROW)).toBe('s3cret');
    expect(isCurrent(before)).toBe(false);
    expect(sealSecret('s3cret', ROW)).toMatch(new RegExp(`^enc:v1:${ring?.current.id}:`));
  });

  it('reads keys from a file (the first line encrypts) and refuses malformed ones with what to do', () => {
    const [current, older] = [newKey(), newKey()];
    const file = join(mkdtempSync(join(tmpdir(), 'herald-keys-')), 'keys');
    writeFileSync(file, `# herald keys\n${current}\n\n${older}\n`);
    const ring = keyringOf({ encryptionKeyFile: file, previousEncryptionKeys: [] });
    expect(ring?.current.id).toBe(keys(current)?.current.id);
    expect(ring?.byId.size).toBe(2);
    expect(() => keys('too-short')).toThrow(/encryptionKey must be 32 random bytes in base64 \(make one with: openssl rand -base64 32\)/);
    expect(() => keyringOf({ encryptionKey: current, encryptionKeyFile: file, previousEncryptionKeys: [] })).toThrow(/not both/);
    expect(() => keyringOf({ previousEncryptionKeys: [older] })).toThrow(/without a current key/);
    expect(() => keyringOf({ encryptionKeyFile: join(file, 'nope'), previousEncryptionKeys: [] })).toThrow(/cannot be read/);
    expect(keyringOf({ previousEncryptionKeys: [] })).toBeUndefined();
  });
});

describe('without a key', () => {
  it('stores secrets as given; one that would read as encrypted or escaped is escaped, and reads back as given', () => {
    expect(sealSecret('s3cret', ROW)).toBe('s3cret');
    for (const odd of ['enc:v1:deadbeef:x:y:z', 'raw:abc']) {
      const stored = sealSecret(odd, ROW) as string;
      expect(stored).toBe(`raw:${odd}`);
      expect(openSecret(stored, ROW)).toBe(odd);
    }
    expect(openSecret('s3cret', ROW)).toBe('s3cret');
  });
});
