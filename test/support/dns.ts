/**
 * An authoritative-only DNS server for tests, on loopback UDP and TCP at the same port, answering from
 * a table the test fills with set(). Point a resolver at it with `resolver.setServers([dns.address])`.
 *
 * Answers: the records set for the name (case-insensitive, trailing dot ignored; TTL 0); NOERROR with no
 * answer (ENODATA in node:dns) when the name is known but has no records of the asked type; NXDOMAIN
 * (ENOTFOUND) for unknown names. A UDP answer over 512 bytes is truncated (TC bit), so the client
 * retries over TCP, as real resolvers do. No EDNS, no recursion, no compression beyond the question name.
 */
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import { ipToBytes } from './ip.ts';

export interface DnsRecords {
  A?: string[];
  AAAA?: string[];
  /**
   * Each record is a list of strings (as node:dns resolveTxt returns them), sent as UTF-8 bytes; strings
   * over 255 bytes are split. Note that node:dns decodes TXT bytes as latin1, so non-ASCII text comes back
   * as Buffer.from(s, 'utf8').toString('latin1').
   */
  TXT?: string[][];
}

export interface TestDns {
  /** '127.0.0.1:PORT', for dns.Resolver#setServers. */
  address: string;
  /** Sets (replaces) the records of a name. set(name, {}) makes it exist with no records. */
  set(name: string, records: DnsRecords): void;
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_TXT = 16;
const TYPE_AAAA = 28;
const CLASS_IN = 1;
const RCODE_FORMERR = 1;
const RCODE_NXDOMAIN = 3;
const RCODE_NOTIMP = 4;
const UDP_LIMIT = 512;

export async function startTestDns(): Promise<TestDns> {
  const zone = new Map<string, DnsRecords>();
  const answer = (query: Buffer, maxSize: number) => buildResponse(query, zone, maxSize);

  let udp: UdpSocket | undefined;
  let tcp: Server | undefined;
  const connections = new Set<Socket>();
  for (let attempt = 0; !tcp; attempt++) {
    udp = createSocket('udp4');
    const socket = udp;
    const port = await new Promise<number>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => {
        socket.off('error', reject);
        resolve(socket.address().port);
      });
    });
    socket.on('message', (message: Buffer, remote: RemoteInfo) => {
      const response = answer(message, UDP_LIMIT);
      if (response) socket.send(response, remote.port, remote.address);
    });
    socket.on('error', () => {});
    try {
      tcp = await listenTcp(port, answer, connections);
    } catch (error) {
      socket.close();
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 10) throw error;
    }
  }
  const udpSocket = udp as UdpSocket;
  const tcpServer = tcp;
  const port = udpSocket.address().port;

  return {
    address: `127.0.0.1:${port}`,
    set(name, records) {
      for (const ip of records.A ?? []) if (ipToBytes(ip).length !== 4) throw new Error(`not an IPv4 address: ${ip}`);
      for (const ip of records.AAAA ?? []) if (ipToBytes(ip).length !== 16) throw new Error(`not an IPv6 address: ${ip}`);
      zone.set(normalize(name), records);
    },
    async close() {
      for (const c of connections) c.destroy();
      await Promise.all([new Promise<void>((resolve) => udpSocket.close(() => resolve())), new Promise<void>((resolve) => tcpServer.close(() => resolve()))]);
    },
  };
}

function listenTcp(port: number, answer: (query: Buffer, maxSize: number) => Buffer | undefined, connections: Set<Socket>): Promise<Server> {
  const server = createServer((socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      // Each message is preceded by its length in two bytes.
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const response = answer(buffered.subarray(2, 2 + length), 65535);
        buffered = buffered.subarray(2 + length);
        if (response) {
          const prefix = Buffer.alloc(2);
          prefix.writeUInt16BE(response.length);
          socket.write(Buffer.concat([prefix, response]));
        }
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

function normalize(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

/** The response to one query message, or undefined when it is too broken to answer at all. */
function buildResponse(query: Buffer, zone: Map<string, DnsRecords>, maxSize: number): Buffer | undefined {
  if (query.length < 12) return undefined;
  const id = query.readUInt16BE(0);
  const flags = query.readUInt16BE(2);
  if (flags & 0x8000) return undefined; // a response, not a query
  const opcode = (flags >> 11) & 0x0f;
  const rd = flags & 0x0100;
  const header = (rcode: number, qdcount: number, ancount: number, truncated = false) => {
    const h = Buffer.alloc(12);
    h.writeUInt16BE(id, 0);
    // QR, opcode echoed, AA, TC, RD echoed, RA (so resolvers do not complain), rcode
    h.writeUInt16BE(0x8000 | (opcode << 11) | 0x0400 | (truncated ? 0x0200 : 0) | rd | 0x0080 | rcode, 2);
    h.writeUInt16BE(qdcount, 4);
    h.writeUInt16BE(ancount, 6);
    return h;
  };
  if (opcode !== 0) return header(RCODE_NOTIMP, 0, 0);
  if (query.readUInt16BE(4) !== 1) return header(RCODE_FORMERR, 0, 0);

  // The question: labels, then type and class. Queries do not use compression.
  const labels: string[] = [];
  let offset = 12;
  for (;;) {
    const length = query[offset];
    if (length === undefined || length > 63) return header(RCODE_FORMERR, 0, 0);
    offset += 1;
    if (length === 0) break;
    if (offset + length > query.length) return header(RCODE_FORMERR, 0, 0);
    labels.push(query.toString('latin1', offset, offset + length));
    offset += length;
  }
  if (offset + 4 > query.length) return header(RCODE_FORMERR, 0, 0);
  const qtype = query.readUInt16BE(offset);
  const qclass = query.readUInt16BE(offset + 2);
  const question = query.subarray(12, offset + 4); // echoed byte for byte (keeps any 0x20 case mixing)

  const records = zone.get(normalize(labels.join('.')));
  if (!records) return Buffer.concat([header(RCODE_NXDOMAIN, 1, 0), question]);

  const rdatas: Buffer[] = [];
  if (qclass === CLASS_IN) {
    if (qtype === TYPE_A) for (const ip of records.A ?? []) rdatas.push(ipToBytes(ip));
    if (qtype === TYPE_AAAA) for (const ip of records.AAAA ?? []) rdatas.push(ipToBytes(ip));
    if (qtype === TYPE_TXT) for (const txt of records.TXT ?? []) rdatas.push(txtData(txt));
  }
  const answers = rdatas.map((rdata) => {
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // pointer to the question's name
    rr.writeUInt16BE(qtype, 2);
    rr.writeUInt16BE(CLASS_IN, 4);
    rr.writeUInt32BE(0, 6); // TTL
    rr.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([rr, rdata]);
  });
  const response = Buffer.concat([header(0, 1, answers.length), question, ...answers]);
  if (response.length > maxSize) return Buffer.concat([header(0, 1, 0, true), question]);
  return response;
}

/** TXT RDATA: character-strings of at most 255 bytes, each preceded by its length. */
function txtData(strings: string[]): Buffer {
  const parts: Buffer[] = [];
  for (const s of strings) {
    const bytes = Buffer.from(s, 'utf8');
    if (bytes.length === 0) parts.push(Buffer.from([0]));
    for (let i = 0; i < bytes.length; i += 255) {
      const piece = bytes.subarray(i, i + 255);
      parts.push(Buffer.from([piece.length]), piece);
    }
  }
  if (parts.length === 0) parts.push(Buffer.from([0])); // a TXT record holds at least one string
  return Buffer.concat(parts);
}
