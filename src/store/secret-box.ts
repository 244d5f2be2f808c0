/**
 * Secrets at rest (docs/operations/secrets-at-rest.md): the callback secrets (subscriptions.callback_secret_key and
 * previous_callback_secret_key) are stored encrypted when the operator gives an encryption key, with
 * AES-256-GCM, as `enc:v1:<keyId>:<iv>:<tag>:<ciphertext>` (base64url). The key id (8 hex characters of
 * the key's SHA-256) names the key a row was encrypted with, so older keys keep decrypting their rows
 * until `herald secrets rotate-key` has encrypted every row with the current one. The subscription's id
 * is the additional authenticated data: a sealed secret copied to another row does not open there.
 *
 * Without a key, secrets are stored as they were given, as before; a value that would read as sealed
 * (or as escaped) is stored behind `raw:` (migration 042 escaped the existing ones), so every stored
 * value has one meaning, whether a key is set or not.
 *
 * The keyring is per process, set once by openDatabase from the configuration (every process that
 * opens the store: serve, the CLI): the store's functions read and write secrets wherever they are
 * called from, and threading the keys through every caller of them would change dozens of signatures
 * for one setting. Decrypting costs a few microseconds per secret (the key object is made once):
 * nothing against a callback's POST, so the delivery worker decrypts each claimed row.
 */
import { createCipheriv, createDecipheriv, createHash, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

const SEALED = 'enc:v1:';
const ESCAPED = 'raw:';
const IV_BYTES = 12;
const KEY_BYTES = 32;

export interface SecretKey {
  /** 8 hex characters of the key's SHA-256: stored with each row it encrypted. */
  id: string;
  key: KeyObject;
}

export interface SecretKeyring {
  /** Encrypts every secret written. */
  current: SecretKey;
  /** Every key that decrypts, by id (the current one included). */
  byId: Map<string, SecretKey>;
}

function parseKey(text: string, where: string): SecretKey {
  const trimmed = text.trim();
  const bytes = Buffer.from(trimmed, 'base64');
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed) || bytes.length !== KEY_BYTES) {
    throw new Error(`${where} must be ${KEY_BYTES} random bytes in base64 (make one with: openssl rand -base64 32)`);
  }
  return { id: createHash('sha256').update(bytes).digest('hex').slice(0, 8), key: createSecretKey(bytes) };
}

/** Where the keys come from: the configuration's `secrets` (src/config/config.ts) has this shape. */
export interface KeySources {
  encryptionKey?: string;
  encryptionKeyFile?: string;
  previousEncryptionKeys: string[];
}

/** The keys the configuration names; undefined without any (secrets are then stored as given). Throws on a malformed key. */
export function keyringOf(secrets: KeySources): SecretKeyring | undefined {
  if (secrets.encryptionKey !== undefined && secrets.encryptionKeyFile !== undefined) {
    throw new Error('give encryptionKey or encryptionKeyFile, not both');
  }
  let lines: { text: string; where: string }[] = [];
  if (secrets.encryptionKey !== undefined) lines.push({ text: secrets.encryptionKey, where: 'encryptionKey' });
  if (secrets.encryptionKeyFile !== undefined) {
    let content: string;
    try {
      content = readFileSync(secrets.encryptionKeyFile, 'utf8');
    } catch (error) {
      throw new Error(`encryptionKeyFile ${secrets.encryptionKeyFile} cannot be read: ${(error as Error).message}`);
    }
    lines = content
      .split('\n')
      .map((line, i) => ({ text: line.trim(), where: `line ${i + 1} of ${secrets.encryptionKeyFile}` }))
      .filter((line) => line.text !== '' && !line.text.startsWith('#'));
    if (lines.length === 0) throw new Error(`encryptionKeyFile ${secrets.encryptionKeyFile} holds no key`);
  }
  if (lines.length === 0) {
    if (secrets.previousEncryptionKeys.length > 0) throw new Error('previousEncryptionKeys given without a current key (encryptionKey or encryptionKeyFile)');
    return undefined;
  }
  lines.push(...secrets.previousEncryptionKeys.map((text, i) => ({ text, where: `previousEncryptionKeys[${i}]` })));
  const keys = lines.map((line) => parseKey(line.text, line.where));
  return { current: keys[0] as SecretKey, byId: new Map(keys.map((k) => [k.id, k])) };
}

let keyring: SecretKeyring | undefined;

/** Sets this process's keys (openDatabase does, from the configuration). */
export function useKeyring(keys: SecretKeyring | undefined): void {
  keyring = keys;
}

/** The id of the key new secrets are encrypted with; undefined when secrets are stored as given. */
export function currentKeyId(): string | undefined {
  return keyring?.current.id;
}

/** What to store for the secret `plain` of subscription `rowId`: sealed with the current key, or as given. */
export function sealSecret(plain: string | null, rowId: string): string | null {
  if (plain === null) return null;
  if (!keyring) return plain.startsWith(SEALED) || plain.startsWith(ESCAPED) ? `${ESCAPED}${plain}` : plain;
  const { current } = keyring;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', current.key, iv);
  cipher.setAAD(Buffer.from(rowId, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `${SEALED}${current.id}:${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${ciphertext.toString('base64url')}`;
}

/** The secret a stored value holds (decrypted when sealed). Throws when its key is not configured or it was altered. */
export function openSecret(stored: string | null, rowId: string): string | null {
  if (stored === null) return null;
  if (stored.startsWith(ESCAPED)) return stored.slice(ESCAPED.length);
  if (!stored.startsWith(SEALED)) return stored;
  const [keyId, iv, tag, ciphertext] = stored.slice(SEALED.length).split(':');
  const key = keyId === undefined ? undefined : keyring?.byId.get(keyId);
  if (!key) {
    throw new Error(
      `a callback secret is encrypted with key ${keyId}, which this process does not have: give it in secrets.encryptionKey, secrets.encryptionKeyFile or secrets.previousEncryptionKeys`,
    );
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(iv ?? '', 'base64url'));
    decipher.setAAD(Buffer.from(rowId, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag ?? '', 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext ?? '', 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new Error(`the callback secret of subscription ${rowId} does not decrypt with key ${keyId}: it was altered or belongs to another row`);
  }
}

/** Whether a stored value is already what sealSecret would store now (encrypted with the current key; or, without keys, plain). */
export function isCurrent(stored: string | null): boolean {
  if (stored === null) return true;
  if (!keyring) return !stored.startsWith(SEALED);
  return stored.startsWith(`${SEALED}${keyring.current.id}:`);
}
