/**
 * Callback domains (docs/reference/api.md#callback-domains): registration with a verification token, proof of control (an
 * HTTPS file or a DNS TXT record), listing and removal. The host must match exactly: a subdomain is a
 * domain of its own, verified on its own.
 */

import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { ApiError, invalidData, notFound, truncate } from '../domain/errors.ts';
import { unixSeconds } from '../domain/time.ts';
import { destinationOf } from '../store/callbacks.ts';
import { allowNetworksOf } from '../store/customers.ts';
import * as store from '../store/domains.ts';
import type { Caller, Common } from './context.ts';
import { chargeInTransaction } from './credits.ts';

/** Where the HTTPS proof is served, on the domain itself. */
export const VERIFICATION_FILE_PATH = '/.well-known/blockchain-events-verification.txt';
/** Prefix of the DNS name that holds the TXT proof: `_blockchain-events.{domain}`. */
export const VERIFICATION_TXT_PREFIX = '_blockchain-events.';

export function domainItem(d: store.CallbackDomain) {
  return {
    domain: d.domain,
    isVerified: d.verifiedAt !== null,
    verifiedTimestamp: d.verifiedAt ? unixSeconds(d.verifiedAt) : null,
    verificationToken: d.verificationToken,
    createdTimestamp: unixSeconds(d.createdAt),
  };
}

/** The item of register and verify: the domain and the two ways to prove control of it. */
export function domainItemWithProofs(d: store.CallbackDomain) {
  return {
    ...domainItem(d),
    verification: {
      file: { url: `https://${d.domain}${VERIFICATION_FILE_PATH}`, content: d.verificationToken },
      dnsTxt: { name: `${VERIFICATION_TXT_PREFIX}${d.domain}`, value: d.verificationToken },
    },
  };
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** A last label that URL parsers read as a number, making the whole host an IPv4 address (e.g. `127.1`). */
const NUMERIC_LABEL = /^(?:\d+|0x[0-9a-f]*)$/;

/**
 * A callback domain as the client gave it -> the exact host name it stands for: lower case, and in
 * its ASCII (punycode) form, which is how the host of a callbackUrl is compared. Anything that is not
 * a bare host name (scheme, path, port, user, IP literal, trailing dot) is refused with a sentence
 * saying what to give instead.
 */
export function parseDomain(value: string): { domain: string } | { error: string } {
  const shown = truncate(value);
  const example = 'a host name such as hooks.example.com';
  if (value.length === 0) return { error: `The domain must not be empty; give ${example}.` };
  if (/\s/.test(value)) return { error: `The domain '${shown}' contains white space; give ${example}.` };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    return { error: `The domain '${shown}' has a scheme; give the host name only, without 'https://' or a path (e.g. hooks.example.com).` };
  }
  const bare = value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1) : value;
  if (isIP(bare)) {
    return { error: `The domain '${shown}' is an IP address; callback domains must be host names (e.g. hooks.example.com), and so must callbackUrl hosts.` };
  }
  if (/[/?#\\]/.test(value)) return { error: `The domain '${shown}' has a path or query; give the host name only (e.g. hooks.example.com).` };
  if (value.includes('@')) return { error: `The domain '${shown}' contains '@'; give the host name only, without a user name.` };
  if (value.includes(':')) {
    return { error: `The domain '${shown}' has a port; give the host name only. A verified host may be called back on any port.` };
  }
  if (value.endsWith('.')) return { error: `The domain '${shown}' ends with a dot; give it without the trailing dot.` };
  const domain = domainToASCII(value.toLowerCase());
  const invalid = {
    error: `The domain '${shown}' is not a valid host name: give dot-separated labels of 1 to 63 letters, digits or hyphens (not at either end of a label), such as hooks.example.com.`,
  };
  if (!domain || domain.length > 253) return domain ? { error: `The domain '${shown}' is longer than 253 characters.` } : invalid;
  const labels = domain.split('.');
  if (!labels.every((label) => LABEL.test(label))) return invalid;
  if (NUMERIC_LABEL.test(labels[labels.length - 1] as string)) {
    return { error: `The domain '${shown}' reads as an IP address (its last label is a number); give a host name such as hooks.example.com.` };
  }
  // The parse a callbackUrl's host goes through must give the very same name, or it could never match.
  let host: string;
  try {
    host = new URL(`https://${domain}/`).hostname;
  } catch {
    return invalid;
  }
  return host === domain ? { domain } : invalid;
}

/** The stored form of a domain in a path: lower case, punycode for international names. */
function domainKey(value: string): string {
  const lower = value.toLowerCase();
  return /[^\p{ASCII}]/u.test(lower) ? domainToASCII(lower) || lower : lower;
}

export async function registerDomain(common: Common, caller: Caller, value: string) {
  const parsed = parseDomain(value);
  if ('error' in parsed) throw invalidData([{ attribute: 'domain', message: parsed.error }]);
  const customerId = caller.owner.customerId;
  // One transaction: registered and paid, or neither (a 402 leaves nothing behind). Registering a
  // domain already registered returns it as it is, with the same token.
  return await common.db.transaction('domains:register', async (tx) => {
    const domain = await store.upsertDomain(tx, customerId, parsed.domain, null);
    return { value: domain, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint)) };
  });
}

type Proof = { proven: true } | { proven: false; found: string };

/** Text of a proof that did not match, made safe to quote in a message: one line, at most 40 characters. */
function quote(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is being removed
  const line = text.replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
  return `'${line.length > 40 ? `${line.slice(0, 40)}…` : line}'`;
}

function fileUrl(common: Common, domain: string): string {
  const port = common.config.domainVerificationPort;
  return `https://${domain}${port === 443 ? '' : `:${port}`}${VERIFICATION_FILE_PATH}`;
}

/**
 * The HTTPS file, fetched through the guarded client: private addresses are refused unless allow-listed (the
 * operator's list or the customer's own). A failure is told to the customer in generic words; the details
 * (addresses, certificate names) go to the operator's log with the requestId.
 */
async function proveByFile(common: Common, caller: Caller, domain: string, token: string): Promise<Proof> {
  const url = fileUrl(common, domain);
  const allowNetworks = await allowNetworksOf(common.db, caller.owner.customerId);
  const r = await common.sender.send('GET', url, destinationOf(url), undefined, { accept: 'text/plain' }, { allowNetworks, timeoutCoversWait: true });
  if (r.errorDetail) {
    common.logger.warn(
      { requestId: caller.requestId, domain, errorClass: r.errorClass, detail: r.errorDetail },
      'domain verification could not fetch the file',
    );
  }
  if (r.httpStatus === null) return { proven: false, found: `${url} could not be reached: ${r.errorClass}: ${r.errorMessage}` };
  if (r.httpStatus < 200 || r.httpStatus > 299) {
    const redirect = r.httpStatus >= 300 && r.httpStatus < 400 ? ' (redirects are not followed: serve the file at this very URL)' : '';
    return { proven: false, found: `${url} answered ${r.httpStatus}${redirect}` };
  }
  const body = r.responseBody ?? '';
  if (body.split(/\r?\n/).some((line) => line.trim() === token)) return { proven: true };
  if (body.trim() === '') return { proven: false, found: `${url} answered ${r.httpStatus} with an empty body instead of the token` };
  return { proven: false, found: `${url} contained ${quote(body)} instead of the token` };
}

/** The DNS TXT record, through the configured DNS servers (the system's when none are). */
async function proveByDns(common: Common, domain: string, token: string): Promise<Proof> {
  const name = `${VERIFICATION_TXT_PREFIX}${domain}`;
  const resolver = new Resolver({ timeout: common.config.delivery.timeoutMs, tries: 2 });
  if (common.config.delivery.dnsServers.length > 0) resolver.setServers(common.config.delivery.dnsServers);
  let values: string[];
  try {
    values = (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    if (e.code === 'ENOTFOUND' || e.code === 'ENODATA') return { proven: false, found: `no TXT record at ${name}` };
    if (e.code === 'ETIMEOUT') return { proven: false, found: `the DNS lookup of TXT records at ${name} timed out` };
    return { proven: false, found: `the DNS lookup of TXT records at ${name} failed: ${e.code ?? e.message}` };
  }
  if (values.some((v) => v.trim() === token)) return { proven: true };
  if (values.length === 0) return { proven: false, found: `no TXT record at ${name}` };
  const shown = values.slice(0, 5).map(quote).join(', ');
  const more = values.length > 5 ? ` and ${values.length - 5} more` : '';
  return { proven: false, found: `TXT records at ${name}: ${shown}${more} — none is the token` };
}

/**
 * Proves control of a registered domain: the HTTPS file, then the DNS TXT record (both are asked at
 * once; the file wins when both prove it). Costs credits only when the domain ends up verified.
 */
export async function verifyDomain(common: Common, caller: Caller, value: string) {
  const customerId = caller.owner.customerId;
  const cost = BigInt(common.config.costs.walletsAndDomains);
  const domain = domainKey(value);
  const registered = await store.getDomain(common.db, customerId, domain);
  if (!registered) throw notFound('callback domain', value);
  if (registered.verifiedAt) return { value: registered, ...(await common.credits.charge(customerId, cost, caller.endpoint)) };

  const token = registered.verificationToken;
  const [file, dns] = await Promise.all([proveByFile(common, caller, domain, token), proveByDns(common, domain, token)]);
  if (!file.proven && !dns.proven) {
    const url = fileUrl(common, domain);
    throw new ApiError(
      'domain_verification_failed',
      `Control of '${domain}' could not be proven. Serve the token '${token}' at ${url} (HTTPS, status 200, no redirect), or publish it as a TXT record at ${VERIFICATION_TXT_PREFIX}${domain}, then call verify again.`,
      [
        { attribute: 'file', message: file.found },
        { attribute: 'dnsTxt', message: dns.found },
      ],
    );
  }
  const verifiedBy = file.proven ? 'https-file' : 'dns-txt';
  const result = await common.db.transaction('domains:verify', async (tx) => {
    const verified = await store.markVerified(tx, customerId, domain, token, verifiedBy);
    if (!verified) {
      throw new ApiError(
        'domain_verification_failed',
        `The domain '${domain}' was removed or registered again (with a new token) while it was being verified. Register it, publish its token, and call verify again.`,
      );
    }
    return { value: verified, ...(await chargeInTransaction(tx, customerId, cost, caller.endpoint)) };
  });
  // This process's cache learns at once; the others through the database's change announcement.
  common.access.forgetCustomer(customerId);
  return result;
}

export async function listDomains(common: Common, caller: Caller, page: { limit: number; offset: number }) {
  const result = await store.listDomains(common.db, caller.owner.customerId, page);
  return { value: result, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint)) };
}

export async function deleteDomain(common: Common, caller: Caller, domain: string) {
  const customerId = caller.owner.customerId;
  const result = await common.db.transaction('domains:delete', async (tx) => {
    const deleted = await store.deleteDomain(tx, customerId, domain.toLowerCase());
    if (!deleted) throw notFound('callback domain', domain);
    return { value: deleted, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint)) };
  });
  // As after a verification: this process's cache learns at once (a test callback right after must see the domain gone).
  common.access.forgetCustomer(customerId);
  return result;
}
