// Seeded fuzz targets for netcode's readers (src/netcode/wire.ts), one per reader the reference C
// fuzzes: the public connect token (client), the private token (server, sealed and in plaintext),
// every packet type (with the right key, a wrong key, with and without replay protection), the
// connection request, the challenge token, and the address parser with the addresses inside tokens;
// and gamewire's own addressed packet (type 7, docs/netcode.md).
// Each input is made from its own case seed (random bytes, structured bytes, or a valid input mutated),
// so a failure replays from (target, case seed) alone. Shared by the seeded slice in `npm test`
// (netcode.test.ts) and the long runs of `npm run fuzz` (run.ts).
//
// Invariants, per input: the reader never throws; a valid input is accepted with exactly the values
// it was made from (so a harness that rejects everything fails); a mutated sealed input (packet,
// private token, challenge token, request) is never accepted; random bytes are never accepted by an
// authenticating reader; a replayed or too-old packet is never accepted and a dropped one never
// moves the replay window; what is accepted is within the format's bounds and round-trips through its
// writer; the crypto providers agree; an address is accepted exactly when node:net calls its host an
// IP literal, and its text is canonical (what reading it back from a token gives).
import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { writeU32LE } from '../../src/core/bytes.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import type { CryptoProvider } from '../../src/crypto/provider.js';
import {
  ADDRESSED_TYPE, AddressedKind, addressedIndex, addressToKey, CHALLENGE_TOKEN_BYTES, CONNECT_TOKEN_BYTES, CONNECT_TOKEN_PRIVATE_BYTES, type ConnectTokenPrivate,
  type ConnectTokenPublic, decryptChallengeToken, decryptPrivateToken, encryptChallengeToken, generateConnectToken, KEY_BYTES,
  MAX_PAYLOAD_BYTES, MAX_SERVERS_PER_CONNECT, NETCODE_VERSION_INFO, type NetcodeAddress, NetcodePacketType as T, parseAddress,
  readConnectToken, readPrivateToken, readRequestPacket, REPLAY_WINDOW, ReplayProtection, REQUEST_BYTES,
  TOKEN_NONCE_BYTES, USER_DATA_BYTES, writeConnectToken, writePacket, writePrivateToken, writeRequestPacket,
  newNetcodePacket, netcodeDropReason, readAddressedPacket, writeAddressedPacket,
} from '../../src/netcode/wire.js';
import { okValue, packetOf, requestOf } from '../harness/decoders.js';

/** The fuzz targets, in the order inputs are spread over them. */
export const NETCODE_FUZZ_TARGETS = ['connect-token', 'private-token', 'packet', 'request', 'challenge-token', 'address', 'addressed'] as const;
/** One fuzz target. */
export type NetcodeFuzzTarget = (typeof NETCODE_FUZZ_TARGETS)[number];

/** What one target saw. Times are of the reader calls only (µs, wall clock). */
export interface TargetStats {
  inputs: number;
  accepted: number;
  /** Rejections by the reader's drop reason (`undefined` for readers that give none). */
  rejected: Record<string, number>;
  /** Inputs by how they were made. */
  modes: Record<string, number>;
  maxMicros: number;
  /** The input that took `maxMicros`: mode and bytes. */
  slowest: string;
  /** Its case seed, to time it again (a maximum on a shared machine is mostly preemption and GC). */
  slowestSeed: number;
  totalMicros: number;
  /** Inputs by reader time: `micros[k]` counts those of at most 2^k µs (more than 2^(k−1)); the last bucket, all above. */
  micros: number[];
}

/** Reader time (µs) under which a fraction `q` of a target's inputs ran, from the power-of-two buckets. */
export function microsQuantile(s: TargetStats, q: number): number {
  let n = 0;
  for (let k = 0; k < s.micros.length; k++) {
    n += s.micros[k]!;
    if (n >= q * s.inputs) return 2 ** k;
  }
  return Infinity;
}

/** The first invariant an input broke. */
export interface FuzzFailure {
  target: NetcodeFuzzTarget;
  caseSeed: number;
  mode: string;
  message: string;
  /** The input that broke it (an address's UTF-8 bytes). */
  inputHex: string;
}

/** Options of {@link runNetcodeFuzz}. */
export interface NetcodeFuzzOptions {
  /** Run seed; input `i` is made from case seed `caseSeed(seed, i)`. */
  seed: number;
  /** Inputs in all, spread round robin over `targets`. */
  inputs: number;
  /** AEAD providers; each input uses one, and one input in 16 (at random) compares them all. */
  providers: readonly CryptoProvider[];
  targets?: readonly NetcodeFuzzTarget[];
  /** Called every `progressEvery` inputs (default 100 000). */
  onProgress?: (done: number) => void;
  progressEvery?: number;
}

// ---------------------------------------------------------------------------------------------
// Fixed context: the reference implementation's vectors and keys.

interface Vectors {
  protocolId: string;
  privateKey: string;
  packetKey: string;
  connectToken: { bytes: string };
  challengeToken: { sequence: number; key: string; encrypted: string };
  packets: { packet: string; sequence: string; bytes: string }[];
}

const unhex = (h: string): Uint8Array => Uint8Array.from(h.match(/../g)?.map((x) => Number.parseInt(x, 16)) ?? []);
/** Lower-case hex of `b`. */
export const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const V = JSON.parse(readFileSync(new URL('../vectors/netcode-1.02.json', import.meta.url), 'utf8')) as Vectors;
const PROTOCOL = BigInt(`0x${V.protocolId}`);
const PRIVATE_KEY = unhex(V.privateKey);
const PACKET_KEY = unhex(V.packetKey);
const VECTOR_TOKEN = unhex(V.connectToken.bytes);
const VECTOR_PACKETS = V.packets.filter((p) => !p.packet.startsWith('request')).map((p) => unhex(p.bytes));
const VECTOR_REQUEST = unhex(V.packets.find((p) => p.packet.startsWith('request'))!.bytes);
const U64_MAX = (1n << 64n) - 1n;
const ADDRESS_BYTES_OFFSET = 1093;
const BODY_BYTES = [-1, 0, 8 + CHALLENGE_TOKEN_BYTES, 8 + CHALLENGE_TOKEN_BYTES, 8, -1, 0];
const ALL_TYPES = 0x7e;
const PACKET_DROPS = ['size', 'type', 'sequence-bytes', 'replay', 'decrypt', 'body-size'];
const REQUEST_DROPS = ['size', 'version', 'protocol', 'expired', 'token'];
/** The ways each target makes inputs (`TargetStats.modes`). */
export const NETCODE_FUZZ_MODES: Record<NetcodeFuzzTarget, readonly string[]> = {
  'connect-token': ['valid', 'random', 'mutated'],
  'private-token': ['sealed-valid', 'sealed-mutated', 'plain-random', 'plain-mutated'],
  packet: ['replay', 'random', 'vector', 'valid', 'mutated', 'wrong-key'],
  request: ['random', 'sealed-any-plaintext', 'valid', 'mutated'],
  'challenge-token': ['valid', 'random', 'mutated'],
  address: ['from-token-bytes', 'random-chars', 'structured', 'mutated'],
  addressed: ['random', 'valid', 'replay', 'mutated', 'wrong-key'],
};
/** Drop reasons the seeded slice must see, per target, so every check in the readers is reached. */
export const EXPECTED_DROPS: Partial<Record<NetcodeFuzzTarget, readonly string[]>> = { packet: PACKET_DROPS, request: REQUEST_DROPS, addressed: PACKET_DROPS };

class FuzzCheck extends Error {}

function check(ok: boolean, message: () => string): void {
  if (!ok) throw new FuzzCheck(message());
}

/** Case seed of input `i` of a run (a u32). */
export function caseSeed(seed: number, i: number): number {
  let z = (Math.imul(seed | 0, 0x9e3779b1) ^ Math.imul(i + 1, 0x85ebca6b)) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x7feb352d);
  z = Math.imul(z ^ (z >>> 15), 0x846ca68b);
  return (z ^ (z >>> 16)) >>> 0;
}

// ---------------------------------------------------------------------------------------------
// Random values and the mutator

function bytes(rng: NonCryptoRng, n: number): Uint8Array {
  return rng.fill(new Uint8Array(n));
}

function pick<X>(rng: NonCryptoRng, xs: readonly X[]): X {
  return xs[rng.nextInt(xs.length)]!;
}

function u64(rng: NonCryptoRng): bigint {
  return (BigInt(rng.nextU32()) << 32n) | BigInt(rng.nextU32());
}

const EDGE_U64 = [0n, 1n, 255n, 256n, 65535n, 65536n, 0xffffffffn, 1n << 32n, (1n << 63n) - 1n, 1n << 63n, U64_MAX - 256n, U64_MAX];

function interestingU64(rng: NonCryptoRng): bigint {
  const r = rng.nextInt(4);
  if (r === 0) return pick(rng, EDGE_U64);
  if (r === 1) return BigInt(rng.nextInt(1000));
  if (r === 2) return BigInt(rng.nextU32()) >> BigInt(rng.nextInt(32));
  return u64(rng) >> BigInt(rng.nextInt(64));
}

const EDGE_U32 = [0, 1, 2, 7, 19, 31, 32, 33, 255, 256, 1024, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];
const EDGE_U8 = [0, 1, 2, 3, 0x0f, 0x10, 0x7f, 0x80, 0xfe, 0xff];

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * `b` changed by one to eight edits (bit flips, bytes set, 32-bit fields set, ranges deleted,
 * inserted or copied, truncation, extension), never equal to `b`. `keepLength`: only edits that keep
 * the length. `hot`: offsets of fields worth hitting often (counts, types, lengths).
 */
function mutate(rng: NonCryptoRng, b: Uint8Array, keepLength = false, hot: readonly number[] = []): Uint8Array {
  let c = b.slice();
  const edits = rng.chance(0.5) ? 1 : 2 + rng.nextInt(7);
  for (let e = 0; e < edits; e++) {
    const at = (): number => (hot.length > 0 && rng.chance(0.3) ? Math.min(pick(rng, hot), c.length - 1) : rng.nextInt(c.length));
    const op = c.length === 0 ? 3 : rng.nextInt(keepLength ? 4 : 8);
    if (op === 0) c[at()]! ^= 1 << rng.nextInt(8);
    else if (op === 1) c[at()] = rng.chance(0.5) ? pick(rng, EDGE_U8) : rng.nextInt(256);
    else if (op === 2 && c.length >= 4) writeU32LE(c, Math.min(at(), c.length - 4), pick(rng, EDGE_U32));
    else if (op === 2 || op === 3) {
      if (keepLength) {
        const from = rng.nextInt(c.length);
        const to = rng.nextInt(c.length);
        const n = 1 + rng.nextInt(Math.min(64, c.length - Math.max(from, to)));
        c.copyWithin(to, from, from + n);
      } else {
        const extra = bytes(rng, 1 + rng.nextInt(64));
        const d = new Uint8Array(c.length + extra.length);
        d.set(c);
        d.set(extra, c.length);
        c = d;
      }
    } else if (op === 4) c = c.slice(0, rng.nextInt(c.length));
    else if (op === 5) {
      const i = rng.nextInt(c.length);
      const n = 1 + rng.nextInt(Math.min(64, c.length - i));
      const d = new Uint8Array(c.length - n);
      d.set(c.subarray(0, i));
      d.set(c.subarray(i + n), i);
      c = d;
    } else if (op === 6) {
      const i = rng.nextInt(c.length + 1);
      const ins = bytes(rng, 1 + rng.nextInt(16));
      const d = new Uint8Array(c.length + ins.length);
      d.set(c.subarray(0, i));
      d.set(ins, i);
      d.set(c.subarray(i), i + ins.length);
      c = d;
    } else {
      c = c.slice(0, c.length - 1 - rng.nextInt(Math.min(c.length, 32)));
    }
  }
  if (equal(c, b)) {
    if (c.length === 0) return Uint8Array.of(rng.nextInt(256));
    c[rng.nextInt(c.length)]! ^= 1 << rng.nextInt(8);
  }
  return c;
}

/**
 * An address count at `b[o − 4]` and a list of that many addresses from `b[o]` whose type bytes are
 * mostly 1 or 2 and step as their type says, so the reader gets deep into a list of any length
 * (0..40, the bound 32 and 33 often); the rest stays random.
 */
function addressList(rng: NonCryptoRng, b: Uint8Array, o: number): void {
  const count = rng.chance(0.3) ? pick(rng, [0, 1, MAX_SERVERS_PER_CONNECT, MAX_SERVERS_PER_CONNECT + 1]) : rng.chance(0.9) ? rng.nextInt(41) : rng.nextU32();
  writeU32LE(b, o - 4, count);
  for (let i = 0; i < Math.min(count, 41) && o < b.length; i++) {
    const type = rng.chance(0.97) ? 1 + rng.nextInt(2) : rng.nextInt(256);
    b[o] = type;
    o += type === 2 ? 19 : 7;
  }
}

// ---------------------------------------------------------------------------------------------
// Valid inputs

function randomAddress(rng: NonCryptoRng): NetcodeAddress {
  const port = rng.chance(0.1) ? pick(rng, [0, 1, 65535]) : rng.nextInt(65536);
  if (rng.chance(0.5)) return { family: 4, host: Array.from(bytes(rng, 4)).join('.'), port };
  const g = Array.from({ length: 8 }, () => (rng.chance(0.4) ? 0 : rng.chance(0.2) ? 0xffff : rng.nextInt(65536)));
  // Not canonical on purpose: the token writer and the reader must bring it to one text.
  const p = okValue(parseAddress(`[${g.map((x) => x.toString(16).padStart(rng.nextInt(5), '0')).join(':')}]:${port}`));
  return p!;
}

function seededRandom(rng: NonCryptoRng): (out: Uint8Array) => void {
  return (out) => void rng.fill(out);
}

interface FreshToken {
  bytes: Uint8Array;
  pub: ConnectTokenPublic;
  priv: ConnectTokenPrivate;
  protocolId: bigint;
  nowUnix: number;
  expire: bigint;
  /** The addresses the client is given. */
  servers: NetcodeAddress[];
}

const TOKEN_POOL = 256;
const tokenPool: FreshToken[] = [];

/**
 * A connect token from `generateConnectToken`, and the private part it must decrypt to: one of a pool
 * of 256 made from fixed seeds (four times in five, since making one costs more than fuzzing it), or a
 * new one. Shared: callers do not change it.
 */
function freshToken(rng: NonCryptoRng, crypto: CryptoProvider): FreshToken {
  if (rng.chance(0.8)) {
    const i = rng.nextInt(TOKEN_POOL);
    tokenPool[i] ??= makeToken(new NonCryptoRng(0x70c0_0000 + i), crypto);
    return tokenPool[i]!;
  }
  return makeToken(rng, crypto);
}

function makeToken(rng: NonCryptoRng, crypto: CryptoProvider): FreshToken {
  const protocolId = rng.chance(0.5) ? PROTOCOL : interestingU64(rng);
  const count = rng.chance(0.7) ? 1 + rng.nextInt(3) : rng.chance(0.2) ? MAX_SERVERS_PER_CONNECT : 1 + rng.nextInt(MAX_SERVERS_PER_CONNECT);
  const servers = Array.from({ length: count }, () => randomAddress(rng));
  const internal = rng.chance(0.3) ? Array.from({ length: count }, () => randomAddress(rng)) : undefined;
  const nowUnix = rng.chance(0.5) ? 1_700_000_000 + rng.nextInt(1e8) : rng.nextInt(2 ** 31);
  const expireSeconds = rng.chance(0.1) ? -1 : rng.chance(0.1) ? 0 : 1 + rng.nextInt(100_000);
  const timeoutSeconds = rng.chance(0.2) ? pick(rng, [-1, 0, 2 ** 31 - 1, -(2 ** 31)]) : rng.nextInt(60);
  const userData = bytes(rng, rng.nextInt(USER_DATA_BYTES + 1));
  const clientId = rng.chance(0.2) ? pick(rng, EDGE_U64) : u64(rng);
  const token = generateConnectToken({
    protocolId, privateKey: PRIVATE_KEY, clientId, serverAddresses: servers, internalAddresses: internal, nowUnixSeconds: nowUnix,
    expireSeconds, timeoutSeconds, userData, random: seededRandom(rng), crypto,
  });
  const pub = okValue(readConnectToken(token))!;
  check(pub !== undefined, () => 'a token from generateConnectToken was refused by readConnectToken');
  const padded = new Uint8Array(USER_DATA_BYTES);
  padded.set(userData);
  const priv: ConnectTokenPrivate = {
    clientId, timeoutSeconds, serverAddresses: internal ?? servers, clientToServerKey: pub.clientToServerKey,
    serverToClientKey: pub.serverToClientKey, userData: padded,
  };
  const expire = expireSeconds < 0 ? U64_MAX : BigInt(nowUnix + expireSeconds);
  return { bytes: token, pub, priv, protocolId, nowUnix, expire, servers };
}

// ---------------------------------------------------------------------------------------------
// Comparing values

function show(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x instanceof Uint8Array ? hex(x) : x));
}

function sameValue(a: unknown, b: unknown): boolean {
  return show(a) === show(b);
}

function keys(as: readonly NetcodeAddress[]): string[] {
  return as.map(addressToKey);
}

/** Bytes a private token's plaintext uses up to the end of its user data (the rest is zero padding). */
function privateEnd(t: ConnectTokenPrivate): number {
  return 16 + t.serverAddresses.reduce((n, a) => n + (a.family === 4 ? 7 : 19), 0) + 2 * KEY_BYTES + USER_DATA_BYTES;
}

/** An accepted address is canonical: its text parses back to itself and reads back the same from a token. */
function checkAddress(a: NetcodeAddress, where: string): void {
  const key = addressToKey(a);
  check((a.family === 4 || a.family === 6) && Number.isInteger(a.port) && a.port >= 0 && a.port <= 65535, () => `${where}: ${show(a)} out of range`);
  check(sameValue(okValue(parseAddress(key)), a), () => `${where}: ${key} does not parse back to ${show(a)} (got ${show(okValue(parseAddress(key)))})`);
  const t = okValue(readPrivateToken(writePrivateToken({
    clientId: 0n, timeoutSeconds: 0, serverAddresses: [a], clientToServerKey: new Uint8Array(32), serverToClientKey: new Uint8Array(32),
    userData: new Uint8Array(USER_DATA_BYTES),
  })));
  check(t !== undefined && addressToKey(t.serverAddresses[0]!) === key,
    () => `${where}: ${key} written into a token reads back as ${t === undefined ? 'nothing' : addressToKey(t.serverAddresses[0]!)}`);
  if (a.family === 6) {
    const canonical = new URL(`http://[${a.host}]/`).hostname;
    check(canonical === `[${a.host}]`, () => `${where}: IPv6 text ${a.host} is not RFC 5952's ${canonical}`);
  }
}

/** Bounds of an accepted token; one of its addresses (a random one) is checked with `checkAddress`. */
function checkPrivateBounds(rng: NonCryptoRng, t: ConnectTokenPrivate, where: string): void {
  check(t.serverAddresses.length >= 1 && t.serverAddresses.length <= MAX_SERVERS_PER_CONNECT, () => `${where}: ${t.serverAddresses.length} addresses`);
  check(t.clientToServerKey.length === KEY_BYTES && t.serverToClientKey.length === KEY_BYTES && t.userData.length === USER_DATA_BYTES,
    () => `${where}: key or user data of the wrong size`);
  check(Number.isInteger(t.timeoutSeconds) && t.timeoutSeconds >= -(2 ** 31) && t.timeoutSeconds < 2 ** 31, () => `${where}: timeout ${t.timeoutSeconds}`);
  check(t.clientId >= 0n && t.clientId <= U64_MAX, () => `${where}: client id ${t.clientId}`);
  checkAddress(pick(rng, t.serverAddresses), where);
}

// ---------------------------------------------------------------------------------------------
// One input

interface Case {
  rng: NonCryptoRng;
  crypto: CryptoProvider;
  providers: readonly CryptoProvider[];
  /** Compare every provider on this input. */
  differential: boolean;
  mode: string;
  input: Uint8Array;
  micros: number;
  /** The reader's verdict for the stats: `true`, or the drop reason. */
  outcome: true | string;
}

/** Run `read` timed; a throw is a failure of the reader, reported as such. */
function call<R>(c: Case, read: () => R): R {
  const t0 = performance.now();
  let r: R;
  try {
    r = read();
  } catch (e) {
    throw new FuzzCheck(`reader threw: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
  }
  c.micros += (performance.now() - t0) * 1000;
  return r;
}

/** Run `read` with the case's provider, and with every provider when the case is differential; all must agree. */
function callAll<R>(c: Case, read: (crypto: CryptoProvider) => R): R {
  const r = call(c, () => read(c.crypto));
  if (c.differential) {
    for (const p of c.providers) {
      const q = call(c, () => read(p));
      check(sameValue(q, r), () => `providers disagree: ${c.crypto.name} gave ${show(r)}, ${p.name} gave ${show(q)}`);
    }
  }
  return r;
}

function verdict(r: unknown): true | string {
  if (r === undefined) return 'undefined';
  if (typeof r === 'object' && r !== null && 'drop' in r) return (r as { drop: string }).drop;
  return true;
}

// connect-token: the client's reader of the public part (not authenticated: the client cannot check it).
function fuzzConnectToken(c: Case): void {
  const { rng } = c;
  const m = rng.nextInt(10);
  if (m < 2) {
    c.mode = 'valid';
    const f = freshToken(rng, c.crypto);
    c.input = f.bytes;
    const r = call(c, () => okValue(readConnectToken(f.bytes)));
    check(r !== undefined, () => 'a valid token was refused');
    check(sameValue(keys(r!.serverAddresses), keys(f.servers)) && r!.timeoutSeconds === f.priv.timeoutSeconds && r!.protocolId === f.protocolId
      && r!.createTimestamp === BigInt(f.nowUnix) && r!.expireTimestamp === f.expire, () => `a valid token read back different values: ${show(r)}`);
    const priv = call(c, () => okValue(decryptPrivateToken(r!.privateData, r!.protocolId, r!.expireTimestamp, r!.nonce, PRIVATE_KEY, c.crypto)));
    check(priv !== undefined && sameValue(priv, f.priv), () => `its private part decrypted to ${show(priv)}, not ${show(f.priv)}`);
  } else if (m < 4) {
    c.mode = 'random';
    const n = rng.chance(0.8) ? CONNECT_TOKEN_BYTES : rng.nextInt(2 * CONNECT_TOKEN_BYTES);
    c.input = bytes(rng, n);
    if (rng.chance(0.5) && n >= 13) c.input.set(NETCODE_VERSION_INFO);
    if (rng.chance(0.5) && n >= ADDRESS_BYTES_OFFSET) {
      c.input.fill(0, 21, 29);
      addressList(rng, c.input, ADDRESS_BYTES_OFFSET);
    }
  } else {
    c.mode = 'mutated';
    const base = rng.chance(0.2) ? VECTOR_TOKEN : freshToken(rng, c.crypto).bytes;
    c.input = mutate(rng, base, rng.chance(0.7), [13, 21, 29, ADDRESS_BYTES_OFFSET - 8, ADDRESS_BYTES_OFFSET - 4, ADDRESS_BYTES_OFFSET, ADDRESS_BYTES_OFFSET + 7]);
  }
  const b = c.input;
  const r = call(c, () => okValue(readConnectToken(b)));
  c.outcome = verdict(r);
  if (r === undefined) return;
  check(b.length === CONNECT_TOKEN_BYTES && equal(b.subarray(0, 13), NETCODE_VERSION_INFO), () => 'accepted a token of the wrong size or version');
  check(r.createTimestamp <= r.expireTimestamp, () => 'accepted create > expire');
  check(r.nonce.length === TOKEN_NONCE_BYTES && r.privateData.length === CONNECT_TOKEN_PRIVATE_BYTES, () => 'nonce or private part of the wrong size');
  checkPrivateBounds(rng, { ...r, clientId: 0n, userData: new Uint8Array(USER_DATA_BYTES) }, 'public token');
  const again = writeConnectToken(r);
  const end = privateEnd({ ...r, clientId: 0n, userData: new Uint8Array(USER_DATA_BYTES) }) - 16 - USER_DATA_BYTES + ADDRESS_BYTES_OFFSET;
  check(equal(again.subarray(0, end), b.subarray(0, end)), () => 'the accepted token does not write back to the same bytes');
}

// private-token: the server's reader (sealed: authenticated; and the plaintext parser behind it).
function fuzzPrivateToken(c: Case): void {
  const { rng } = c;
  const m = rng.nextInt(10);
  if (m < 5) {
    const f = freshToken(rng, c.crypto);
    let data = f.pub.privateData;
    let { nonce } = f.pub;
    let protocolId = f.protocolId;
    let expire = f.pub.expireTimestamp;
    let key = PRIVATE_KEY;
    c.mode = m === 0 ? 'sealed-valid' : 'sealed-mutated';
    if (m >= 1) {
      const what = rng.nextInt(10);
      if (what < 6) data = mutate(rng, data, rng.chance(0.7));
      else if (what === 6) nonce = mutate(rng, nonce, true);
      else if (what === 7) protocolId ^= 1n << BigInt(rng.nextInt(64));
      else if (what === 8) expire ^= 1n << BigInt(rng.nextInt(64));
      else key = mutate(rng, key, true);
    }
    c.input = data;
    const r = callAll(c, (p) => okValue(decryptPrivateToken(data, protocolId, expire, nonce, key, p)));
    c.outcome = verdict(r);
    if (m === 0) check(r !== undefined && sameValue(r, f.priv), () => `a valid private token decrypted to ${show(r)}, not ${show(f.priv)}`);
    else check(r === undefined, () => 'accepted a mutated sealed private token');
    return;
  }
  c.mode = m < 7 ? 'plain-random' : 'plain-mutated';
  let plain: Uint8Array;
  if (m < 7) {
    plain = bytes(rng, rng.chance(0.8) ? CONNECT_TOKEN_PRIVATE_BYTES - 16 : rng.nextInt(CONNECT_TOKEN_PRIVATE_BYTES + 100));
    if (plain.length >= 16 && rng.chance(0.7)) addressList(rng, plain, 16);
  } else {
    const f = freshToken(rng, c.crypto);
    plain = mutate(rng, writePrivateToken(f.priv), rng.chance(0.5), [8, 12, 16, 23, 35]);
  }
  c.input = plain;
  const r = call(c, () => okValue(readPrivateToken(plain)));
  c.outcome = verdict(r);
  if (r === undefined) return;
  checkPrivateBounds(rng, r, 'private token');
  const end = privateEnd(r);
  check(end <= plain.length && equal(writePrivateToken(r).subarray(0, end), plain.subarray(0, end)),
    () => 'the accepted private token does not write back to the same bytes');
}

function packetBody(rng: NonCryptoRng, type: number, wrongSize: boolean): Uint8Array {
  const want = BODY_BYTES[type]!;
  if (!wrongSize) return bytes(rng, want >= 0 ? want : rng.chance(0.1) ? pick(rng, [1, MAX_PAYLOAD_BYTES]) : 1 + rng.nextInt(MAX_PAYLOAD_BYTES));
  if (want < 0) return bytes(rng, rng.chance(0.5) ? 0 : MAX_PAYLOAD_BYTES + 1 + rng.nextInt(100));
  return bytes(rng, rng.chance(0.5) && want > 0 ? want - 1 - rng.nextInt(want) : want + 1 + rng.nextInt(20));
}

function sealPacket(type: number, seq: bigint, body: Uint8Array, protocolId: bigint, key: Uint8Array, crypto: CryptoProvider): Uint8Array {
  const out = new Uint8Array(body.length + 25);
  return out.slice(0, writePacket(out, type, seq, body, protocolId, key, crypto));
}

/** An accepted packet is one `writePacket` makes from its type, sequence and body. */
function checkAcceptedPacket(c: Case, b: Uint8Array, r: { type: number; sequence: bigint; body: Uint8Array }, protocolId: bigint, key: Uint8Array): void {
  check(r.body.length <= b.length && r.sequence <= U64_MAX, () => 'accepted packet out of bounds');
  const again = sealPacket(r.type, r.sequence, r.body, protocolId, key, c.crypto);
  check(equal(again, b), () => `accepted packet (type ${r.type}, sequence ${r.sequence}) does not write back to the same bytes`);
}

// packet: readPacket for types 1..6 (0 is refused), right key / wrong key, with and without replay protection.
function fuzzPacket(c: Case): void {
  const { rng } = c;
  const m = rng.nextInt(20);
  if (m < 2) {
    fuzzReplayStream(c);
    return;
  }
  const protocolId = rng.chance(0.5) ? PROTOCOL : interestingU64(rng);
  const key = rng.chance(0.5) ? PACKET_KEY : bytes(rng, KEY_BYTES);
  const withReplay = rng.chance(0.5);
  const allowed = rng.chance(0.5) ? ALL_TYPES : rng.nextInt(256);
  const out = rng.chance(0.3) ? new Uint8Array(MAX_PAYLOAD_BYTES) : undefined;
  const read = (b: Uint8Array, k: Uint8Array, pid: bigint): ReturnType<typeof packetOf> =>
    callAll(c, (p) => {
      const r = packetOf(b, pid, k, allowed, withReplay ? new ReplayProtection() : undefined, p, out);
      return 'drop' in r ? r : { ...r, body: r.body.slice() };
    });
  if (m < 6) {
    c.mode = 'random';
    const n = rng.nextInt(16) === 0 ? rng.nextInt(4000) : rng.nextInt(64 + MAX_PAYLOAD_BYTES / 4);
    const b = bytes(rng, n);
    if (n > 0 && rng.chance(0.7)) b[0] = ((rng.chance(0.8) ? 1 + rng.nextInt(8) : rng.nextInt(16)) << 4) | (rng.chance(0.8) ? rng.nextInt(7) : rng.nextInt(16));
    c.input = b;
    const r = read(b, key, protocolId);
    c.outcome = verdict(r);
    check('drop' in r, () => 'accepted random bytes as a sealed packet');
    return;
  }
  if (m < 8) {
    c.mode = 'vector';
    const v = pick(rng, VECTOR_PACKETS);
    const mutated = rng.chance(0.5);
    c.input = mutated ? mutate(rng, v, rng.chance(0.5), [0, 1]) : v;
    const b = c.input;
    const r = callAll(c, (p) => {
      const x = packetOf(b, PROTOCOL, PACKET_KEY, ALL_TYPES, new ReplayProtection(), p, out);
      return 'drop' in x ? x : { ...x, body: x.body.slice() };
    });
    c.outcome = verdict(r);
    if (mutated) check('drop' in r, () => 'accepted a mutated vector packet');
    else {
      check(!('drop' in r), () => `refused a reference vector: ${show(r)}`);
      if (!('drop' in r)) checkAcceptedPacket(c, b, r, PROTOCOL, PACKET_KEY);
    }
    return;
  }
  const type = 1 + rng.nextInt(6);
  const seq = interestingU64(rng);
  const wrongSize = rng.chance(0.1);
  const body = packetBody(rng, type, wrongSize);
  const sealed = sealPacket(type, seq, body, protocolId, key, c.crypto);
  if (m < 12) {
    c.mode = 'valid';
    c.input = sealed;
    const r = read(sealed, key, protocolId);
    c.outcome = verdict(r);
    const want = (allowed & (1 << type)) === 0 ? 'type' : wrongSize ? 'body-size' : undefined;
    if (want !== undefined) check('drop' in r && r.drop === want, () => `type ${type} body ${body.length}: want drop '${want}', got ${show(r)}`);
    else {
      check(!('drop' in r), () => `refused a valid packet (type ${type}, sequence ${seq}, body ${body.length}): ${show(r)}`);
      if (!('drop' in r)) {
        check(r.type === type && r.sequence === seq && equal(r.body, body), () => 'a valid packet read back different values');
        checkAcceptedPacket(c, sealed, r, protocolId, key);
      }
    }
    return;
  }
  if (m < 17) {
    c.mode = 'mutated';
    c.input = mutate(rng, sealed, rng.chance(0.6), [0, 1, 2, 8]);
    const r = read(c.input, key, protocolId);
    c.outcome = verdict(r);
    check('drop' in r, () => `accepted a mutated packet (from type ${type}, sequence ${seq})`);
    return;
  }
  wrongKey(c, sealed, key, protocolId, read, 'a packet');
}

/** The case where `sealed` is read under another key or protocol id: it must be dropped. */
function wrongKey(
  c: Case, sealed: Uint8Array, key: Uint8Array, protocolId: bigint, read: (b: Uint8Array, k: Uint8Array, pid: bigint) => object, what: string,
): void {
  const { rng } = c;
  c.mode = 'wrong-key';
  c.input = sealed;
  const other = rng.chance(0.5) ? mutate(rng, key, true) : key;
  const pid = other === key ? protocolId ^ (1n << BigInt(rng.nextInt(64))) : protocolId;
  const r = read(sealed, other, pid);
  c.outcome = verdict(r);
  check('drop' in r, () => `accepted ${what} under another key or protocol id`);
}

const KINDS = Object.values(AddressedKind) as number[];
const ALL_KINDS = KINDS.reduce((m, k) => m | (1 << k), 0);
const KIND_BYTES: Record<number, number> = { 4: 8, 5: -1, 6: 0, 8: 8, 9: 8 };

/** A body for addressed kind `kind` (any byte: a kind that does not exist gets 8 bytes), of a wrong size when `wrongSize`. */
function kindBody(rng: NonCryptoRng, kind: number, wrongSize: boolean): Uint8Array {
  const want = KIND_BYTES[kind] ?? 8;
  if (want < 0) return wrongSize ? new Uint8Array(0) : bytes(rng, rng.chance(0.1) ? pick(rng, [1, MAX_PAYLOAD_BYTES]) : 1 + rng.nextInt(MAX_PAYLOAD_BYTES));
  if (!wrongSize) return bytes(rng, want);
  return bytes(rng, rng.chance(0.5) && want > 0 ? want - 1 - rng.nextInt(want) : want + 1 + rng.nextInt(20));
}

// addressed: readAddressedPacket (gamewire's type 7) with the right key, a wrong key, and a replay
// window that has or has not seen the sequence; a fresh window per read, so providers can be compared.
function fuzzAddressed(c: Case): void {
  const { rng } = c;
  const protocolId = rng.chance(0.5) ? PROTOCOL : interestingU64(rng);
  const key = rng.chance(0.5) ? PACKET_KEY : bytes(rng, KEY_BYTES);
  const allowed = rng.chance(0.6) ? ALL_KINDS : rng.nextInt(1024);
  const seen: bigint[] = [];
  const withReplay = rng.chance(0.5);
  const read = (b: Uint8Array, k: Uint8Array, pid: bigint): { kind: number; index: number; sequence: bigint; body: Uint8Array } | { drop: string } =>
    callAll(c, (crypto) => {
      const replay = withReplay || seen.length > 0 ? new ReplayProtection() : undefined;
      for (const q of seen) replay?.advance(q);
      const p = newNetcodePacket();
      const n = readAddressedPacket(b, pid, k, allowed, replay, crypto, p);
      if (n < 0) return { drop: netcodeDropReason(n) };
      check(n === p.body.length, () => `returned ${n} for a body of ${p.body.length} bytes`);
      return { kind: p.type, index: addressedIndex(b), sequence: p.sequence, body: p.body.slice() };
    });
  const m = rng.nextInt(20);
  if (m < 4) {
    c.mode = 'random';
    const b = bytes(rng, rng.nextInt(16) === 0 ? rng.nextInt(2000) : rng.nextInt(64));
    if (b.length > 0 && rng.chance(0.8)) b[0] = ((rng.chance(0.8) ? 1 + rng.nextInt(8) : rng.nextInt(16)) << 4) | (rng.chance(0.8) ? ADDRESSED_TYPE : rng.nextInt(16));
    c.input = b;
    const r = read(b, key, protocolId);
    c.outcome = verdict(r);
    check('drop' in r, () => 'accepted random bytes as an addressed packet');
    return;
  }
  const kind = rng.chance(0.9) ? pick(rng, KINDS) : rng.nextInt(256);
  const index = rng.chance(0.5) ? rng.nextInt(256) : Number(u64(rng) & 0xffffffffn);
  const seq = interestingU64(rng);
  const wrongSize = rng.chance(0.1);
  const body = kindBody(rng, kind, wrongSize);
  const out = new Uint8Array(body.length + 31);
  const sealed = out.slice(0, writeAddressedPacket(out, index, kind, seq, body, protocolId, key, c.crypto));
  check(addressedIndex(sealed) === index, () => 'addressedIndex does not give the index written');
  if (m < 10) {
    c.mode = 'valid';
    c.input = sealed;
    const r = read(sealed, key, protocolId);
    c.outcome = verdict(r);
    const want = KIND_BYTES[kind] === undefined || (allowed & (1 << kind)) === 0 ? 'type' : wrongSize ? 'body-size' : undefined;
    if (want !== undefined) check('drop' in r && r.drop === want, () => `kind ${kind} body ${body.length}: want drop '${want}', got ${show(r)}`);
    else {
      check(!('drop' in r), () => `refused a valid addressed packet (kind ${kind}, sequence ${seq}, body ${body.length}): ${show(r)}`);
      if (!('drop' in r)) check(r.kind === kind && r.index === index && r.sequence === seq && equal(r.body, body), () => 'read back different values');
    }
    return;
  }
  if (m < 12) {
    c.mode = 'replay';
    c.input = sealed;
    seen.push(rng.chance(0.5) ? seq : seq + BigInt(REPLAY_WINDOW) + BigInt(rng.nextInt(1000)));
    if (seen[0]! > U64_MAX) seen[0] = seq;
    const r = read(sealed, key, protocolId);
    c.outcome = verdict(r);
    check('drop' in r && r.drop === 'replay', () => `a sequence the window has seen or left behind was not refused as a replay: ${show(r)}`);
    return;
  }
  if (m < 17) {
    c.mode = 'mutated';
    c.input = mutate(rng, sealed, rng.chance(0.6), [0, 1, 4, 5, 6]);
    const r = read(c.input, key, protocolId);
    c.outcome = verdict(r);
    check('drop' in r, () => `accepted a mutated addressed packet (from kind ${kind}, index ${index}, sequence ${seq})`);
    return;
  }
  wrongKey(c, sealed, key, protocolId, read, 'an addressed packet');
}

/**
 * A stream of keep-alive, payload and disconnect packets (and forged copies) into one replay window:
 * accepted exactly when the reference's window would accept (not 256 or more behind the newest, not
 * accepted before); forged copies are dropped and never move the window.
 */
function fuzzReplayStream(c: Case): void {
  const { rng } = c;
  c.mode = 'replay';
  const replay = new ReplayProtection();
  const accepted = new Set<bigint>();
  let newest = 0n;
  let seq = rng.chance(0.3) ? pick(rng, EDGE_U64) : interestingU64(rng);
  const steps = 2 + rng.nextInt(40);
  const history: string[] = [];
  for (let s = 0; s < steps; s++) {
    const d = rng.nextInt(10);
    if (d < 3) seq += BigInt(rng.nextInt(17)) - 8n;
    else if (d < 5) seq += BigInt(REPLAY_WINDOW - 4 + rng.nextInt(9)) * (rng.chance(0.5) ? 1n : -1n);
    else if (d < 6) seq += BigInt(rng.nextU32());
    else if (d < 8) seq += 1n;
    seq = seq < 0n ? 0n : seq > U64_MAX ? U64_MAX : seq;
    const type = T.KeepAlive + rng.nextInt(3);
    const packet = sealPacket(type, seq, packetBody(rng, type, false), PROTOCOL, PACKET_KEY, c.crypto);
    if (rng.chance(0.3)) {
      const forged = mutate(rng, packet, true, [0, 1, 2]);
      c.input = forged;
      const r = call(c, () => packetOf(forged, PROTOCOL, PACKET_KEY, ALL_TYPES, replay, c.crypto));
      check('drop' in r, () => `accepted a forged packet in a replay stream after ${history.join(' ')}`);
      history.push(`forged(${seq})`);
    }
    const want = !(seq + BigInt(REPLAY_WINDOW) <= newest) && !accepted.has(seq);
    c.input = packet;
    const r = call(c, () => packetOf(packet, PROTOCOL, PACKET_KEY, ALL_TYPES, replay, c.crypto));
    c.outcome = verdict(r);
    history.push(`${seq}${'drop' in r ? '-' : '+'}`);
    check(!('drop' in r) === want, () => `sequence ${seq} ${want ? 'refused' : 'accepted again or too old'} (${show(r)}) after ${history.join(' ')}`);
    if (want) {
      accepted.add(seq);
      if (seq > newest) newest = seq;
    }
  }
}

function requestFrom(protocolId: bigint, expire: bigint, nonce: Uint8Array, sealed: Uint8Array): Uint8Array {
  const b = new Uint8Array(REQUEST_BYTES);
  b[0] = T.Request;
  b.set(NETCODE_VERSION_INFO, 1);
  const w = (o: number, v: bigint): void => {
    writeU32LE(b, o, Number(v & 0xffffffffn));
    writeU32LE(b, o + 4, Number(v >> 32n));
  };
  w(14, protocolId);
  w(22, expire);
  b.set(nonce, 30);
  b.set(sealed, 54);
  return b;
}

// request: the server's reader of connection requests (the private token inside is authenticated).
function fuzzRequest(c: Case): void {
  const { rng } = c;
  const m = rng.nextInt(10);
  if (m < 2) {
    c.mode = 'random';
    const b = bytes(rng, rng.chance(0.8) ? REQUEST_BYTES : rng.nextInt(2 * REQUEST_BYTES));
    const layers = rng.nextInt(4);
    if (layers >= 1 && b.length > 0) b[0] = 0;
    if (layers >= 2 && b.length >= 14) b.set(NETCODE_VERSION_INFO, 1);
    if (layers >= 3 && b.length >= 30) {
      b.set(requestFrom(PROTOCOL, 0n, new Uint8Array(0), new Uint8Array(0)).subarray(14, 22), 14);
      b[29] = 0x7f;
    }
    c.input = b;
    const r = callAll(c, (p) => requestOf(readRequestPacket(b, PROTOCOL, 1000, PRIVATE_KEY, p)));
    c.outcome = verdict(r);
    check('drop' in r, () => 'accepted random bytes as a connection request');
    return;
  }
  if (m < 4) {
    // As the reference's fuzzer does: any plaintext sealed with the right key (the issuer is trusted,
    // its contents are not assumed well formed); accepted exactly when the plaintext parses.
    c.mode = 'sealed-any-plaintext';
    const plain = bytes(rng, CONNECT_TOKEN_PRIVATE_BYTES - 16);
    if (rng.chance(0.8)) addressList(rng, plain, 16);
    const expire = rng.chance(0.2) ? U64_MAX : 2000n + BigInt(rng.nextU32());
    const nonce = bytes(rng, TOKEN_NONCE_BYTES);
    const sealed = new Uint8Array(CONNECT_TOKEN_PRIVATE_BYTES);
    const ad = requestFrom(PROTOCOL, expire, new Uint8Array(0), new Uint8Array(0)).subarray(1, 30);
    c.crypto.xseal(PRIVATE_KEY, nonce, ad, plain, sealed, 0);
    const b = requestFrom(PROTOCOL, expire, nonce, sealed);
    c.input = b;
    const r = callAll(c, (p) => requestOf(readRequestPacket(b, PROTOCOL, 1000, PRIVATE_KEY, p)));
    c.outcome = verdict(r);
    const parsed = okValue(readPrivateToken(plain));
    if (parsed === undefined) check('drop' in r && r.drop === 'token', () => `accepted a request whose plaintext does not parse: ${show(r)}`);
    else {
      check(!('drop' in r) && sameValue(r.token, parsed), () => `refused or changed a request whose plaintext parses: ${show(r)}`);
      checkPrivateBounds(rng, parsed, 'request token');
    }
    return;
  }
  const f = rng.chance(0.1) ? undefined : freshToken(rng, c.crypto);
  const pub = f?.pub ?? okValue(readConnectToken(VECTOR_TOKEN))!;
  const protocolId = f?.protocolId ?? PROTOCOL;
  const req = f === undefined ? VECTOR_REQUEST : new Uint8Array(REQUEST_BYTES);
  if (f !== undefined) writeRequestPacket(req, pub);
  const create = Number(pub.createTimestamp);
  const now = rng.chance(0.1) && pub.expireTimestamp < BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(pub.expireTimestamp) + rng.nextInt(3)
    : create + rng.nextInt(Math.max(1, Math.min(Number(pub.expireTimestamp - pub.createTimestamp), 1e9)));
  const expired = BigInt(now) >= pub.expireTimestamp;
  if (m < 6) {
    c.mode = 'valid';
    c.input = req;
    const r = callAll(c, (p) => requestOf(readRequestPacket(req, protocolId, now, PRIVATE_KEY, p)));
    c.outcome = verdict(r);
    if (expired) {
      check('drop' in r && r.drop === 'expired', () => `a request at its expire time gave ${show(r)}`);
      return;
    }
    check(!('drop' in r), () => `refused a valid request (now ${now}, create ${create}, expire ${pub.expireTimestamp}): ${show(r)}`);
    if ('drop' in r) return;
    if (f !== undefined) check(sameValue(r.token, f.priv), () => `a valid request's token is ${show(r.token)}, not ${show(f.priv)}`);
    check(r.expireTimestamp === pub.expireTimestamp && equal(r.tokenMac, pub.privateData.subarray(CONNECT_TOKEN_PRIVATE_BYTES - 16)),
      () => 'a valid request read back another expiry or token MAC');
    return;
  }
  c.mode = 'mutated';
  c.input = mutate(rng, req, rng.chance(0.85), [0, 1, 13, 14, 21, 22, 29, 30, 53, 54, REQUEST_BYTES - 16]);
  const b = c.input;
  const r = callAll(c, (p) => requestOf(readRequestPacket(b, protocolId, now, PRIVATE_KEY, p)));
  c.outcome = verdict(r);
  check('drop' in r, () => 'accepted a mutated connection request');
}

// challenge-token: the server reads back the challenge token a response echoes.
function fuzzChallengeToken(c: Case): void {
  const { rng } = c;
  const key = rng.chance(0.2) ? unhex(V.challengeToken.key) : bytes(rng, KEY_BYTES);
  const seq = interestingU64(rng);
  const clientId = u64(rng);
  const userData = bytes(rng, USER_DATA_BYTES);
  const token = rng.chance(0.1) ? unhex(V.challengeToken.encrypted) : encryptChallengeToken(clientId, userData, seq, key, c.crypto);
  const vector = token.length === CHALLENGE_TOKEN_BYTES && hex(token) === V.challengeToken.encrypted;
  const tokenKey = vector ? unhex(V.challengeToken.key) : key;
  const tokenSeq = vector ? BigInt(V.challengeToken.sequence) : seq;
  const m = rng.nextInt(10);
  let b = token;
  let k = tokenKey;
  let s = tokenSeq;
  if (m < 2) c.mode = 'valid';
  else if (m < 4) {
    c.mode = 'random';
    b = bytes(rng, rng.chance(0.8) ? CHALLENGE_TOKEN_BYTES : rng.nextInt(2 * CHALLENGE_TOKEN_BYTES));
  } else {
    c.mode = 'mutated';
    const what = rng.nextInt(8);
    if (what < 6) b = mutate(rng, token, rng.chance(0.7));
    else if (what === 6) s ^= 1n << BigInt(rng.nextInt(64));
    else k = mutate(rng, k, true);
  }
  c.input = b;
  const r = callAll(c, (p) => okValue(decryptChallengeToken(b, s, k, p)));
  c.outcome = verdict(r);
  if (m >= 2) {
    check(r === undefined, () => `accepted a ${c.mode} challenge token`);
    return;
  }
  check(r !== undefined && r.userData.length === USER_DATA_BYTES, () => 'refused a valid challenge token');
  if (!vector) check(r!.clientId === clientId && equal(r!.userData, userData), () => 'a valid challenge token read back different values');
}

// address: parseAddress (server and token addresses from configuration) and the addresses read from tokens.
const ADDRESS_CHARS = '0123456789abcdefABCDEF:.[]:::...0000';

function addressText(rng: NonCryptoRng): string {
  const port = (): string => {
    const r = rng.nextInt(8);
    if (r === 0) return pick(rng, ['', '65535', '65536', '99999', '00000', '0', '100000', '1e3', '+1', ' 1']);
    if (r === 1) return String(rng.nextInt(65536)).padStart(1 + rng.nextInt(5), '0');
    return String(rng.nextInt(65536));
  };
  if (rng.chance(0.45)) {
    const part = (): string => {
      const r = rng.nextInt(10);
      if (r === 0) return pick(rng, ['', '256', '999', '1000', '-1', '0x1', ' 1', '１']);
      if (r === 1) return String(rng.nextInt(256)).padStart(2 + rng.nextInt(2), '0');
      return String(rng.nextInt(256));
    };
    const n = rng.chance(0.8) ? 4 : rng.nextInt(7);
    return `${Array.from({ length: n }, part).join(rng.chance(0.95) ? '.' : ':')}${rng.chance(0.95) ? ':' : ''}${port()}`;
  }
  const group = (): string => {
    const r = rng.nextInt(12);
    if (r === 0) return pick(rng, ['', '10000', 'g', '-1', '1.2.3.4', '%eth0', ' ']);
    const h = rng.nextInt(65536).toString(16).padStart(rng.nextInt(5), '0');
    return rng.chance(0.3) ? h.toUpperCase() : h;
  };
  const n = rng.nextInt(10);
  const gs = Array.from({ length: n }, group);
  for (let k = rng.chance(0.7) ? 1 : rng.nextInt(3); k > 0; k--) gs.splice(rng.nextInt(gs.length + 1), 0, '');
  let h = gs.join(':');
  if (rng.chance(0.1)) h = `${h}${pick(rng, ['%eth0', '.1.2.3', ':1.2.3.4', '%25'])}`;
  return rng.chance(0.95) ? `[${h}]:${port()}` : `${h}:${port()}`;
}

/** node:net's view: `[v6]:port` or `v4:port`, an IP literal without embedded IPv4 or zone, a port of 1..5 digits ≤ 65535. */
function netAccepts(text: string): boolean {
  const m = /^(?:\[([^\]]*)\]|([^[\]:]*)):([0-9]{1,5})$/.exec(text);
  if (m === null || Number(m[3]) > 65535) return false;
  if (m[1] !== undefined) return isIPv6(m[1]) && !m[1].includes('.') && !m[1].includes('%');
  return isIPv4(m[2]!);
}

function fuzzAddress(c: Case): void {
  const { rng } = c;
  const m = rng.nextInt(10);
  let text: string;
  if (m < 2) {
    c.mode = 'from-token-bytes';
    // Addresses as a token carries them (any bytes), read back, printed, parsed again.
    const plain = new Uint8Array(CONNECT_TOKEN_PRIVATE_BYTES - 16);
    const count = 1 + rng.nextInt(MAX_SERVERS_PER_CONNECT);
    writeU32LE(plain, 12, count);
    let o = 16;
    for (let i = 0; i < count; i++) {
      const v6 = rng.chance(0.5);
      plain[o] = v6 ? 2 : 1;
      const raw = bytes(rng, v6 ? 18 : 6);
      if (v6) for (let k = 0; k < 16; k += 2) if (rng.chance(0.5)) raw[k] = raw[k + 1] = 0;
      plain.set(raw, o + 1);
      o += v6 ? 19 : 7;
    }
    c.input = plain.subarray(0, o);
    const t = call(c, () => okValue(readPrivateToken(plain)));
    check(t !== undefined && t.serverAddresses.length === count, () => 'a token\'s well-formed addresses were refused');
    for (const a of t!.serverAddresses) checkAddress(a, 'token address');
    text = addressToKey(pick(rng, t!.serverAddresses));
  } else if (m < 4) {
    c.mode = 'random-chars';
    const n = rng.nextInt(48);
    text = Array.from({ length: n }, () => (rng.chance(0.9) ? pick(rng, [...ADDRESS_CHARS]) : String.fromCharCode(rng.nextInt(0x3000)))).join('');
  } else if (m < 8) {
    c.mode = 'structured';
    text = addressText(rng);
  } else {
    c.mode = 'mutated';
    const base = new TextEncoder().encode(addressToKey(randomAddress(rng)));
    text = new TextDecoder().decode(mutate(rng, base, false, [0, base.length - 1]));
  }
  c.input = new TextEncoder().encode(text);
  const p = call(c, () => okValue(parseAddress(text)));
  c.outcome = verdict(p);
  const want = netAccepts(text);
  check((p !== undefined) === want, () => `okValue(parseAddress(${JSON.stringify(text)})) ${p === undefined ? 'refused' : 'accepted'} what node:net ${want ? 'accepts' : 'refuses'}`);
  if (p !== undefined) checkAddress(p, `okValue(parseAddress(${JSON.stringify(text)}))`);
}

const FUZZERS: Record<NetcodeFuzzTarget, (c: Case) => void> = {
  'connect-token': fuzzConnectToken,
  'private-token': fuzzPrivateToken,
  packet: fuzzPacket,
  request: fuzzRequest,
  'challenge-token': fuzzChallengeToken,
  address: fuzzAddress,
  addressed: fuzzAddressed,
};

/** Stats with nothing counted. */
export function emptyStats(): TargetStats {
  return { inputs: 0, accepted: 0, rejected: {}, modes: {}, maxMicros: 0, slowest: '', slowestSeed: 0, totalMicros: 0, micros: new Array<number>(24).fill(0) };
}

/** Run one input of `target` from its case seed; the failure it shows, or `undefined`. Counts it into `stats`. */
export function runNetcodeCase(
  target: NetcodeFuzzTarget, seed: number, providers: readonly CryptoProvider[], stats: TargetStats = emptyStats(),
): FuzzFailure | undefined {
  const rng = new NonCryptoRng(seed);
  const c: Case = {
    rng, crypto: providers[rng.nextInt(providers.length)]!, providers, differential: rng.nextInt(16) === 0, mode: '?',
    input: new Uint8Array(0), micros: 0, outcome: 'none',
  };
  try {
    FUZZERS[target](c);
  } catch (e) {
    const message = e instanceof FuzzCheck ? e.message : `harness error: ${e instanceof Error ? e.stack ?? e.message : String(e)}`;
    return { target, caseSeed: seed, mode: c.mode, message, inputHex: hex(c.input) };
  }
  stats.inputs++;
  stats.modes[c.mode] = (stats.modes[c.mode] ?? 0) + 1;
  if (c.outcome === true) stats.accepted++;
  else stats.rejected[c.outcome] = (stats.rejected[c.outcome] ?? 0) + 1;
  stats.totalMicros += c.micros;
  stats.micros[Math.min(stats.micros.length - 1, Math.max(0, Math.ceil(Math.log2(c.micros))))]!++;
  if (c.micros > stats.maxMicros) {
    stats.maxMicros = c.micros;
    stats.slowest = `${c.mode}, ${c.input.length} bytes`;
    stats.slowestSeed = seed;
  }
  return undefined;
}

/** Run `inputs` inputs round robin over the targets; stops at the first failure. */
export function runNetcodeFuzz(o: NetcodeFuzzOptions): { stats: Record<string, TargetStats>; failure: FuzzFailure | undefined; inputs: number } {
  const targets = o.targets ?? NETCODE_FUZZ_TARGETS;
  const stats: Record<string, TargetStats> = {};
  for (const t of targets) stats[t] = emptyStats();
  const every = o.progressEvery ?? 100_000;
  for (let i = 0; i < o.inputs; i++) {
    const t = targets[i % targets.length]!;
    const failure = runNetcodeCase(t, caseSeed(o.seed, i), o.providers, stats[t]);
    if (failure !== undefined) return { stats, failure, inputs: i + 1 };
    if (o.onProgress !== undefined && (i + 1) % every === 0) o.onProgress(i + 1);
  }
  return { stats, failure: undefined, inputs: o.inputs };
}
