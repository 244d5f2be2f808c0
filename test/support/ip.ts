/** IP address text to network-order bytes, for DNS answers (dns.ts); certificates use it too (src/dev/certificate-authority.ts). */
export { ipToBytes } from '../../src/dev/certificate-authority.ts';
