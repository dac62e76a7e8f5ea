import { readU16LE, readU32LE, readU64LE, writeU16LE, writeU32LE, writeU64LE } from '../core/bytes.js';
import { checkArg } from '../core/errors.js';
import { decoded, type DecodeResult, rejected } from '../core/result.js';
import { cryptoRandom, type RandomSource } from '../core/random.js';
import { nobleCrypto } from '../crypto/noble.js';
import { type CryptoProvider, TAG_BYTES } from '../crypto/provider.js';

/**
 * netcode 1.02's wire formats (docs/netcode.md): connect tokens, the challenge token and the seven
 * packet types, each byte as the standard and the reference C implementation write it. All
 * integers little-endian; u64 fields are `bigint`. Decoders never throw on bad bytes: they return
 * `undefined` or a drop reason.
 */

/** "NETCODE 1.02" and a zero byte: the version info in tokens, requests and every packet's AD. */
export const NETCODE_VERSION_INFO: Uint8Array = Uint8Array.from([...'NETCODE 1.02'].map((c) => c.charCodeAt(0)).concat(0));
/** Bytes of the version info. */
export const VERSION_INFO_BYTES = 13;
/** Bytes of a connect token (public part, zero-padded). */
export const CONNECT_TOKEN_BYTES = 2048;
/** Bytes of the encrypted private part of a connect token (1008 encrypted + 16-byte tag). */
export const CONNECT_TOKEN_PRIVATE_BYTES = 1024;
/** Bytes of a challenge token (284 encrypted + 16-byte tag). */
export const CHALLENGE_TOKEN_BYTES = 300;
/** Bytes of a connection request packet, exactly. */
export const REQUEST_BYTES = 1078;
/** Largest payload of a payload packet, bytes. */
export const MAX_PAYLOAD_BYTES = 1200;
/** Bytes of every key (token private key, client-to-server, server-to-client, challenge). */
export const KEY_BYTES = 32;
/** Bytes of the user data a token carries to the server. */
export const USER_DATA_BYTES = 256;
/** Bytes of a connect token's nonce (XChaCha20). */
export const TOKEN_NONCE_BYTES = 24;
/** Most server addresses in a connect token. */
export const MAX_SERVERS_PER_CONNECT = 32;
/** Packets remembered by the replay protection. */
export const REPLAY_WINDOW = 256;
/** Smallest encrypted packet: prefix, one sequence byte, tag. */
export const MIN_PACKET_BYTES = 1 + 1 + TAG_BYTES;

/** Packet types (the low 4 bits of the prefix byte). */
export const NetcodePacketType = { Request: 0, Denied: 1, Challenge: 2, Response: 3, KeepAlive: 4, Payload: 5, Disconnect: 6 } as const;

/** Body size of each encrypted type after decryption (payload: 1..1200). */
const BODY_BYTES = [-1, 0, 8 + CHALLENGE_TOKEN_BYTES, 8 + CHALLENGE_TOKEN_BYTES, 8, -1, 0];

/** Why a packet was dropped (stable names, counted by the server and client). */
export type NetcodeDropReason =
  | 'size' // shorter than the smallest packet, or a request not 1078 bytes
  | 'type' // type ≥ 7 (readPacket), or a type or addressed kind this side does not accept
  | 'sequence-bytes' // sequence length not 1..8, or the packet too short for it
  | 'replay' // sequence seen already, or older than the window
  | 'decrypt' // the tag did not verify (wrong key, changed byte, wrong protocol id)
  | 'body-size' // decrypted body of the wrong size for its type
  | 'version' // request: version info not "NETCODE 1.02"
  | 'protocol' // request: another protocol id
  | 'expired' // request: token expired
  | 'token'; // request: the private token did not decrypt or parse

/**
 * The negative code `readPacket` returns for each drop reason (a hot-path decoder, core/result.ts);
 * `netcodeDropReason` names it.
 */
export const NetcodeDrop = {
  size: -1,
  type: -2,
  sequenceBytes: -3,
  replay: -4,
  decrypt: -5,
  bodySize: -6,
  version: -7,
  protocol: -8,
  expired: -9,
  token: -10,
} as const;

const DROP_REASONS: readonly NetcodeDropReason[] = [
  'size', 'type', 'sequence-bytes', 'replay', 'decrypt', 'body-size', 'version', 'protocol', 'expired', 'token',
];

/** The name of `readPacket`'s negative code `n` (one of `NetcodeDrop`). */
export function netcodeDropReason(n: number): NetcodeDropReason {
  return DROP_REASONS[-n - 1]!;
}

/** An address in a connect token. */
export interface NetcodeAddress {
  family: 4 | 6;
  /** Dotted IPv4, or IPv6 in the form `addressToKey` puts in brackets (`::1`, `2001:db8::5`). */
  host: string;
  port: number;
}

// ---------------------------------------------------------------------------------------------
// addresses

/** The address string gamewire's drivers use for `a`: `"1.2.3.4:5"`, `"[::1]:5"` (as `addressKey`). */
export function addressToKey(a: NetcodeAddress): string {
  return a.family === 6 ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/**
 * Parse `"ip:port"` or `"[v6]:port"` (IP literals only; IPv4 parts without leading zeros, as inet_pton
 * reads them), or `undefined`.
 */
export function parseAddress(text: string): DecodeResult<NetcodeAddress> {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(text) ?? /^((?:0|[1-9]\d{0,2})(?:\.(?:0|[1-9]\d{0,2})){3}):(\d{1,5})$/.exec(text);
  if (m === null) return rejected('bad-field');
  const port = Number(m[2]);
  if (port > 65535) return rejected('out-of-range');
  const v6 = text.startsWith('[');
  if (v6 ? ipv6Groups(m[1]!) === undefined : ipv4Bytes(m[1]!) === undefined) return rejected('bad-field');
  return decoded({ family: v6 ? 6 : 4, host: v6 ? formatIpv6(ipv6Groups(m[1]!)!) : m[1]!, port }, text.length);
}

function ipv4Bytes(host: string): number[] | undefined {
  const parts = host.split('.').map(Number);
  return parts.length === 4 && parts.every((x) => Number.isInteger(x) && x >= 0 && x <= 255) ? parts : undefined;
}

function ipv6Groups(host: string): number[] | undefined {
  if (host.includes('.')) return undefined;
  const halves = host.split('::');
  if (halves.length > 2) return undefined;
  const part = (s: string): number[] | undefined => {
    if (s === '') return [];
    const g = s.split(':');
    if (!g.every((x) => /^[0-9a-fA-F]{1,4}$/.test(x))) return undefined;
    return g.map((x) => Number.parseInt(x, 16));
  };
  const a = part(halves[0]!);
  const b = halves.length === 2 ? part(halves[1]!) : [];
  if (a === undefined || b === undefined) return undefined;
  if (halves.length === 1) return a.length === 8 ? a : undefined;
  if (a.length + b.length > 7) return undefined;
  return [...a, ...new Array<number>(8 - a.length - b.length).fill(0), ...b];
}

/** RFC 5952 text of eight groups (longest zero run of two or more compressed). */
function formatIpv6(g: readonly number[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

function writeAddress(b: Uint8Array, o: number, a: NetcodeAddress): number {
  if (a.family === 4) {
    b[o] = 1;
    b.set(ipv4Bytes(a.host)!, o + 1);
    writeU16LE(b, o + 5, a.port);
    return o + 7;
  }
  b[o] = 2;
  const g = ipv6Groups(a.host)!;
  for (let i = 0; i < 8; i++) writeU16LE(b, o + 1 + 2 * i, g[i]!);
  writeU16LE(b, o + 17, a.port);
  return o + 19;
}

/** Read `count` addresses (1..32, types 1 and 2 only) from `b[o..end)`; the end offset, or −1. */
function readAddresses(b: Uint8Array, o: number, end: number, count: number, out: NetcodeAddress[]): number {
  if (count < 1 || count > MAX_SERVERS_PER_CONNECT) return -1;
  for (let i = 0; i < count; i++) {
    if (o >= end) return -1;
    const type = b[o];
    if (type === 1) {
      if (o + 7 > end) return -1;
      out.push({ family: 4, host: `${b[o + 1]}.${b[o + 2]}.${b[o + 3]}.${b[o + 4]}`, port: readU16LE(b, o + 5) });
      o += 7;
    } else if (type === 2) {
      if (o + 19 > end) return -1;
      const g: number[] = [];
      for (let k = 0; k < 8; k++) g.push(readU16LE(b, o + 1 + 2 * k));
      out.push({ family: 6, host: formatIpv6(g), port: readU16LE(b, o + 17) });
      o += 19;
    } else {
      return -1;
    }
  }
  return o;
}

function toAddress(a: string | NetcodeAddress): NetcodeAddress {
  if (typeof a !== 'string') {
    const p = parseAddress(addressToKey(a));
    checkArg(p.ok, `bad address ${JSON.stringify(a)}`);
    return (p as { value: NetcodeAddress }).value;
  }
  const p = parseAddress(a);
  checkArg(p.ok, `address '${a}' is not ip:port or [ipv6]:port`);
  return (p as { value: NetcodeAddress }).value;
}

// ---------------------------------------------------------------------------------------------
// Connect token

/** The private part of a connect token (what only the issuer and the servers can read). */
export interface ConnectTokenPrivate {
  clientId: bigint;
  /** Seconds of silence before either side drops the connection; negative: never (development only). */
  timeoutSeconds: number;
  /** The servers' own (internal) addresses; a server accepts the token only if it is listed. */
  serverAddresses: NetcodeAddress[];
  clientToServerKey: Uint8Array;
  serverToClientKey: Uint8Array;
  /** 256 bytes the issuer passes to the server (the client cannot read or change them). */
  userData: Uint8Array;
}

/** The public part of a connect token (what the client reads). */
export interface ConnectTokenPublic {
  protocolId: bigint;
  createTimestamp: bigint;
  expireTimestamp: bigint;
  nonce: Uint8Array;
  /** The encrypted private part (1024 bytes). */
  privateData: Uint8Array;
  timeoutSeconds: number;
  serverAddresses: NetcodeAddress[];
  clientToServerKey: Uint8Array;
  serverToClientKey: Uint8Array;
}

/** The private token's associated data: version info ‖ protocol id ‖ expire timestamp (29 bytes). */
function tokenAd(protocolId: bigint, expire: bigint): Uint8Array {
  const ad = new Uint8Array(VERSION_INFO_BYTES + 16);
  ad.set(NETCODE_VERSION_INFO);
  writeU64LE(ad, 13, protocolId);
  writeU64LE(ad, 21, expire);
  return ad;
}

/** The private token's plaintext, zero-padded to 1008 bytes. */
export function writePrivateToken(t: ConnectTokenPrivate): Uint8Array {
  const b = new Uint8Array(CONNECT_TOKEN_PRIVATE_BYTES - TAG_BYTES);
  writeU64LE(b, 0, t.clientId);
  writeU32LE(b, 8, t.timeoutSeconds >>> 0);
  writeU32LE(b, 12, t.serverAddresses.length);
  let o = 16;
  for (const a of t.serverAddresses) o = writeAddress(b, o, a);
  b.set(t.clientToServerKey, o);
  b.set(t.serverToClientKey, o + KEY_BYTES);
  b.set(t.userData, o + 2 * KEY_BYTES);
  return b;
}

/** Parse a private token's plaintext (1008 bytes): an edge decoder (`truncated`, `bad-field` for its addresses). */
export function readPrivateToken(b: Uint8Array): DecodeResult<ConnectTokenPrivate> {
  if (b.length < 16) return rejected('truncated');
  const serverAddresses: NetcodeAddress[] = [];
  const o = readAddresses(b, 16, b.length, readU32LE(b, 12), serverAddresses);
  if (o < 0) return rejected('bad-field');
  if (o + 2 * KEY_BYTES + USER_DATA_BYTES > b.length) return rejected('truncated');
  return decoded({
    clientId: readU64LE(b, 0),
    timeoutSeconds: readU32LE(b, 8) | 0,
    serverAddresses,
    clientToServerKey: b.slice(o, o + KEY_BYTES),
    serverToClientKey: b.slice(o + KEY_BYTES, o + 2 * KEY_BYTES),
    userData: b.slice(o + 2 * KEY_BYTES, o + 2 * KEY_BYTES + USER_DATA_BYTES),
  }, o + 2 * KEY_BYTES + USER_DATA_BYTES);
}

/** Encrypt a private token with XChaCha20-Poly1305 (AD: version info, protocol id, expire); 1024 bytes. */
export function encryptPrivateToken(
  t: ConnectTokenPrivate, protocolId: bigint, expireTimestamp: bigint, nonce: Uint8Array, key: Uint8Array, crypto: CryptoProvider = nobleCrypto,
): Uint8Array {
  const out = new Uint8Array(CONNECT_TOKEN_PRIVATE_BYTES);
  crypto.xseal(key, nonce, tokenAd(protocolId, expireTimestamp), writePrivateToken(t), out, 0);
  return out;
}

/**
 * Decrypt and parse an encrypted private token: an edge decoder (`bad-length`; `bad-checksum` when
 * the tag does not verify: wrong key, AD or nonce; then `readPrivateToken`'s codes).
 */
export function decryptPrivateToken(
  encrypted: Uint8Array, protocolId: bigint, expireTimestamp: bigint, nonce: Uint8Array, key: Uint8Array, crypto: CryptoProvider = nobleCrypto,
): DecodeResult<ConnectTokenPrivate> {
  if (encrypted.length !== CONNECT_TOKEN_PRIVATE_BYTES) return rejected('bad-length');
  const plain = new Uint8Array(CONNECT_TOKEN_PRIVATE_BYTES - TAG_BYTES);
  if (crypto.xopen(key, nonce, tokenAd(protocolId, expireTimestamp), encrypted, plain, 0) < 0) return rejected('bad-checksum');
  return readPrivateToken(plain);
}

/** Write a public connect token (2048 bytes, zero-padded). */
export function writeConnectToken(t: ConnectTokenPublic): Uint8Array {
  const b = new Uint8Array(CONNECT_TOKEN_BYTES);
  b.set(NETCODE_VERSION_INFO);
  writeU64LE(b, 13, t.protocolId);
  writeU64LE(b, 21, t.createTimestamp);
  writeU64LE(b, 29, t.expireTimestamp);
  b.set(t.nonce, 37);
  b.set(t.privateData, 61);
  let o = 61 + CONNECT_TOKEN_PRIVATE_BYTES;
  writeU32LE(b, o, t.timeoutSeconds >>> 0);
  writeU32LE(b, o + 4, t.serverAddresses.length);
  o += 8;
  for (const a of t.serverAddresses) o = writeAddress(b, o, a);
  b.set(t.clientToServerKey, o);
  b.set(t.serverToClientKey, o + KEY_BYTES);
  return b;
}

/**
 * Read a public connect token as a client does: exactly 2048 bytes (`bad-length`), the version info
 * (`bad-version`), 1..32 addresses of type 1 or 2 and create ≤ expire (`bad-field`). An edge
 * decoder; a rejection is the client's `invalid-token`.
 */
export function readConnectToken(b: Uint8Array): DecodeResult<ConnectTokenPublic> {
  if (!(b instanceof Uint8Array) || b.length !== CONNECT_TOKEN_BYTES) return rejected('bad-length');
  for (let i = 0; i < VERSION_INFO_BYTES; i++) if (b[i] !== NETCODE_VERSION_INFO[i]) return rejected('bad-version');
  const createTimestamp = readU64LE(b, 21);
  const expireTimestamp = readU64LE(b, 29);
  if (createTimestamp > expireTimestamp) return rejected('bad-field');
  let o = 61 + CONNECT_TOKEN_PRIVATE_BYTES;
  const timeoutSeconds = readU32LE(b, o) | 0;
  const serverAddresses: NetcodeAddress[] = [];
  o = readAddresses(b, o + 8, b.length, readU32LE(b, o + 4), serverAddresses);
  if (o < 0 || o + 2 * KEY_BYTES > b.length) return rejected('bad-field');
  return decoded({
    protocolId: readU64LE(b, 13), createTimestamp, expireTimestamp, nonce: b.slice(37, 61),
    privateData: b.slice(61, 61 + CONNECT_TOKEN_PRIVATE_BYTES), timeoutSeconds, serverAddresses,
    clientToServerKey: b.slice(o, o + KEY_BYTES), serverToClientKey: b.slice(o + KEY_BYTES, o + 2 * KEY_BYTES),
  }, CONNECT_TOKEN_BYTES);
}

/** Options of `generateConnectToken`. Times in seconds. */
export interface ConnectTokenOptions {
  /** The game's protocol id (u64). */
  protocolId: bigint;
  /** The 32-byte key shared with the servers. */
  privateKey: Uint8Array;
  /** The player's id (u64): one connection per id per server. */
  clientId: bigint;
  /** Servers the client may try, in order (1..32): `"ip:port"`, `"[v6]:port"` or `NetcodeAddress`. */
  serverAddresses: readonly (string | NetcodeAddress)[];
  /** The addresses the servers see on their own sockets, if not `serverAddresses` (same count and order). */
  internalAddresses?: readonly (string | NetcodeAddress)[];
  /** Unix time now, seconds (the create timestamp). */
  nowUnixSeconds: number;
  /** Seconds the token may be used for (negative: never expires, development only). */
  expireSeconds: number;
  /** Seconds of silence before a connection is dropped (negative: never, development only). Default 5 (netcode's examples). */
  timeoutSeconds?: number;
  /** Up to 256 bytes for the server (zero-padded). Default zeros. */
  userData?: Uint8Array;
  /** CSPRNG for the nonce and the two connection keys. Default `cryptoRandom`. */
  random?: RandomSource;
  /** AEAD provider. Default `nobleCrypto`. */
  crypto?: CryptoProvider;
}

/**
 * Make a 2048-byte connect token for a player (the web backend's job, after it authenticated the
 * player): random nonce and connection keys, the private part encrypted with `privateKey`. Throws
 * `invalid-argument` on bad options.
 */
export function generateConnectToken(o: ConnectTokenOptions): Uint8Array {
  checkArg(typeof o.protocolId === 'bigint' && o.protocolId >= 0n && o.protocolId < 1n << 64n, 'protocolId must be a u64 bigint');
  checkArg(o.privateKey instanceof Uint8Array && o.privateKey.length === KEY_BYTES, 'privateKey must be 32 bytes');
  checkArg(typeof o.clientId === 'bigint' && o.clientId >= 0n && o.clientId < 1n << 64n, 'clientId must be a u64 bigint');
  checkArg(Array.isArray(o.serverAddresses) && o.serverAddresses.length >= 1 && o.serverAddresses.length <= MAX_SERVERS_PER_CONNECT,
    `serverAddresses must list 1..${MAX_SERVERS_PER_CONNECT} addresses`);
  checkArg(o.internalAddresses === undefined || (Array.isArray(o.internalAddresses) && o.internalAddresses.length === o.serverAddresses.length),
    'internalAddresses must list as many addresses as serverAddresses');
  checkArg(Number.isInteger(o.nowUnixSeconds) && o.nowUnixSeconds >= 0, 'nowUnixSeconds must be an integer ≥ 0');
  checkArg(Number.isInteger(o.expireSeconds), 'expireSeconds must be an integer');
  const timeoutSeconds = o.timeoutSeconds ?? 5;
  checkArg(Number.isInteger(timeoutSeconds) && timeoutSeconds >= -(2 ** 31) && timeoutSeconds < 2 ** 31, 'timeoutSeconds must be an i32');
  checkArg(o.userData === undefined || (o.userData instanceof Uint8Array && o.userData.length <= USER_DATA_BYTES), 'userData must be at most 256 bytes');
  const random = o.random ?? cryptoRandom;
  const pub = o.serverAddresses.map(toAddress);
  const internal = (o.internalAddresses ?? o.serverAddresses).map(toAddress);
  const c2s = new Uint8Array(KEY_BYTES);
  const s2c = new Uint8Array(KEY_BYTES);
  const nonce = new Uint8Array(TOKEN_NONCE_BYTES);
  random(nonce);
  random(c2s);
  random(s2c);
  const userData = new Uint8Array(USER_DATA_BYTES);
  if (o.userData !== undefined) userData.set(o.userData);
  const create = BigInt(o.nowUnixSeconds);
  const expire = o.expireSeconds < 0 ? (1n << 64n) - 1n : create + BigInt(o.expireSeconds);
  const privateData = encryptPrivateToken(
    { clientId: o.clientId, timeoutSeconds, serverAddresses: internal, clientToServerKey: c2s, serverToClientKey: s2c, userData },
    o.protocolId, expire, nonce, o.privateKey, o.crypto ?? nobleCrypto,
  );
  return writeConnectToken({
    protocolId: o.protocolId, createTimestamp: create, expireTimestamp: expire, nonce, privateData, timeoutSeconds,
    serverAddresses: pub, clientToServerKey: c2s, serverToClientKey: s2c,
  });
}

// ---------------------------------------------------------------------------------------------
// Challenge token

function sequenceNonce(seq: bigint): Uint8Array {
  const n = new Uint8Array(12);
  writeU64LE(n, 4, seq);
  return n;
}

const NO_AD = new Uint8Array(0);

/**
 * Encrypt a challenge token (client id, user data) under the server's challenge key and `sequence`;
 * 300 bytes. `ad`: associated data (the standard's is none; gamewire's server binds the token to the
 * connect token that earned it by passing that token's 16-byte MAC, which only it checks).
 */
export function encryptChallengeToken(
  clientId: bigint, userData: Uint8Array, sequence: bigint, key: Uint8Array, crypto: CryptoProvider = nobleCrypto, ad: Uint8Array = NO_AD,
): Uint8Array {
  const plain = new Uint8Array(CHALLENGE_TOKEN_BYTES - TAG_BYTES);
  writeU64LE(plain, 0, clientId);
  plain.set(userData.subarray(0, USER_DATA_BYTES), 8);
  const out = new Uint8Array(CHALLENGE_TOKEN_BYTES);
  crypto.seal(key, sequenceNonce(sequence), ad, plain, out, 0);
  return out;
}

/**
 * Decrypt a challenge token sealed with associated data `ad` (default none): an edge decoder
 * (`bad-length`; `bad-checksum` when the tag does not verify).
 */
export function decryptChallengeToken(
  b: Uint8Array, sequence: bigint, key: Uint8Array, crypto: CryptoProvider = nobleCrypto, ad: Uint8Array = NO_AD,
): DecodeResult<{ clientId: bigint; userData: Uint8Array }> {
  if (b.length !== CHALLENGE_TOKEN_BYTES) return rejected('bad-length');
  const plain = new Uint8Array(CHALLENGE_TOKEN_BYTES - TAG_BYTES);
  if (crypto.open(key, sequenceNonce(sequence), ad, b, plain, 0) < 0) return rejected('bad-checksum');
  return decoded({ clientId: readU64LE(plain, 0), userData: plain.slice(8, 8 + USER_DATA_BYTES) }, CHALLENGE_TOKEN_BYTES);
}

// ---------------------------------------------------------------------------------------------
// Packets

/** Bytes the sequence takes on the wire: 1..8 (high zero bytes left out; 0 still takes one). */
export function sequenceBytes(seq: bigint): number {
  let n = 1;
  for (let v = seq >> 8n; v > 0n; v >>= 8n) n++;
  return n;
}

const adScratch = new Uint8Array(22);
let adProtocol: bigint | undefined;
const nonceScratch = new Uint8Array(12);

/** A packet's associated data: version info ‖ protocol id ‖ prefix byte (22 bytes; the first 21 rewritten only when the protocol id changes). */
function packetAd(protocolId: bigint, prefix: number): Uint8Array {
  if (protocolId !== adProtocol) {
    adScratch.set(NETCODE_VERSION_INFO);
    writeU64LE(adScratch, 13, protocolId);
    adProtocol = protocolId;
  }
  adScratch[21] = prefix;
  return adScratch;
}

/** The nonce of a packet: 4 zero bytes ‖ its sequence u64, given as two 32-bit halves. */
function packetNonce(lo: number, hi: number): Uint8Array {
  writeU32LE(nonceScratch, 4, lo);
  writeU32LE(nonceScratch, 8, hi);
  return nonceScratch;
}

/** Bytes a sequence given as two 32-bit halves takes on the wire (1..8). */
function sequenceLength(lo: number, hi: number): number {
  let n = 1;
  if (hi !== 0) for (n = 5; n < 8 && hi >>> (8 * (n - 4)) !== 0;) n++;
  else while (n < 4 && lo >>> (8 * n) !== 0) n++;
  return n;
}

/** Write the `n` low bytes of a sequence (two 32-bit halves) at `out[o..]`, low byte first. */
function writeSequence(out: Uint8Array, o: number, n: number, lo: number, hi: number): void {
  for (let i = 0; i < n; i++) out[o + i] = i < 4 ? (lo >>> (8 * i)) & 0xff : (hi >>> (8 * (i - 4))) & 0xff;
}

/**
 * Write an encrypted packet (types 1..6): prefix byte `(sequence bytes << 4) | type`, the sequence,
 * then `body` sealed with ChaCha20-Poly1305-IETF (nonce 4 zero bytes ‖ sequence u64; AD version
 * info ‖ protocol id ‖ prefix). Returns the packet's length. `out` must hold body + 25 bytes.
 */
export function writePacket(
  out: Uint8Array, type: number, sequence: bigint, body: Uint8Array, protocolId: bigint, key: Uint8Array, crypto: CryptoProvider,
): number {
  const lo = Number(sequence & 0xffffffffn);
  const hi = Number(sequence >> 32n);
  const n = sequenceLength(lo, hi);
  const prefix = (n << 4) | type;
  out[0] = prefix;
  writeSequence(out, 1, n, lo, hi);
  return 1 + n + crypto.seal(key, packetNonce(lo, hi), packetAd(protocolId, prefix), body, out, 1 + n);
}

/** A connection request (1078 bytes, not encrypted) for `token`. */
export function writeRequestPacket(out: Uint8Array, token: ConnectTokenPublic): number {
  out[0] = NetcodePacketType.Request;
  out.set(NETCODE_VERSION_INFO, 1);
  writeU64LE(out, 14, token.protocolId);
  writeU64LE(out, 22, token.expireTimestamp);
  out.set(token.nonce, 30);
  out.set(token.privateData, 54);
  return REQUEST_BYTES;
}

/**
 * A decrypted packet as `readPacket` leaves it in the caller's struct: its type, sequence and body
 * (a view of the `out` buffer given to `readPacket`). Overwritten by the next read into it.
 */
export interface NetcodePacket {
  type: number;
  sequence: bigint;
  body: Uint8Array;
}

/** A fresh struct for `readPacket` to read into (reuse it for every packet). */
export function newNetcodePacket(): NetcodePacket {
  return { type: 0, sequence: 0n, body: new Uint8Array(0) };
}

/**
 * First sequence of the packets that go over a connection's second transport (gamewire's extension,
 * docs/netcode.md "the block lane on a WebSocket of its own"): 2^62. Each end numbers those from
 * here, apart from its other packets (from 0), and the other end keeps a second replay window for
 * them, so neither transport's packets make the other's look old and no nonce repeats. Below the
 * server's packets outside a connection (from ≥ 2^63).
 */
export const BULK_SEQUENCE_BASE = 1n << 62n;

/** One 256-entry window: `ReplayProtection`'s own, and the one it keeps for the block lane's transport. */
class ReplayWindow {
  private newest = 0n;
  private readonly bits = new Uint32Array(REPLAY_WINDOW / 32);

  /** Forget everything (a new connection). */
  reset(): void {
    this.newest = 0n;
    this.bits.fill(0);
  }

  /** True if `seq` must be dropped. */
  alreadyReceived(seq: bigint): boolean {
    if (seq + BigInt(REPLAY_WINDOW) <= this.newest) return true;
    if (seq > this.newest) return false;
    const i = Number(seq & BigInt(REPLAY_WINDOW - 1));
    return ((this.bits[i >>> 5]! >>> (i & 31)) & 1) === 1;
  }

  /** Record `seq` (after it decrypted). */
  advance(seq: bigint): void {
    const bits = this.bits;
    if (seq > this.newest) {
      const d = seq - this.newest;
      if (d >= BigInt(REPLAY_WINDOW)) bits.fill(0);
      else {
        for (let i = Number(this.newest & BigInt(REPLAY_WINDOW - 1)) + 1, n = Number(d); n > 0; n--, i++) {
          const j = i & (REPLAY_WINDOW - 1);
          bits[j >>> 5]! &= ~(1 << (j & 31));
        }
      }
      this.newest = seq;
    }
    const i = Number(seq & BigInt(REPLAY_WINDOW - 1));
    bits[i >>> 5]! |= 1 << (i & 31);
  }
}

/**
 * The 256-entry replay protection of one direction: a sequence is refused if it is older than the
 * newest by 256 or more, or if it was received already. `advance` only after the packet decrypted.
 * The standard keeps the last sequence of each of 256 slots; within the window a slot can only hold
 * the sequence itself or an older one, so one bit per slot (cleared as the window moves) decides the
 * same packets in 32 bytes instead of 2 KiB. Sequences from `BULK_SEQUENCE_BASE` up have a window of
 * their own (made when first needed), which a netcode 1.02 peer never uses.
 */
export class ReplayProtection extends ReplayWindow {
  private bulk: ReplayWindow | undefined;

  /** Forget everything (a new connection). */
  override reset(): void {
    super.reset();
    this.bulk = undefined;
  }

  /** True if `seq` must be dropped. */
  override alreadyReceived(seq: bigint): boolean {
    return seq < BULK_SEQUENCE_BASE ? super.alreadyReceived(seq) : this.bulk !== undefined && this.bulk.alreadyReceived(seq);
  }

  /** Record `seq` (after it decrypted). */
  override advance(seq: bigint): void {
    if (seq < BULK_SEQUENCE_BASE) super.advance(seq);
    else (this.bulk ??= new ReplayWindow()).advance(seq);
  }
}

/**
 * Read an encrypted packet in the standard's order: size ≥ 18, type < 7 and in `allowed` (a bit per
 * type), sequence bytes 1..8, size for them, replay check (types 4..6, when `replay` is given),
 * decryption, replay advance, body size. A hot-path decoder (core/result.ts): the packet is read
 * into `into` (its body decrypted into `out`, default a new buffer) and the body's length returned,
 * or a negative `NetcodeDrop` code saying why it was dropped (`netcodeDropReason` names it). Never
 * throws.
 */
export function readPacket(
  b: Uint8Array, protocolId: bigint, key: Uint8Array, allowed: number, replay: ReplayProtection | undefined,
  crypto: CryptoProvider, into: NetcodePacket, out?: Uint8Array,
): number {
  if (b.length < MIN_PACKET_BYTES) return NetcodeDrop.size;
  const prefix = b[0]!;
  const type = prefix & 0x0f;
  if (type >= 7 || type === NetcodePacketType.Request || (allowed & (1 << type)) === 0) return NetcodeDrop.type;
  const n = prefix >> 4;
  if (n < 1 || n > 8 || b.length < 1 + n + TAG_BYTES) return NetcodeDrop.sequenceBytes;
  let lo = 0;
  let hi = 0;
  for (let i = n - 1; i >= 0; i--) {
    if (i >= 4) hi = hi * 256 + b[1 + i]!;
    else lo = lo * 256 + b[1 + i]!;
  }
  const seq = hi === 0 ? BigInt(lo) : (BigInt(hi) << 32n) | BigInt(lo);
  const guarded = replay !== undefined && type >= NetcodePacketType.KeepAlive;
  if (guarded && replay.alreadyReceived(seq)) return NetcodeDrop.replay;
  const sealed = b.subarray(1 + n);
  const plain = out !== undefined && out.length >= sealed.length - TAG_BYTES ? out : new Uint8Array(sealed.length - TAG_BYTES);
  const len = crypto.open(key, packetNonce(lo, hi), packetAd(protocolId, prefix), sealed, plain, 0);
  if (len < 0) return NetcodeDrop.decrypt;
  if (guarded) replay.advance(seq);
  const want = BODY_BYTES[type]!;
  if (want >= 0 ? len !== want : len < 1 || len > MAX_PAYLOAD_BYTES) return NetcodeDrop.bodySize;
  into.type = type;
  into.sequence = seq;
  into.body = plain.subarray(0, len);
  return len;
}

/** A connection request that passed every check: the decrypted private token, and its tag (for the token history). */
export interface NetcodeRequest {
  token: ConnectTokenPrivate;
  expireTimestamp: bigint;
  /** The last 16 bytes of the encrypted private token: one token, one value. */
  tokenMac: Uint8Array;
}

/**
 * Read a connection request as the server does: exactly 1078 bytes, version info, protocol id,
 * expire timestamp after `nowUnixSeconds`, the private token decrypted with `privateKey` and parsed.
 * An edge decoder: a `DecodeResult` whose rejection codes are the drop reasons.
 */
export function readRequestPacket(
  b: Uint8Array, protocolId: bigint, nowUnixSeconds: number, privateKey: Uint8Array, crypto: CryptoProvider,
): DecodeResult<NetcodeRequest, NetcodeDropReason> {
  if (b.length !== REQUEST_BYTES || b[0] !== NetcodePacketType.Request) return rejected('size');
  for (let i = 0; i < VERSION_INFO_BYTES; i++) if (b[1 + i] !== NETCODE_VERSION_INFO[i]) return rejected('version');
  if (readU64LE(b, 14) !== protocolId) return rejected('protocol');
  const expire = readU64LE(b, 22);
  if (expire <= BigInt(Math.floor(nowUnixSeconds))) return rejected('expired');
  const encrypted = b.subarray(54, 54 + CONNECT_TOKEN_PRIVATE_BYTES);
  const token = decryptPrivateToken(encrypted, protocolId, expire, b.subarray(30, 54), privateKey, crypto);
  if (!token.ok) return rejected('token');
  return decoded({ token: token.value, expireTimestamp: expire, tokenMac: encrypted.slice(CONNECT_TOKEN_PRIVATE_BYTES - TAG_BYTES) }, REQUEST_BYTES);
}

// ---------------------------------------------------------------------------------------------
// gamewire's extension: addressed packets (docs/netcode.md, "gamewire extension: moving a client
// to a new address"). Not netcode 1.02: its readers, `readPacket` among them, drop type 7.

/** The packet type of an addressed packet (a gamewire extension; netcode 1.02 drops it). */
export const ADDRESSED_TYPE = 7;

/**
 * What an addressed packet carries (its first plaintext byte): a connected client's keep-alive,
 * payload or disconnect (bodies as netcode's types 4..6), or path validation (8 bytes each).
 */
export const AddressedKind = { KeepAlive: 4, Payload: 5, Disconnect: 6, PathChallenge: 8, PathResponse: 9 } as const;

/** Bytes of a PATH_CHALLENGE's (and a PATH_RESPONSE's) body. */
export const PATH_CHALLENGE_BYTES = 8;

/** Bytes of an addressed packet's header before its sequence: prefix byte, client index u32. */
const ADDRESSED_HEADER_BYTES = 5;

/** Smallest addressed packet: prefix, client index, one sequence byte, the kind byte, tag (23 bytes). */
export const MIN_ADDRESSED_BYTES = ADDRESSED_HEADER_BYTES + 1 + 1 + TAG_BYTES;

/** Body size of each kind (−1: 1..1200; undefined: no such kind). */
const KIND_BODY_BYTES: readonly (number | undefined)[] = [
  undefined, undefined, undefined, undefined, 8, -1, 0, undefined, PATH_CHALLENGE_BYTES, PATH_CHALLENGE_BYTES,
];

const addressedAdScratch = new Uint8Array(26);
let addressedAdProtocol: bigint | undefined;
const addressedPlain = new Uint8Array(1 + MAX_PAYLOAD_BYTES);

/** An addressed packet's associated data: netcode's 22 bytes (version info ‖ protocol id ‖ prefix) ‖ client index u32 (26 bytes). */
function addressedAd(protocolId: bigint, prefix: number, index: number): Uint8Array {
  if (protocolId !== addressedAdProtocol) {
    addressedAdScratch.set(NETCODE_VERSION_INFO);
    writeU64LE(addressedAdScratch, 13, protocolId);
    addressedAdProtocol = protocolId;
  }
  addressedAdScratch[21] = prefix;
  writeU32LE(addressedAdScratch, 22, index);
  return addressedAdScratch;
}

/** The client index an addressed packet names (in clear), or −1 when `b` is not one (type, or too short). */
export function addressedIndex(b: Uint8Array): number {
  if (b.length < MIN_ADDRESSED_BYTES || (b[0]! & 0x0f) !== ADDRESSED_TYPE) return -1;
  return readU32LE(b, 1);
}

/**
 * Write an addressed packet: prefix byte `(sequence bytes << 4) | 7`, the client index u32 (in
 * clear), the sequence (1..8 bytes, as netcode's), then `kind ‖ body` sealed with
 * ChaCha20-Poly1305-IETF under the sender's key (nonce 4 zero bytes ‖ sequence u64, from the same
 * sequence as the connection's other packets; AD version info ‖ protocol id ‖ prefix ‖ index).
 * `kind` is one of `AddressedKind`, `body` at most 1200 bytes. Returns the packet's length (body + 31
 * bytes at most).
 */
export function writeAddressedPacket(
  out: Uint8Array, index: number, kind: number, sequence: bigint, body: Uint8Array, protocolId: bigint, key: Uint8Array, crypto: CryptoProvider,
): number {
  const lo = Number(sequence & 0xffffffffn);
  const hi = Number(sequence >> 32n);
  const n = sequenceLength(lo, hi);
  const prefix = (n << 4) | ADDRESSED_TYPE;
  out[0] = prefix;
  writeU32LE(out, 1, index);
  writeSequence(out, ADDRESSED_HEADER_BYTES, n, lo, hi);
  addressedPlain[0] = kind;
  addressedPlain.set(body, 1);
  const o = ADDRESSED_HEADER_BYTES + n;
  return o + crypto.seal(key, packetNonce(lo, hi), addressedAd(protocolId, prefix, index), addressedPlain.subarray(0, 1 + body.length), out, o);
}

/**
 * Read an addressed packet, in `readPacket`'s order: size ≥ 23, type 7, sequence bytes 1..8 and
 * room for them, replay check (when `replay` is given), decryption (the index is in the AD: a
 * changed index fails here), replay advance, the kind (one of `AddressedKind` with its bit set in
 * `allowed`: `type`), its body size (`body-size`). A hot-path decoder: the packet is read into
 * `into` (`type` = the kind, `body` a view of `out` after the kind byte) and the body's length
 * returned, or a negative `NetcodeDrop` code. The index is the caller's to check (`addressedIndex`).
 * `out`, when given, should hold 1201 bytes. Never throws.
 */
export function readAddressedPacket(
  b: Uint8Array, protocolId: bigint, key: Uint8Array, allowed: number, replay: ReplayProtection | undefined,
  crypto: CryptoProvider, into: NetcodePacket, out?: Uint8Array,
): number {
  if (b.length < MIN_ADDRESSED_BYTES) return NetcodeDrop.size;
  const prefix = b[0]!;
  if ((prefix & 0x0f) !== ADDRESSED_TYPE) return NetcodeDrop.type;
  const n = prefix >> 4;
  const o = ADDRESSED_HEADER_BYTES + n;
  if (n < 1 || n > 8 || b.length < o + 1 + TAG_BYTES) return NetcodeDrop.sequenceBytes;
  let lo = 0;
  let hi = 0;
  for (let i = n - 1; i >= 0; i--) {
    if (i >= 4) hi = hi * 256 + b[ADDRESSED_HEADER_BYTES + i]!;
    else lo = lo * 256 + b[ADDRESSED_HEADER_BYTES + i]!;
  }
  const seq = hi === 0 ? BigInt(lo) : (BigInt(hi) << 32n) | BigInt(lo);
  if (replay !== undefined && replay.alreadyReceived(seq)) return NetcodeDrop.replay;
  const sealed = b.subarray(o);
  const plain = out !== undefined && out.length >= sealed.length - TAG_BYTES ? out : new Uint8Array(sealed.length - TAG_BYTES);
  const len = crypto.open(key, packetNonce(lo, hi), addressedAd(protocolId, prefix, readU32LE(b, 1)), sealed, plain, 0);
  if (len < 0) return NetcodeDrop.decrypt;
  replay?.advance(seq);
  const kind = plain[0]!;
  const want = KIND_BODY_BYTES[kind];
  if (want === undefined || (allowed & (1 << kind)) === 0) return NetcodeDrop.type;
  const body = len - 1;
  if (want >= 0 ? body !== want : body < 1 || body > MAX_PAYLOAD_BYTES) return NetcodeDrop.bodySize;
  into.type = kind;
  into.sequence = seq;
  into.body = plain.subarray(1, len);
  return body;
}
