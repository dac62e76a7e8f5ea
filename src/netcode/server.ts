import type { BlockLaneProgress } from '../connection/blocks.js';
import { Lifecycle, Phase, Timer } from '../connection/lifecycle.js';
import { Lanes, type ConnectionStats, type LanesCounters, type SessionEvents } from '../connection/session.js';
import { readU64LE, writeU32LE, writeU64LE } from '../core/bytes.js';
import { newCounters, type CounterSet } from '../core/counters.js';
import { transportOf, type Address } from '../core/endpoint.js';
import { checkConfig, isInt } from '../core/config.js';
import { GamewireError } from '../core/errors.js';
import { Host, HostEndpoint, type HostedPeer, type PeerId } from '../core/host.js';
import { cryptoRandom, type RandomSource } from '../core/random.js';
import { nobleCrypto } from '../crypto/noble.js';
import type { CryptoProvider } from '../crypto/provider.js';
import { bulkRateController, type NetcodeTransport, NETCODE_MAX_PAYLOAD_BYTES, resolvePayload, type NetcodePayloadOptions, type ResolvedPayload } from './options.js';
import { nextPayload, queueRaw, takePayload } from './payload.js';
import {
  ADDRESSED_TYPE, AddressedKind as K, BULK_SEQUENCE_BASE, addressedIndex, addressToKey, CHALLENGE_TOKEN_BYTES, decryptPrivateToken, encryptChallengeToken,
  decryptChallengeToken, KEY_BYTES, MIN_ADDRESSED_BYTES, NetcodeDrop, type NetcodeAddress, NetcodePacketType as T, newNetcodePacket,
  parseAddress, PATH_CHALLENGE_BYTES, readAddressedPacket, readConnectToken, readPacket, readRequestPacket, ReplayProtection,
  sequenceBytes, USER_DATA_BYTES, writeAddressedPacket, writePacket,
} from './wire.js';
import { TAG_BYTES } from '../crypto/provider.js';

/**
 * What `Server.checkConnectToken` found: `'ok'`, or why a request with the token would be refused
 * (`'invalid'`: not a token of this protocol and key; `'expired'`; `'wrong-server'`: this server's
 * address is not in it; `'already-connected'`: its client id is; `'used'`: a connection was made
 * with it; `'full'`: no free slot).
 */
export type TokenCheck = 'ok' | 'invalid' | 'expired' | 'wrong-server' | 'already-connected' | 'used' | 'full';

/** Options of a netcode `Server`. Times in ms unless the name says seconds. */
export interface ServerOptions extends NetcodePayloadOptions {
  /** The game's protocol id (u64): tokens for another id are ignored. */
  protocolId: bigint;
  /** The 32-byte key shared with the token issuer (never with clients). */
  privateKey: Uint8Array;
  /**
   * This server's address(es) as connect tokens list them (`"ip:port"`, `"[v6]:port"`): a request whose
   * token does not name one of them is ignored. A dual-stack server lists both.
   */
  addresses: readonly string[];
  /** Unix time in seconds at driver time `now` (ms): token expiry is judged with it. Inject it (`systemUnixTime` on Node). */
  unixTime: (now: number) => number;
  /** Most connected clients (1..65 536; default 256). A request beyond gets DENIED. */
  maxClients?: number;
  /** AEAD provider. Default `nobleCrypto` (`nodeCrypto` from `gamewire/node` is faster on Node). */
  crypto?: CryptoProvider;
  /**
   * CSPRNG for the challenge key and the first sequence of unconnected packets (drawn at
   * construction), and for the 8 bytes of each path challenge to a native client's new address.
   * Default `cryptoRandom`.
   */
  random?: RandomSource;
  /**
   * A connected client may move to another address, proven by its key (default true): a native
   * client whose address changed (addressed packets and a path challenge), a browser client to a new
   * WebSocket. false: a client stays at the address it connected from, for a server that ties a
   * client to its IP (bans, per-IP limits): addressed packets from elsewhere are dropped and counted
   * (`migrationsRefused`), `claimAddress` refuses, and the browser gateway answers a resumption 403
   * `no-migration`.
   */
  migration?: boolean;
}

/** Why a server-side client connection ended. */
export type ServerDisconnectReason = 'local' | 'peer' | 'timeout';

/** Events of a `Server`; each names its client. */
export type ServerEvent =
  | { type: 'connected'; client: ServerClient }
  | { type: 'message'; client: ServerClient; lane: number; bytes: Uint8Array }
  | { type: 'delivery'; client: ServerClient; lane: number; id: number; delivered: boolean }
  /** Raw mode: one payload packet's bytes. */
  | { type: 'payload'; client: ServerClient; bytes: Uint8Array }
  | { type: 'disconnected'; client: ServerClient; reason: ServerDisconnectReason }
  /**
   * The client now comes from `client.address` (it was at `previous`): a browser client that moved
   * to a new transport (a WebSocket resuming it) proved the new path with a fresh packet sealed with
   * its key; a native client whose address changed (a NAT rebinding, Wi-Fi to mobile) answered, from
   * the new address, the server's challenge sent there (docs/netcode.md, "gamewire extension").
   */
  | { type: 'migrated'; client: ServerClient; previous: Address }
  /**
   * The client's block lane now goes over a transport of its own at `address` (a browser client's
   * second WebSocket, proven by a fresh packet sealed with its key; `previous`: the one it replaced),
   * while its other lanes stay at `client.address`. It goes back to the client's path when that
   * transport ends.
   */
  | { type: 'bulk'; client: ServerClient; address: Address; previous: Address | undefined };

/**
 * Counter names of a `Server` (every dropped input, and what the handshake did). From connected
 * clients' addresses: `replayed` (packets refused by the replay window), `packetsDropped` (packets
 * that failed any other check: size, type, sequence bytes, decryption, body size).
 * `sendsAfterClose`: `send`/`sendRaw` calls on a client that had closed (nothing sent).
 * `migrations`: clients that moved to a new address (`migrated`); `migrationsRefused`: packets from
 * an address claiming a client (a browser transport's claim, or an addressed packet from an unknown
 * address) that named no connected client, did not authenticate under its key or were not fresh;
 * `pathChallenges`: PATH_CHALLENGEs sent to a native client's candidate address. `bulkBound`:
 * transports a client's block lane moved to (a browser client's second WebSocket, proven as a
 * resumption is); `bulkRefused`: packets from such a transport's address before it was bound that
 * named no connected client, did not authenticate or were not fresh.
 */
export type ServerCounter =
  | 'requestsDropped' | 'requestsWrongAddress' | 'requestsAlreadyConnected' | 'requestsTokenReused' | 'requestsMappingFull'
  | 'challengesSent' | 'deniedSent' | 'responsesDropped' | 'clientsConnected' | 'unknownAddress' | 'malformed'
  | 'replayed' | 'packetsDropped' | 'sendsAfterClose' | 'migrations' | 'migrationsRefused' | 'pathChallenges'
  | 'bulkBound' | 'bulkRefused';

const COUNTERS: readonly ServerCounter[] = [
  'requestsDropped', 'requestsWrongAddress', 'requestsAlreadyConnected', 'requestsTokenReused', 'requestsMappingFull',
  'challengesSent', 'deniedSent', 'responsesDropped', 'clientsConnected', 'unknownAddress', 'malformed',
  'replayed', 'packetsDropped', 'sendsAfterClose', 'migrations', 'migrationsRefused', 'pathChallenges',
  'bulkBound', 'bulkRefused',
];

/** Keep-alives go out when nothing was sent for this long (the standard's 10 Hz). */
const KEEP_ALIVE_MS = 100;
/** Redundant DISCONNECT packets sent on close. */
const DISCONNECT_COPIES = 10;
/** Bytes of a keep-alive body: client index, max clients. */
const KEEP_ALIVE_BYTES = 8;
/** Bytes of a challenge/response body: challenge sequence u64, encrypted challenge token. */
const CHALLENGE_BODY_BYTES = 8 + CHALLENGE_TOKEN_BYTES;
/** Encryption mappings per client slot, and token-history entries per client slot (the reference's ratios). */
const MAPPINGS_PER_SLOT = 4;
const HISTORY_PER_SLOT = 8;
/** At most one PATH_CHALLENGE per candidate address in this many ms. */
const PATH_CHALLENGE_INTERVAL_MS = 250;
/** What a client sends in netcode's own packets, and in addressed ones. */
const FROM_CLIENT = (1 << T.KeepAlive) | (1 << T.Payload) | (1 << T.Disconnect);
const ADDRESSED_FROM_CLIENT = (1 << K.KeepAlive) | (1 << K.Payload) | (1 << K.Disconnect) | (1 << K.PathResponse);

/**
 * The one address a native client was last seen at, other than its own, by an addressed packet
 * that authenticated under its key and was fresh; it moves there when the address echoes the
 * challenge sent to it. Made only then (one per client at most), and replaced by a newer one.
 */
interface PathCandidate {
  readonly address: Address;
  /** The 8 random bytes every challenge to this address carries. */
  readonly challenge: Uint8Array;
  /** Bytes of authenticated packets received from it, and of challenges sent to it (never more). */
  received: number;
  sent: number;
  /** When (ms) the last challenge went to it. */
  challengedAt: number;
}

/**
 * An address between its request and its response. `keys` is one buffer (each separate one costs
 * about 200 bytes of its own): client-to-server key, server-to-client key, and the MAC of the connect
 * token that made the mapping (its history key, and the associated data its challenge token is
 * sealed with, so that challenge answers no other mapping).
 */
interface Mapping {
  keys: Uint8Array;
  /** Driver time (ms) after which an unused mapping is forgotten; Infinity for tokens without timeout. */
  expiresAt: number;
  timeoutMs: number;
}

const c2sOf = (m: Mapping): Uint8Array => m.keys.subarray(0, KEY_BYTES);
const s2cOf = (m: Mapping): Uint8Array => m.keys.subarray(KEY_BYTES, 2 * KEY_BYTES);
const macOf = (m: Mapping): Uint8Array => m.keys.subarray(2 * KEY_BYTES);

/**
 * What every client of one server shares, made once by the server and handed to each client at
 * construction: the clients read this, never the server's fields.
 */
class ClientShared {
  /** Every client's payload plaintext is built here, one packet at a time (saves 1.2 KB per client). */
  readonly plain = new Uint8Array(NETCODE_MAX_PAYLOAD_BYTES);
  /** Every packet read from a client is read into this (`readPacket`), one at a time. */
  readonly packet = newNetcodePacket();
  /** Every client's received payload is opened here, one packet at a time (the session copies what it keeps); an addressed packet's kind byte comes first. */
  readonly opened = new Uint8Array(NETCODE_MAX_PAYLOAD_BYTES + 1);
  private readonly keepAlive = new Uint8Array(KEEP_ALIVE_BYTES);

  constructor(
    readonly protocolId: bigint,
    readonly crypto: CryptoProvider,
    private readonly maxClients: number,
    /** Raw mode: payloads queued per client at most. */
    readonly maxRawQueue: number,
    /** The server's counters: clients count their dropped packets and sends after close here. */
    readonly ctr: CounterSet<ServerCounter>,
    /** A client ended: the server frees its index and retires it from the host. */
    readonly released: (c: ServerClient) => void,
    /** CSPRNG for path challenges. */
    readonly random: RandomSource,
    /** Queue a datagram for an address that has no client (the host's `sendTo`). */
    readonly sendTo: (to: Address, bytes: Uint8Array) => void,
  ) {}

  /** Every path challenge is sealed here, one at a time. */
  readonly challengeOut = new Uint8Array(MIN_ADDRESSED_BYTES + 8 + PATH_CHALLENGE_BYTES);

  /** The body of a keep-alive to client slot `index` (client index, max clients), in one buffer for every client. */
  keepAliveBody(index: number): Uint8Array {
    writeU32LE(this.keepAlive, 0, index);
    writeU32LE(this.keepAlive, 4, this.maxClients);
    return this.keepAlive;
  }
}

interface HistoryEntry {
  address: Address;
  /** A connection was made with it: the token is spent (one token, one session). */
  consumed: boolean;
}

/**
 * A netcode 1.02 dedicated server (docs/netcode.md): answers connection requests that carry a valid
 * connect token from the issuer that holds `privateKey`, challenges each request's address, and
 * holds up to `maxClients` encrypted connections, each carrying gamewire's lanes (or raw payloads).
 * Sans-IO on the core `Host`: one object, many clients, one deadline heap; drive it with
 * `UdpDriver.openEndpoint` or the simulator's `World`.
 */
export class Server extends HostEndpoint<ServerClient, ServerEvent, ServerEvent, bigint> {
  readonly protocolId: bigint;
  readonly maxClients: number;
  /** Clients may move to another address (`ServerOptions.migration`). */
  readonly migration: boolean;
  private readonly privateKey: Uint8Array;
  private readonly addressKeys: Set<string>;
  private readonly unixTime: (now: number) => number;
  /** @internal */ readonly crypto: CryptoProvider;
  /** @internal */ readonly payload: ResolvedPayload;
  private readonly payloadOptions: NetcodePayloadOptions;
  // Other transports carried beside UDP (registerTransport): transport prefix (transportOf) → its clients' payload.
  private readonly transports = new Map<string, ResolvedPayload>();
  /** Connected clients by address (packets) and by client id (their key). */
  protected readonly host: Host<ServerClient, ServerEvent, bigint>;
  private readonly ctr = newCounters<ServerCounter>(COUNTERS);
  private readonly challengeKey = new Uint8Array(KEY_BYTES);
  private challengeSequence = 0n;
  private globalSequence: bigint;
  private readonly mappings = new Map<Address, Mapping>();
  private readonly history = new Map<string, HistoryEntry>();
  // Addresses claiming to be the client at an index (`claimAddress`), or its block lane's transport
  // (`claimBulk`: stored as −1 − index); bounded by maxClients.
  private readonly claims = new Map<Address, number>();
  // Connected clients by index.
  private readonly byIndex: (ServerClient | undefined)[] = [];
  // Client indexes (0..maxClients − 1, sent to each client) not in use: freed when a client ends,
  // while its host slot is held until its DISCONNECTs are out.
  private readonly freeIndexes: number[] = [];
  private readonly scratch = new Uint8Array(NETCODE_MAX_PAYLOAD_BYTES + 64);
  private readonly body = new Uint8Array(CHALLENGE_BODY_BYTES);
  private readonly shared: ClientShared;

  /** Throws `invalid-config` on bad options. */
  constructor(o: ServerOptions) {
    super();
    checkConfig(typeof o === 'object' && o !== null, 'options must be an object');
    checkConfig(typeof o.protocolId === 'bigint' && o.protocolId >= 0n && o.protocolId < 1n << 64n, 'protocolId must be a u64 bigint');
    checkConfig(o.privateKey instanceof Uint8Array && o.privateKey.length === KEY_BYTES, 'privateKey must be 32 bytes');
    checkConfig(Array.isArray(o.addresses) && o.addresses.length > 0, 'addresses must list this server\'s address(es)');
    checkConfig(typeof o.unixTime === 'function', 'unixTime must be a function of now (ms) giving unix seconds');
    const keys = new Set<string>();
    for (const a of o.addresses) {
      const p = parseAddress(a);
      checkConfig(p.ok, `address '${a}' is not ip:port`);
      keys.add(addressToKey((p as { value: NetcodeAddress }).value));
    }
    const max = o.maxClients ?? 256;
    checkConfig(isInt(max, 1, 65_536), 'maxClients must be an integer in 1..65536');
    checkConfig(o.migration === undefined || typeof o.migration === 'boolean', 'migration must be a boolean');
    this.migration = o.migration ?? true;
    this.protocolId = o.protocolId;
    this.privateKey = o.privateKey.slice();
    this.addressKeys = keys;
    this.unixTime = o.unixTime;
    this.maxClients = max;
    this.crypto = o.crypto ?? nobleCrypto;
    this.payload = resolvePayload(o);
    this.payloadOptions = o;
    const random = o.random ?? cryptoRandom;
    this.shared = new ClientShared(
      this.protocolId, this.crypto, max, this.payload.maxRawQueue, this.ctr, (c) => this.released(c), random,
      (to, bytes) => void this.host.sendTo(to, bytes),
    );
    random(this.challengeKey);
    // Every server of a token (and a restarted server) seals its challenges under the token's one
    // server-to-client key: a random start in 2^63..2^63 + 2^62 keeps their sequences apart.
    const start = new Uint8Array(8);
    random(start);
    this.globalSequence = (1n << 63n) | (readU64LE(start, 0) & ((1n << 62n) - 1n));
    for (let i = max - 1; i >= 0; i--) this.freeIndexes.push(i);
    this.host = new Host<ServerClient, ServerEvent, bigint>({
      maxPeers: max,
      route: (now, from, bytes) => this.route(now, from, bytes),
    });
  }

  /** Connected clients. */
  get size(): number {
    return this.host.liveCount;
  }

  /** The connected clients, in the order they connected (a snapshot). */
  clients(): ServerClient[] {
    return this.host.keyedIds().map((id) => this.host.get(id)!);
  }

  /** The connected client with `clientId`, if any. */
  client(clientId: bigint): ServerClient | undefined {
    const id = this.host.peerWithKey(clientId);
    return id === undefined ? undefined : this.host.get(id);
  }

  /**
   * Check a public connect token (2048 bytes) as a connection request carrying it would be checked,
   * changing nothing: for a side channel that decides before it spends anything on a client (the
   * WebRTC signalling). `now` is the driver's clock (ms). Never throws on bad bytes.
   */
  checkConnectToken(now: number, token: Uint8Array): TokenCheck {
    const r = readConnectToken(token);
    if (!r.ok || r.value.protocolId !== this.protocolId) return 'invalid';
    const pub = r.value;
    if (pub.expireTimestamp <= BigInt(Math.floor(this.unixTime(now)))) return 'expired';
    const d = decryptPrivateToken(pub.privateData, pub.protocolId, pub.expireTimestamp, pub.nonce, this.privateKey, this.crypto);
    if (!d.ok) return 'invalid';
    const t = d.value;
    if (!t.serverAddresses.some((a) => this.addressKeys.has(addressToKey(a)))) return 'wrong-server';
    if (this.host.peerWithKey(t.clientId) !== undefined) return 'already-connected';
    if (this.history.get(macKey(pub.privateData.subarray(pub.privateData.length - TAG_BYTES)))?.consumed === true) return 'used';
    if (this.host.liveCount >= this.maxClients) return 'full';
    return 'ok';
  }

  /**
   * @internal Clients whose address has the transport prefix `prefix` (`transportOf`: `"webrtc:"`)
   * come over `transport` (not UDP): their sessions count its overhead and keep payloads within its
   * datagrams. The WebRTC adapter calls it.
   */
  registerTransport(prefix: string, transport: NetcodeTransport): void {
    this.transports.set(prefix, resolvePayload(this.payloadOptions, transport));
  }

  /**
   * @internal Datagrams from `address` (a new path a transport opened, with nothing yet known of it)
   * claim to be from the client at `clientIndex`: the first one that authenticates under that
   * client's key and is fresh (its replay window) moves the client there (`migrated`); the others are
   * dropped (`migrationsRefused`). False when `maxClients` claims are open already, or without
   * `migration`. The browser gateway calls it for a WebSocket that resumes a client; `releaseClaim`
   * when that WebSocket ends.
   */
  claimAddress(address: Address, clientIndex: number): boolean {
    return this.migration && this.claim(address, clientIndex);
  }

  /**
   * @internal Datagrams from `address` (a WebSocket the client at `clientIndex` opened beside its
   * connection) claim to be that client's block-lane transport: the first one that authenticates
   * under its key and is fresh binds it (`ServerClient.bindBulk`; counted `bulkBound`), and from then
   * on the client's block lane goes there while its other lanes stay where they are; the others are
   * dropped (`bulkRefused`). One such transport per client: a newer one replaces it. False when
   * `maxClients` claims are open already. The browser gateway calls it; `releaseClaim` when that
   * WebSocket ends.
   */
  claimBulk(address: Address, clientIndex: number): boolean {
    return this.claim(address, -1 - clientIndex);
  }

  /** Record `address`'s claim (`claims`' value), unless `maxClients` claims are open already. */
  private claim(address: Address, value: number): boolean {
    if (this.claims.size >= this.maxClients && !this.claims.has(address)) return false;
    this.claims.set(address, value);
    return true;
  }

  /** @internal Forget the claim of `address`, or the block lane it carries (its transport ended, or it migrated). */
  releaseClaim(address: Address): void {
    this.claims.delete(address);
    const id = this.host.unalias(address);
    const c = id === undefined ? undefined : this.host.get(id);
    if (c?.bulkAddress === address) c.unbindBulk();
  }

  /** What a client at `address` carries. */
  private payloadFor(address: Address): ResolvedPayload {
    return this.transports.size === 0 ? this.payload : this.transports.get(transportOf(address)) ?? this.payload;
  }

  /** Disconnect every client (each is sent redundant DISCONNECTs). */
  close(): void {
    for (const c of this.clients()) c.close();
  }

  /** Copies of the server's counters and the core host's (`host`). */
  counters(): Readonly<Record<ServerCounter, number>> & { host: ReturnType<Host<ServerClient>['counters']> } {
    return { ...this.ctr, host: this.host.counters() };
  }

  /**
   * Entries held in the encryption-mapping table, the token history and the candidate addresses of
   * moving clients (each bounded by `maxClients`: at most one candidate per client).
   */
  tableSizes(): { mappings: number; history: number; candidates: number } {
    let candidates = 0;
    for (const c of this.byIndex) if (c?.candidateAddress !== undefined) candidates++;
    return { mappings: this.mappings.size, history: this.history.size, candidates };
  }

  pollEvent(): ServerEvent | undefined {
    return this.host.pollPeerEvent();
  }

  /** @internal the next sequence of a packet sent outside any connection (challenge, denied): from a random start ≥ 2^63 up. */
  nextGlobalSequence(): bigint {
    return this.globalSequence++;
  }

  /**
   * A client ended: free its index, and retire it from the host (its id and address are free at
   * once; its redundant DISCONNECTs and last events still drain before its slot is).
   */
  private released(c: ServerClient): void {
    const id = this.host.peerWithKey(c.clientId);
    if (id !== undefined && this.host.get(id) === c) this.host.remove(id);
    if (this.byIndex[c.clientIndex] === c) this.byIndex[c.clientIndex] = undefined;
    this.freeIndexes.push(c.clientIndex);
  }

  private route(now: number, from: Address, b: Uint8Array): number | undefined {
    // A client's own address, or its block lane's transport (`bindBulk`: the host's second address).
    const id = this.host.firstAt(from);
    if (id !== undefined) return id;
    if (b.length === 0) {
      this.ctr.malformed++;
      return undefined;
    }
    const claimed = this.claims.get(from);
    if (claimed !== undefined) return this.migrate(from, claimed, b);
    const type = b[0]! & 0x0f;
    if (type === T.Request && b[0] === 0) this.onRequest(now, from, b);
    else if (type === T.Response) this.onResponse(now, from, b);
    else if (type === ADDRESSED_TYPE) this.onAddressed(now, from, b);
    else this.ctr.unknownAddress++;
    return undefined;
  }

  private onRequest(now: number, from: Address, b: Uint8Array): void {
    const unix = this.unixTime(now);
    const q = readRequestPacket(b, this.protocolId, unix, this.privateKey, this.crypto);
    if (!q.ok) {
      this.ctr.requestsDropped++;
      return;
    }
    const r = q.value;
    const t = r.token;
    if (!t.serverAddresses.some((a) => this.addressKeys.has(addressToKey(a)))) {
      this.ctr.requestsWrongAddress++;
      return;
    }
    if (this.host.peerWithKey(t.clientId) !== undefined) {
      this.ctr.requestsAlreadyConnected++;
      return;
    }
    const tokenKey = macKey(r.tokenMac);
    if (!this.recordToken(tokenKey, from)) {
      this.ctr.requestsTokenReused++;
      return;
    }
    if (this.host.liveCount >= this.maxClients) {
      this.sendGlobal(from, T.Denied, new Uint8Array(0), t.serverToClientKey);
      this.ctr.deniedSent++;
      return;
    }
    if (!this.addMapping(now, from, t.clientToServerKey, t.serverToClientKey, t.timeoutSeconds, r.tokenMac)) {
      this.ctr.requestsMappingFull++;
      return;
    }
    const seq = this.challengeSequence++;
    const body = this.body;
    writeU64LE(body, 0, seq);
    body.set(encryptChallengeToken(t.clientId, t.userData, seq, this.challengeKey, this.crypto, r.tokenMac), 8);
    this.sendGlobal(from, T.Challenge, body, t.serverToClientKey);
    this.ctr.challengesSent++;
  }

  private onResponse(now: number, from: Address, b: Uint8Array): void {
    const m = this.mappings.get(from);
    if (m === undefined || now > m.expiresAt) {
      if (m !== undefined) this.mappings.delete(from);
      this.ctr.responsesDropped++;
      return;
    }
    const p = this.shared.packet;
    if (readPacket(b, this.protocolId, c2sOf(m), 1 << T.Response, undefined, this.crypto, p) < 0 || p.body.length !== CHALLENGE_BODY_BYTES) {
      this.ctr.responsesDropped++;
      return;
    }
    const seq = readU64LE(p.body, 0);
    const d = decryptChallengeToken(p.body.subarray(8), seq, this.challengeKey, this.crypto, macOf(m));
    if (!d.ok) {
      this.ctr.responsesDropped++;
      return;
    }
    const token = d.value;
    if (this.host.peerWithKey(token.clientId) !== undefined) {
      this.ctr.requestsAlreadyConnected++;
      return;
    }
    // A slot still sending its DISCONNECTs counts against the host until it is done.
    if (this.host.liveCount >= this.maxClients || this.freeIndexes.length === 0 || this.host.full) {
      this.sendGlobal(from, T.Denied, new Uint8Array(0), s2cOf(m));
      this.ctr.deniedSent++;
      return;
    }
    const index = this.freeIndexes.pop()!;
    const c = new ServerClient(this.shared, this.payloadFor(from), now, from, index, token.clientId, token.userData, m);
    this.mappings.delete(from);
    const spent = this.history.get(macKey(macOf(m)));
    if (spent !== undefined) spent.consumed = true;
    this.host.add(from, c, c.clientId);
    this.byIndex[index] = c;
    this.ctr.clientsConnected++;
  }

  /**
   * A datagram from `from`, which a transport's claim says is the client at `index`: if it
   * authenticates under that client's key and is fresh, the client moves to `from` and the datagram
   * is then its own.
   */
  private migrate(from: Address, index: number, b: Uint8Array): number | undefined {
    if (index < 0) return this.bindBulk(from, -1 - index, b);
    const id = this.claimant(index, b);
    if (id === undefined) return undefined;
    this.claims.delete(from);
    this.move(id, from);
    return id;
  }

  /**
   * A datagram from `from`, which a transport's claim says carries the block lane of the client at
   * `index`: if it authenticates under that client's key and is fresh, the client's block lane moves
   * there (from the transport it had, if any) and the datagram is then the client's own.
   */
  private bindBulk(from: Address, index: number, b: Uint8Array): number | undefined {
    const id = this.claimant(index, b, 'bulkRefused');
    if (id === undefined) return undefined;
    const c = this.host.get(id)!;
    this.claims.delete(from);
    this.host.alias(id, from);
    c.bindBulk(from, this.payloadFor(from));
    this.ctr.bulkBound++;
    return id;
  }

  /**
   * An addressed packet from `from`, an address no client has: if it authenticates under the key of
   * the client it names and is fresh, `from` becomes that client's candidate (challenged); the
   * client moves there when `from` answers the challenge. Its content is not taken before the move.
   */
  private onAddressed(now: number, from: Address, b: Uint8Array): void {
    const id = this.claimant(this.migration ? addressedIndex(b) : -1, b);
    if (id === undefined) return;
    if (!this.host.get(id)!.probe(now, from, b.length)) return;
    this.move(id, from);
    this.host.touch(id);
  }

  /**
   * The live client at `index` if `b` is a fresh packet sealed with its key
   * (`ServerClient.authenticates`, which leaves it read in the shared packet); else undefined,
   * counted in `refused`.
   */
  private claimant(index: number, b: Uint8Array, refused: 'migrationsRefused' | 'bulkRefused' = 'migrationsRefused'): PeerId | undefined {
    const c = index < 0 ? undefined : this.byIndex[index];
    const id = c === undefined ? undefined : this.host.peerWithKey(c.clientId);
    if (c === undefined || id === undefined || c.isClosed || !c.authenticates(b)) {
      this.ctr[refused]++;
      return undefined;
    }
    return id;
  }

  /** Client `id` now comes from `from`: the host's address index follows, and `migrated` is raised. */
  private move(id: PeerId, from: Address): void {
    const c = this.host.get(id)!;
    const previous = c.address;
    this.host.rebind(id, from);
    c.moved(from, previous, this.payloadFor(from));
    this.ctr.migrations++;
  }

  private sendGlobal(to: Address, type: number, body: Uint8Array, key: Uint8Array): void {
    const n = writePacket(this.scratch, type, this.nextGlobalSequence(), body, this.protocolId, key, this.crypto);
    this.host.sendTo(to, this.scratch.subarray(0, n));
  }

  /**
   * Remember a token (by its MAC) with the address that used it; false if another address used it or
   * a connection was already made with it. When the history is full, the entry first seen longest
   * ago makes room (the map keeps insertion order), as the reference does: unused tokens cannot lock
   * new players out, and a token whose entry went counts as new again.
   */
  private recordToken(key: string, from: Address): boolean {
    const seen = this.history.get(key);
    if (seen !== undefined) return seen.address === from && !seen.consumed;
    if (this.history.size >= this.maxClients * HISTORY_PER_SLOT) this.history.delete(this.history.keys().next().value!);
    this.history.set(key, { address: from, consumed: false });
    return true;
  }

  private addMapping(now: number, from: Address, c2s: Uint8Array, s2c: Uint8Array, timeoutSeconds: number, mac: Uint8Array): boolean {
    const timeoutMs = timeoutSeconds < 0 ? Infinity : timeoutSeconds * 1000;
    const existing = this.mappings.get(from);
    if (existing === undefined && this.mappings.size >= this.maxClients * MAPPINGS_PER_SLOT) {
      for (const [a, m] of this.mappings) if (now > m.expiresAt) this.mappings.delete(a);
      if (this.mappings.size >= this.maxClients * MAPPINGS_PER_SLOT) return false;
    }
    const keys = new Uint8Array(2 * KEY_BYTES + TAG_BYTES);
    keys.set(c2s, 0);
    keys.set(s2c, KEY_BYTES);
    keys.set(mac, 2 * KEY_BYTES);
    this.mappings.set(from, { keys, expiresAt: now + timeoutMs, timeoutMs });
    return true;
  }
}

/**
 * Whether a client that moved from `a` to `b` is still on the same network path: both UDP, from the
 * same IP (a NAT gave it a new port, QUIC's exception to resetting a path's estimates). Any other
 * move (a new IP, another transport, another WebSocket) is a new path.
 */
function sameNetworkPath(a: Address, b: Address): boolean {
  return transportOf(a) === '' && transportOf(b) === '' && a.slice(0, a.lastIndexOf(':')) === b.slice(0, b.lastIndexOf(':'));
}

/** Builds a server client's message and delivery events, naming it (one object per event). */
class ServerClientEvents implements SessionEvents<ServerEvent> {
  constructor(private readonly client: ServerClient) {}

  message(lane: number, bytes: Uint8Array): ServerEvent {
    return { type: 'message', client: this.client, lane, bytes };
  }

  delivery(lane: number, id: number, delivered: boolean): ServerEvent {
    return { type: 'delivery', client: this.client, lane, id, delivered };
  }
}

/**
 * One connected client of a `Server`: send on its lanes (or raw payloads), read its figures, close
 * it. Made by the server when a client answers its challenge; never constructed by users. Its
 * timers, close and events are the shared connection `Lifecycle`'s; this class is the server's end
 * of netcode's framing (sealed packets, keep-alives).
 */
export class ServerClient extends Lifecycle<ServerEvent> implements HostedPeer<ServerEvent> {
  /** The client id from its connect token (u64). */
  readonly clientId: bigint;
  /** Its slot on this server, 0..maxClients − 1. */
  readonly clientIndex: number;
  /** The 256 bytes of user data from its connect token (what the issuer put there). */
  readonly userData: Uint8Array;
  private readonly shared: ClientShared;
  private at: Address;
  private readonly c2s: Uint8Array;
  private readonly s2c: Uint8Array;
  private readonly rawQueue: Uint8Array[] = [];
  private readonly replay = new ReplayProtection();
  private sequence = 0n;
  private bulkSequence = BULK_SEQUENCE_BASE;
  private bulkAt: Address | undefined = undefined;
  // The datagram the last pollTransmit wrote goes to `bulkAt`.
  private toBulk = false;
  private confirmed = false;
  private candidate: PathCandidate | undefined = undefined;
  // Until the client confirms (its first packet), every payload to it is preceded by a keep-alive (it carries the slot).
  private keepAliveOwed = true;

  /** @internal */
  constructor(shared: ClientShared, payload: ResolvedPayload, now: number, address: Address, index: number, clientId: bigint, userData: Uint8Array, m: Mapping) {
    super(DISCONNECT_COPIES, m.timeoutMs, now, Phase.Handshake);
    this.shared = shared;
    this.at = address;
    this.clientIndex = index;
    this.clientId = clientId;
    // One buffer per client for its keys and user data (each separate buffer costs ~200 bytes of its own).
    const b = new Uint8Array(2 * KEY_BYTES + USER_DATA_BYTES);
    b.set(c2sOf(m), 0);
    b.set(s2cOf(m), KEY_BYTES);
    b.set(userData.subarray(0, USER_DATA_BYTES), 2 * KEY_BYTES);
    this.c2s = b.subarray(0, KEY_BYTES);
    this.s2c = b.subarray(KEY_BYTES, 2 * KEY_BYTES);
    this.userData = b.subarray(2 * KEY_BYTES);
    // Client → server blocks are chunk session 1, server → client 2 (netcode already authenticates).
    if (payload.session !== undefined) this.session = new Lanes(payload.session, payload.maxPayloadBytes, 1, 2, new ServerClientEvents(this));
    this.open();
    this.push({ type: 'connected', client: this });
  }

  /** True once closed (locally, by the peer, or by timeout). */
  get isClosed(): boolean {
    return this.ended;
  }

  /** Its address (it changes when the client migrates: the `migrated` event). */
  get address(): Address {
    return this.at;
  }

  /** @internal The transport its block lane moved to (`Server.claimBulk`), if any. */
  get bulkAddress(): Address | undefined {
    return this.bulkAt;
  }

  /**
   * @internal Its block lane now goes to `address`, a transport of its own whose clients carry
   * `payload` (a WebSocket: its overhead, reliable, and the rate it leaves to TCP, `holdBulk`), on a
   * path of its own; the other lanes stay. In raw mode, or without a block lane, only its packets are
   * taken from there.
   */
  bindBulk(address: Address, payload: ResolvedPayload): void {
    const previous = this.bulkAt;
    this.bulkAt = address;
    this.session?.bindBulk(payload.session!, bulkRateController(payload));
    this.push({ type: 'bulk', client: this, address, previous });
  }

  /**
   * @internal Its block lane's transport holds more than it lets wait (`held`): the lane's slices
   * wait (acks still go); call again with false once it drains.
   */
  holdBulk(held: boolean): void {
    if (this.session?.holdBulk(held) === true) this.wake();
  }

  /** @internal Its block lane's transport ended: the lane goes back to the client's path. */
  unbindBulk(): void {
    this.bulkAt = undefined;
    this.session?.unbindBulk();
    this.wake();
  }

  /** @internal Where the datagram the last `pollTransmit` wrote goes, when not `address`. */
  transmitAddress(): Address | undefined {
    return this.toBulk ? this.bulkAt : undefined;
  }

  /** @internal The address it may be moving to (a `PathCandidate`), if any. */
  get candidateAddress(): Address | undefined {
    return this.candidate?.address;
  }

  /**
   * @internal True if `b` is a packet of this client: sealed with its key, fresh, of a type a
   * connected client sends (netcode's, or addressed with its index). Changes nothing; the packet is
   * left read in the shared packet struct.
   */
  authenticates(b: Uint8Array): boolean {
    return this.read(b, undefined) >= 0 && !this.replay.alreadyReceived(this.shared.packet.sequence);
  }

  /**
   * @internal `authenticates(b)` has just passed for `b` (`length` bytes), an addressed packet from
   * `from`, an address no client has: it is taken into the replay window (so it cannot be replayed
   * from elsewhere), `from` becomes the candidate (a new one, with new challenge bytes, if it was
   * another), and a PATH_CHALLENGE goes there if none did in the last 250 ms and the challenge's
   * bytes keep what was sent there within what came from it. True when the packet is the
   * candidate's PATH_RESPONSE echoing the challenge: the server then moves the client to `from`.
   * Nothing else in the packet is taken (its lanes resend what it carried).
   */
  probe(now: number, from: Address, length: number): boolean {
    const s = this.shared;
    const p = s.packet;
    this.replay.advance(p.sequence);
    this.accepted(length);
    let c = this.candidate;
    if (c === undefined || c.address !== from) {
      const challenge = new Uint8Array(PATH_CHALLENGE_BYTES);
      s.random(challenge);
      c = this.candidate = { address: from, challenge, received: 0, sent: 0, challengedAt: -Infinity };
    }
    c.received += length;
    if (p.type === K.PathResponse && sameBytes(p.body, c.challenge)) {
      this.heard(now);
      return true;
    }
    const size = MIN_ADDRESSED_BYTES - 1 + sequenceBytes(this.sequence) + PATH_CHALLENGE_BYTES;
    if (now - c.challengedAt >= PATH_CHALLENGE_INTERVAL_MS && c.sent + size <= c.received) {
      const n = writeAddressedPacket(s.challengeOut, this.clientIndex, K.PathChallenge, this.sequence++, c.challenge, s.protocolId, this.s2c, s.crypto);
      s.sendTo(from, s.challengeOut.subarray(0, n));
      c.sent += n;
      c.challengedAt = now;
      s.ctr.pathChallenges++;
    }
    return false;
  }

  /** @internal The server moved it to `address` (from `previous`), whose clients carry `payload`. */
  moved(address: Address, previous: Address, payload: ResolvedPayload): void {
    this.at = address;
    this.candidate = undefined;
    // A session exists only when not raw, and every transport's payload is raw or not alike.
    if (!sameNetworkPath(previous, address)) this.session?.newPath(payload.session!);
    this.push({ type: 'migrated', client: this, previous });
  }

  /**
   * Queue `bytes` on lane `lane` (see `Connection.send`); returns its id on the lane (≥ 0). Once the
   * client has closed (locally, by its DISCONNECT, or by timeout) nothing is queued: returns −1 and
   * counts `sendsAfterClose` in the server's counters, so answering an event that arrived together
   * with the client's DISCONNECT is safe. Throws `invalid-state` in raw mode (use `sendRaw`), and the
   * lane's errors while open.
   */
  send(lane: number, bytes: Uint8Array, notice = false): number {
    if (this.session === undefined) throw new GamewireError('invalid-state', 'raw mode: use sendRaw');
    return this.sendOnLane(lane, bytes, notice);
  }

  /**
   * Raw mode: queue one payload packet of `bytes` (1..1200, copied); true. Once the client has closed,
   * nothing is queued: false, counted as `sendsAfterClose` (as `send`). Throws `invalid-state` (not
   * raw), and while open `message-too-large`, `queue-full`.
   */
  sendRaw(bytes: Uint8Array): boolean {
    if (this.session !== undefined) throw new GamewireError('invalid-state', 'not raw mode: use send(lane, bytes)');
    if (this.sendRefused()) return false;
    queueRaw(this.rawQueue, bytes, this.shared.maxRawQueue);
    this.wake();
    return true;
  }

  /** See `Connection.cancel`; false once the client has closed (its blocks were dropped with it). */
  cancel(lane: number, id: number): boolean {
    if (this.session === undefined) throw new GamewireError('invalid-state', 'raw mode has no lanes');
    return this.cancelOnLane(lane, id);
  }

  /** Progress of the block lane both ways, or undefined (none, or raw mode). */
  blockProgress(now: number = this.now): BlockLaneProgress | undefined {
    return this.session?.blockProgress(now);
  }

  /**
   * The session's figures at `now` (ms), with what crossed the wire since the client connected
   * (`WireCounts`: whole sealed packets; the handshake before it was the server's); undefined in raw mode.
   */
  stats(now: number = this.now): ConnectionStats | undefined {
    return this.sessionStats(now);
  }

  /** The session's counters (undefined in raw mode). */
  counters(): LanesCounters | undefined {
    return this.session?.counters();
  }

  /** Disconnect: raise `'disconnected'` (`local`) and send redundant DISCONNECT packets. Idempotent. */
  close(): void {
    if (this.ended) return;
    this.finish('local', true);
    this.wake();
  }

  /** True once closed: the host then retires the client (and drains its DISCONNECTs). */
  finished(): boolean {
    return this.ended;
  }

  handleDatagram(now: number, b: Uint8Array): void {
    this.tick(now);
    if (this.ended) return;
    const p = this.shared.packet;
    const n = this.read(b, this.replay);
    if (n < 0) {
      this.shared.ctr[n === NetcodeDrop.replay ? 'replayed' : 'packetsDropped']++;
      return;
    }
    this.accepted(b.length);
    this.heard(now);
    if (p.type === T.Disconnect) {
      this.finish('peer', false);
      return;
    }
    this.confirmed = true;
    if (p.type !== T.Payload) return;
    if (!takePayload(now, this.session, p.body, 1)) this.push({ type: 'payload', client: this, bytes: p.body.slice() });
  }

  /**
   * Read one of its packets into the shared packet struct: netcode's types 4..6, or an addressed
   * packet naming its index (keep-alive, payload, disconnect, path response; the kinds of the first
   * three equal their types). `readPacket`'s result.
   */
  private read(b: Uint8Array, replay: ReplayProtection | undefined): number {
    const s = this.shared;
    if (b.length === 0 || (b[0]! & 0x0f) !== ADDRESSED_TYPE) return readPacket(b, s.protocolId, this.c2s, FROM_CLIENT, replay, s.crypto, s.packet, s.opened);
    if (addressedIndex(b) !== this.clientIndex) return NetcodeDrop.type;
    return readAddressedPacket(b, s.protocolId, this.c2s, ADDRESSED_FROM_CLIENT, replay, s.crypto, s.packet, s.opened);
  }

  pollTransmit(now: number, out: Uint8Array): number | undefined {
    this.toBulk = false;
    return this.transmit(now, out);
  }

  protected override onTimer(_now: number, timer: number): void {
    if (timer === Timer.Idle) this.finish('timeout', false);
  }

  protected override write(now: number, out: Uint8Array): number | undefined {
    if (this.keepAliveOwed && !this.confirmed) {
      this.keepAliveOwed = false;
      return this.seal(out, T.KeepAlive, this.shared.keepAliveBody(this.clientIndex));
    }
    const plain = this.shared.plain;
    const n = nextPayload(now, this.session, this.rawQueue, plain);
    if (n !== undefined) {
      this.keepAliveOwed = !this.confirmed;
      return this.seal(out, T.Payload, plain.subarray(0, n));
    }
    const bulk = this.bulkAt === undefined ? undefined : this.session?.writeBulk(now, plain);
    if (bulk !== undefined) {
      plain[0] = this.session!.writtenKind;
      this.toBulk = true;
      return writePacket(out, T.Payload, this.bulkSequence++, plain.subarray(0, bulk), this.shared.protocolId, this.s2c, this.shared.crypto);
    }
    if (this.timers.expired(Timer.KeepAlive, now)) return this.seal(out, T.KeepAlive, this.shared.keepAliveBody(this.clientIndex));
    return undefined;
  }

  protected override writeDisconnect(out: Uint8Array): number {
    return this.seal(out, T.Disconnect, this.shared.plain.subarray(0, 0));
  }

  protected override sentAfterClose(): void {
    this.shared.ctr.sendsAfterClose++;
  }

  private seal(out: Uint8Array, type: number, body: Uint8Array): number {
    const n = writePacket(out, type, this.sequence++, body, this.shared.protocolId, this.s2c, this.shared.crypto);
    this.timers.set(Timer.KeepAlive, this.now + KEEP_ALIVE_MS);
    return n;
  }

  private finish(reason: ServerDisconnectReason, tellPeer: boolean): void {
    this.rawQueue.length = 0;
    this.end(tellPeer, { type: 'disconnected', client: this, reason });
    this.shared.released(this);
  }
}

/** Whether two byte arrays hold the same bytes. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

/** A token's MAC as a map key: one flat 16-character string (a hex string built by `+=` is a tree of a dozen pieces). */
function macKey(b: Uint8Array): string {
  return String.fromCharCode(...b);
}
