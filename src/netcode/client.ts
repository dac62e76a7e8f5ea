import type { BlockLaneProgress } from '../connection/blocks.js';
import { Lifecycle, Phase, Timer } from '../connection/lifecycle.js';
import { Lanes, type ConnectionStats, type LanesCounters, type SessionEvents } from '../connection/session.js';
import { readU32LE } from '../core/bytes.js';
import { newCounters } from '../core/counters.js';
import type { Address, Endpoint, Transmit } from '../core/endpoint.js';
import { checkConfig, isNum, isObject } from '../core/config.js';
import { checkArg, GamewireError } from '../core/errors.js';
import { nobleCrypto } from '../crypto/noble.js';
import type { RateController } from '../congestion/controller.js';
import type { CryptoProvider } from '../crypto/provider.js';
import { bulkRateController, type NetcodeTransport, NETCODE_MAX_PAYLOAD_BYTES, resolvePayload, type NetcodePayloadOptions, type ResolvedPayload } from './options.js';
import { nextPayload, queueRaw, takePayload } from './payload.js';
import {
  ADDRESSED_TYPE, AddressedKind as K, addressedIndex, BULK_SEQUENCE_BASE, addressToKey, type ConnectTokenPublic, NetcodeDrop, NetcodePacketType as T,
  newNetcodePacket, PATH_CHALLENGE_BYTES, readAddressedPacket, readConnectToken, readPacket, ReplayProtection, writeAddressedPacket, writePacket,
  writeRequestPacket,
} from './wire.js';

/**
 * States of a netcode `Client` (the standard's, named). Negative ones in the standard are the
 * failures: `token-expired`, `invalid-token`, `connection-timed-out`, `response-timed-out`,
 * `request-timed-out`, `denied`. `disconnected` is the start and the end of a clean close.
 */
export type ClientState =
  | 'token-expired'
  | 'invalid-token'
  | 'connection-timed-out'
  | 'response-timed-out'
  | 'request-timed-out'
  | 'denied'
  | 'disconnected'
  | 'sending-request'
  | 'sending-response'
  | 'connected';

/** The standard's numbers for each state (−6..3). */
export const CLIENT_STATE_CODES: Readonly<Record<ClientState, number>> = {
  'token-expired': -6,
  'invalid-token': -5,
  'connection-timed-out': -4,
  'response-timed-out': -3,
  'request-timed-out': -2,
  denied: -1,
  disconnected: 0,
  'sending-request': 1,
  'sending-response': 2,
  connected: 3,
};

/** Why a client's connection ended (or never started): a failure state, the server's DISCONNECT, or `close()`. */
export type ClientDisconnectReason = Exclude<ClientState, 'disconnected' | 'sending-request' | 'sending-response' | 'connected'> | 'peer' | 'local';

/** Events of a `Client`. */
export type ClientEvent =
  | { type: 'state'; state: ClientState }
  | { type: 'connected'; clientIndex: number; maxClients: number }
  | { type: 'message'; lane: number; bytes: Uint8Array }
  | { type: 'delivery'; lane: number; id: number; delivered: boolean }
  /** Raw mode: one payload packet's bytes. */
  | { type: 'payload'; bytes: Uint8Array }
  | { type: 'disconnected'; reason: ClientDisconnectReason };

/** Options of a netcode `Client`. */
export interface ClientOptions extends NetcodePayloadOptions {
  /** AEAD provider. Default `nobleCrypto`. */
  crypto?: CryptoProvider;
  /**
   * Survive a change of this client's address (a NAT rebinding, Wi-Fi to mobile) on a gamewire
   * server (docs/netcode.md, "gamewire extension: moving a client to a new address"): once connected
   * and nothing has been heard from the server for `migrateAfterMs`, every other packet goes out as
   * an addressed packet (type 7, naming the client's slot; a netcode 1.02 server drops those and
   * still gets the others), each PATH_CHALLENGE the server sends is answered, and packets go back to
   * netcode's form once the server is heard again. The client never learns its own address. Default
   * true over UDP; false over the browser's transports, which resume a client by their own means.
   */
  migration?: boolean;
  /** With `migration`: ms of silence from the server (connected) before packets alternate to the addressed form (1..3 600 000; default 1000). */
  migrateAfterMs?: number;
}

/**
 * Counter names of a `Client`: packets dropped, by why (`wrongAddress`: not from the server being
 * tried; `replayed`: refused by the replay window; `dropped`: failed any other check, an addressed
 * packet without `migration` included; `unexpected`: a valid packet of a type this state does not
 * take); `sendsAfterClose`: `send`/`sendRaw` calls after the connection had ended (nothing sent);
 * `addressedSent`: packets sent in the addressed form (`migration`), path responses included;
 * `pathChallenges`: the server's path challenges received (the next packet out answers the latest).
 */
export type ClientCounter = 'wrongAddress' | 'replayed' | 'dropped' | 'unexpected' | 'sendsAfterClose' | 'addressedSent' | 'pathChallenges';

/** Requests, responses and keep-alives go out this often (the standard's 10 Hz). */
const SEND_INTERVAL_MS = 100;
/** Redundant DISCONNECT packets sent on close. */
const DISCONNECT_COPIES = 10;
const CHALLENGE_BODY_BYTES = 308;

/** A client's message and delivery events carry no tag: one client, one connection. */
const CLIENT_EVENTS: SessionEvents<ClientEvent> = {
  message: (lane, bytes) => ({ type: 'message', lane, bytes }),
  delivery: (lane, id, delivered) => ({ type: 'delivery', lane, id, delivered }),
};

/**
 * A netcode 1.02 client (docs/netcode.md): connects with a connect token from your web backend,
 * trying each server address in the token in turn, and then carries gamewire's lanes (or raw
 * payloads) over the encrypted connection. Sans-IO: an `Endpoint` for `UdpDriver.openEndpoint` or
 * the simulator's `World`. One connection at a time; `connect` again with a new token after it ends.
 * Its timers, close and events are the shared connection `Lifecycle`'s; this class is the client's
 * end of netcode's framing and its request/challenge/response handshake.
 */
export class Client extends Lifecycle<ClientEvent> implements Endpoint<ClientEvent> {
  private readonly crypto: CryptoProvider;
  private readonly options: ClientOptions;
  private payload: ResolvedPayload;
  private readonly ctr = newCounters<ClientCounter>(['wrongAddress', 'replayed', 'dropped', 'unexpected', 'sendsAfterClose', 'addressedSent', 'pathChallenges']);
  private readonly migration: boolean;
  private readonly migrateAfterMs: number;
  // When the server was last heard (a keep-alive or payload; a path challenge does not count: it
  // means the server has not moved this client yet).
  private serverHeardAt = 0;
  // After a silence, packets alternate: the next one goes addressed when true.
  private addressedNext = false;
  // A PATH_CHALLENGE's bytes to echo, owed when `responseOwed`.
  private readonly pathResponse = new Uint8Array(PATH_CHALLENGE_BYTES);
  private responseOwed = false;
  private state_: ClientState = 'disconnected';
  private token: ConnectTokenPublic | undefined;
  private serverIndex = 0;
  private server: Address | undefined;
  private readonly rawQueue: Uint8Array[] = [];
  private replay = new ReplayProtection();
  private readonly plain = new Uint8Array(NETCODE_MAX_PAYLOAD_BYTES);
  /** Every packet's body is opened here, one at a time (what is kept is copied out); an addressed packet's kind byte comes first. */
  private readonly opened = new Uint8Array(NETCODE_MAX_PAYLOAD_BYTES + 1);
  private readonly packet = newNetcodePacket();
  private readonly challenge = new Uint8Array(CHALLENGE_BODY_BYTES);
  private readonly tx: Transmit = { length: 0, to: '' };
  private sequence = 0n;
  private bulkSequence = BULK_SEQUENCE_BASE;
  // The block lane's own transport (`bindBulk`), and whether it is still to be proven with a keep-alive.
  private bulkAt: Address | undefined = undefined;
  private bulkHelloOwed = false;
  // The datagram the last pollTransmit wrote goes to `bulkAt`.
  private toBulk = false;
  // The client-to-server key `sequence` counts under: every server of a token shares it.
  private sequenceKey = '';
  private clientIndex = -1;
  private maxClients = 0;
  // The request (or response) is owed at once: a new server to try, or a challenge just answered.
  private handshakeOwed = false;
  // The token's timeout (ms): per handshake state, and for silence once connected.
  private timeoutMs = 0;
  // The connection of the last `connect` was made (it may have ended since).
  private wasConnected = false;

  /**
   * Throws `invalid-config` on bad options. `transport` (internal): what carries the packets when it is
   * not UDP (the WebRTC transport passes its own, for the path's overhead and the largest payload).
   */
  constructor(o: ClientOptions = {}, transport?: NetcodeTransport) {
    checkConfig(isObject(o), 'options must be an object');
    super(DISCONNECT_COPIES, 0, 0, Phase.Closed);
    this.crypto = o.crypto ?? nobleCrypto;
    this.payload = resolvePayload(o, transport);
    this.options = o;
    const migration = o.migration ?? transport === undefined;
    checkConfig(typeof migration === 'boolean', 'migration must be a boolean');
    const migrateAfterMs = o.migrateAfterMs ?? 1000;
    checkConfig(isNum(migrateAfterMs, 1, 3_600_000), 'migrateAfterMs must be a number of ms in 1..3600000');
    this.migration = migration;
    this.migrateAfterMs = migrateAfterMs;
  }

  /**
   * @internal The packets go over a new `transport` from now on (a browser client moved to a new
   * WebSocket): the session takes the settings that transport wants (redundancy, ack delay, overhead,
   * whether it delivers everything) and its path's estimates start over, as the server's do when it
   * sees the move.
   */
  changeTransport(transport: NetcodeTransport): void {
    this.payload = resolvePayload(this.options, transport);
    this.session?.newPath(this.payload.session!);
  }

  /**
   * @internal Its block lane goes over a transport of its own from now on, reached at `address` (a
   * second WebSocket to the server, named as the caller likes): its first packet there, a keep-alive
   * sealed with the client's key, proves it to the server (`Server.claimBulk`), and the lane's slices
   * and acks then go there on a path of its own with `transport`'s overhead and reliability and
   * `rateController` (default: a `FixedRate` at `transport.bulkRateBytesPerSec`, held back with
   * `holdBulk`, else `AdaptiveRate`). The other lanes stay. False (nothing changes) unless connected
   * with a block lane.
   */
  bindBulk(address: Address, transport: NetcodeTransport, rateController?: RateController): boolean {
    if (this.state_ !== 'connected' || this.session === undefined) return false;
    const payload = resolvePayload(this.options, transport);
    if (!this.session.bindBulk(payload.session!, rateController ?? bulkRateController(payload))) return false;
    this.bulkAt = address;
    this.bulkHelloOwed = true;
    this.wake();
    return true;
  }

  /** @internal The block lane's transport ended: the lane shares the client's path again. */
  unbindBulk(): void {
    if (this.bulkAt === undefined) return;
    this.bulkAt = undefined;
    this.bulkHelloOwed = false;
    this.session?.unbindBulk();
    this.wake();
  }

  /**
   * @internal The block lane's transport holds more than it lets wait (`held`): its slices wait
   * (acks still go); call again with false once it drains.
   */
  holdBulk(held: boolean): void {
    if (this.session?.holdBulk(held) === true) this.wake();
  }

  /** @internal True when its lanes include a block lane (`bindBulk` has something to move). */
  get hasBlockLane(): boolean {
    return this.payload.session?.block !== undefined;
  }

  /** The current state. */
  get state(): ClientState {
    return this.state_;
  }

  /** This client's slot on the server once connected (else −1), and the server's max clients. */
  get slot(): { clientIndex: number; maxClients: number } {
    return { clientIndex: this.clientIndex, maxClients: this.maxClients };
  }

  /** The server address being tried or connected to. */
  get serverAddress(): Address | undefined {
    return this.server;
  }

  /**
   * Start connecting at `now` (ms) with a 2048-byte connect token. An invalid token ends at once in
   * `invalid-token` (a `'disconnected'` event). The packet sequence starts at 0 for a new token and
   * goes on from the last `connect` for the same token (its key), so no nonce is used twice. Throws
   * `invalid-state` unless disconnected (or failed).
   */
  connect(now: number, token: Uint8Array): void {
    checkArg(typeof now === 'number' && Number.isFinite(now), 'now must be a finite number of ms');
    checkArg(token instanceof Uint8Array, 'token must be a Uint8Array');
    if (CLIENT_STATE_CODES[this.state_] > 0) throw new GamewireError('invalid-state', `client is ${this.state_}`);
    const r = readConnectToken(token);
    const t = r.ok ? r.value : undefined;
    this.timeoutMs = t === undefined || t.timeoutSeconds < 0 ? Infinity : t.timeoutSeconds * 1000;
    this.restart(now, this.timeoutMs);
    this.token = undefined;
    this.server = undefined;
    this.rawQueue.length = 0;
    this.clientIndex = -1;
    this.maxClients = 0;
    this.wasConnected = false;
    this.addressedNext = false;
    this.responseOwed = false;
    if (t === undefined) {
      this.fail('invalid-token');
      this.wake();
      return;
    }
    this.token = t;
    const key = String.fromCharCode(...t.clientToServerKey);
    if (key !== this.sequenceKey) {
      this.sequenceKey = key;
      this.sequence = 0n;
      this.bulkSequence = BULK_SEQUENCE_BASE;
    }
    this.bulkAt = undefined;
    this.bulkHelloOwed = false;
    this.timers.set(Timer.TokenExpiry, now + Number(t.expireTimestamp - t.createTimestamp) * 1000);
    this.serverIndex = 0;
    this.tryServer(now);
    this.wake();
  }

  /**
   * Queue `bytes` on lane `lane` (see `Connection.send`); returns its id on the lane (≥ 0). Once the
   * connection has ended (`close()`, the server's DISCONNECT, a timeout), nothing is queued: returns
   * −1 and counts `sendsAfterClose`, so answering a message that arrived together with the server's
   * DISCONNECT is safe. Throws `invalid-state` in raw mode and before the connection is made, and the
   * lane's errors while connected.
   */
  send(lane: number, bytes: Uint8Array, notice = false): number {
    if (this.payload.raw) throw new GamewireError('invalid-state', 'raw mode: use sendRaw');
    if (!this.wasConnected) throw new GamewireError('invalid-state', `client is ${this.state_}`);
    return this.sendOnLane(lane, bytes, notice);
  }

  /**
   * Raw mode: queue one payload of 1..1200 bytes (copied); true. Once the connection has ended,
   * nothing is queued: false, counted as `sendsAfterClose` (as `send`). Throws `invalid-state` (not
   * raw, or before the connection is made), and while connected `message-too-large`, `queue-full`.
   */
  sendRaw(bytes: Uint8Array): boolean {
    if (!this.payload.raw) throw new GamewireError('invalid-state', 'not raw mode');
    if (!this.wasConnected) throw new GamewireError('invalid-state', `client is ${this.state_}`);
    if (this.sendRefused()) return false;
    queueRaw(this.rawQueue, bytes, this.payload.maxRawQueue);
    this.wake();
    return true;
  }

  /** See `Connection.cancel`; false once the connection has ended (its blocks were dropped with it). */
  cancel(lane: number, id: number): boolean {
    if (this.session === undefined) throw new GamewireError('invalid-state', 'no lanes (not connected, or raw mode)');
    return this.cancelOnLane(lane, id);
  }

  /** Progress of the block lane both ways, or undefined. */
  blockProgress(now: number = this.now): BlockLaneProgress | undefined {
    return this.session?.blockProgress(now);
  }

  /**
   * The session's figures at `now` (ms) once connected with lanes (kept after the end until the next
   * `connect`), with what crossed the wire since the latest `connect` (`WireCounts`: whole packets,
   * the handshake's included); else undefined.
   */
  stats(now: number = this.now): ConnectionStats | undefined {
    return this.sessionStats(now);
  }

  /** Copies of the client's drop counters and, with lanes, the session's (`session`). */
  counters(): Readonly<Record<ClientCounter, number>> & { session: LanesCounters | undefined } {
    return { ...this.ctr, session: this.session?.counters() };
  }

  /** Disconnect: redundant DISCONNECT packets if connected, then `disconnected` (`local`). Idempotent. */
  close(): void {
    if (CLIENT_STATE_CODES[this.state_] <= 0) return;
    this.finish('disconnected', 'local', this.phase === Phase.Open);
    this.wake();
  }

  handleDatagram(now: number, from: Address, b: Uint8Array): void {
    this.tick(now);
    if (this.ended) return;
    if (from !== this.server && from !== this.bulkAt) {
      this.ctr.wrongAddress++;
      return;
    }
    const state = this.state_;
    const t = this.token!;
    if (b.length > 0 && (b[0]! & 0x0f) === ADDRESSED_TYPE) {
      this.onAddressed(now, b);
      return;
    }
    const allowed = state === 'connected'
      ? (1 << T.KeepAlive) | (1 << T.Payload) | (1 << T.Disconnect)
      : (1 << T.Denied) | (1 << T.Challenge) | (1 << T.KeepAlive);
    const p = this.packet;
    const n = readPacket(b, t.protocolId, t.serverToClientKey, allowed, this.replay, this.crypto, p, this.opened);
    if (n < 0) {
      this.ctr[n === NetcodeDrop.replay ? 'replayed' : 'dropped']++;
      return;
    }
    this.accepted(b.length);
    switch (p.type) {
      case T.Denied:
        this.nextServerOr(now, 'denied');
        return;
      case T.Challenge:
        if (state !== 'sending-request') break;
        this.challenge.set(p.body);
        this.heard(now);
        this.setState(now, 'sending-response');
        this.handshakeOwed = true;
        this.timers.stop(Timer.Resend);
        return;
      case T.KeepAlive:
        this.heard(now);
        this.serverHeardAt = now;
        if (state === 'sending-response') {
          this.clientIndex = readU32LE(p.body, 0);
          this.maxClients = readU32LE(p.body, 4);
          if (this.payload.session !== undefined) this.session = new Lanes(this.payload.session, this.payload.maxPayloadBytes, 1, 1, CLIENT_EVENTS);
          // Keep-alives go on from the last response sent.
          this.timers.set(Timer.KeepAlive, this.timers.get(Timer.Resend) ?? now);
          this.open();
          this.setState(now, 'connected');
          this.wasConnected = true;
          this.push({ type: 'connected', clientIndex: this.clientIndex, maxClients: this.maxClients });
        }
        return;
      case T.Payload:
        this.heard(now);
        this.serverHeardAt = now;
        if (!takePayload(now, this.session, p.body, 2) && this.payload.raw) this.push({ type: 'payload', bytes: p.body.slice() });
        return;
      case T.Disconnect:
        this.finish('disconnected', 'peer', false);
        return;
      default:
    }
    this.ctr.unexpected++;
  }

  pollTransmit(now: number, out: Uint8Array): Transmit | undefined {
    this.toBulk = false;
    const n = this.transmit(now, out);
    if (n === undefined) return undefined;
    this.tx.length = n;
    if (this.toBulk) {
      this.tx.to = this.bulkAt!;
      return this.tx;
    }
    const phase = this.phase;
    if (phase !== Phase.Closed) this.timers.set(phase === Phase.Open ? Timer.KeepAlive : Timer.Resend, now + SEND_INTERVAL_MS);
    this.tx.to = this.server!;
    return this.tx;
  }

  protected override onTimer(now: number, timer: number): void {
    if (timer === Timer.Idle) this.finish('connection-timed-out', 'connection-timed-out', false);
    else if (timer === Timer.TokenExpiry) this.fail('token-expired');
    else if (timer === Timer.Handshake) this.nextServerOr(now, this.state_ === 'sending-request' ? 'request-timed-out' : 'response-timed-out');
  }

  protected override write(now: number, out: Uint8Array): number | undefined {
    const t = this.token!;
    switch (this.state_) {
      case 'sending-request':
      case 'sending-response':
        if (!this.handshakeOwed && !this.timers.expired(Timer.Resend, now)) return undefined;
        this.handshakeOwed = false;
        return this.state_ === 'sending-request' ? writeRequestPacket(out, t) : this.seal(out, T.Response, this.challenge);
      default: {
        if (this.responseOwed) {
          this.responseOwed = false;
          return this.sealAddressed(out, K.PathResponse, this.pathResponse);
        }
        const n = nextPayload(now, this.session, this.rawQueue, this.plain);
        if (n !== undefined) return this.sealConnected(now, out, T.Payload, this.plain.subarray(0, n));
        if (this.bulkAt !== undefined) {
          const b = this.bulkHelloOwed ? 0 : this.session!.writeBulk(now, this.plain);
          if (b !== undefined) return this.sealBulk(out, b);
        }
        if (!this.timers.expired(Timer.KeepAlive, now)) return undefined;
        return this.sealConnected(now, out, T.KeepAlive, this.keepAliveBody());
      }
    }
  }

  protected override writeDisconnect(out: Uint8Array): number {
    return this.sealConnected(this.now, out, T.Disconnect, this.plain.subarray(0, 0));
  }

  /**
   * An addressed packet from the server: while connected with `migration`, a PATH_CHALLENGE naming
   * this client's slot is answered (the next packet out echoes it); anything else is dropped, as a
   * netcode 1.02 client drops type 7.
   */
  private onAddressed(now: number, b: Uint8Array): void {
    if (!this.migration || this.state_ !== 'connected' || addressedIndex(b) !== this.clientIndex) {
      this.ctr.dropped++;
      return;
    }
    const t = this.token!;
    const p = this.packet;
    const n = readAddressedPacket(b, t.protocolId, t.serverToClientKey, 1 << K.PathChallenge, this.replay, this.crypto, p, this.opened);
    if (n < 0) {
      this.ctr[n === NetcodeDrop.replay ? 'replayed' : 'dropped']++;
      return;
    }
    this.accepted(b.length);
    this.heard(now);
    this.pathResponse.set(p.body);
    this.responseOwed = true;
    this.ctr.pathChallenges++;
  }

  /** A connected packet of netcode's `type` (kinds 4..6 are the same numbers): every other one addressed once the server has been silent for `migrateAfterMs`. */
  private sealConnected(now: number, out: Uint8Array, type: number, body: Uint8Array): number {
    if (this.migration && now - this.serverHeardAt >= this.migrateAfterMs) {
      this.addressedNext = !this.addressedNext;
      if (this.addressedNext) return this.sealAddressed(out, type, body);
    } else {
      this.addressedNext = false;
    }
    return this.seal(out, type, body);
  }

  private sealAddressed(out: Uint8Array, kind: number, body: Uint8Array): number {
    const t = this.token!;
    this.ctr.addressedSent++;
    return writeAddressedPacket(out, this.clientIndex, kind, this.sequence++, body, t.protocolId, t.clientToServerKey, this.crypto);
  }

  /**
   * A packet for the block lane's transport, numbered from `BULK_SEQUENCE_BASE`: the lane's body of
   * `length` bytes in `plain`, or (0) the keep-alive that proves the transport.
   */
  private sealBulk(out: Uint8Array, length: number): number {
    const t = this.token!;
    this.toBulk = true;
    if (length === 0) {
      this.bulkHelloOwed = false;
      return writePacket(out, T.KeepAlive, this.bulkSequence++, this.keepAliveBody(), t.protocolId, t.clientToServerKey, this.crypto);
    }
    this.plain[0] = this.session!.writtenKind;
    return writePacket(out, T.Payload, this.bulkSequence++, this.plain.subarray(0, length), t.protocolId, t.clientToServerKey, this.crypto);
  }

  /** A client's keep-alive body: 8 zero bytes (the server's carry the slot). */
  private keepAliveBody(): Uint8Array {
    const ka = this.plain.subarray(0, 8);
    ka.fill(0);
    return ka;
  }

  protected override sentAfterClose(): void {
    this.ctr.sendsAfterClose++;
  }

  private seal(out: Uint8Array, type: number, body: Uint8Array): number {
    const t = this.token!;
    return writePacket(out, type, this.sequence++, body, t.protocolId, t.clientToServerKey, this.crypto);
  }

  /**
   * Try server address `serverIndex` of the token: a fresh request state and replay window. The
   * sequence goes on: every server of the token shares its client-to-server key, so restarting it
   * would seal two packets under one nonce (the reference keeps it too).
   */
  private tryServer(now: number): void {
    const a = this.token!.serverAddresses[this.serverIndex]!;
    this.server = addressToKey(a);
    this.replay = new ReplayProtection();
    this.handshakeOwed = true;
    this.timers.stop(Timer.Resend);
    this.heard(now);
    this.setState(now, 'sending-request');
    this.timers.set(Timer.Handshake, now + this.timeoutMs);
  }

  /** A request or response failed with this server: the next address in the token, or fail with `state`. */
  private nextServerOr(now: number, state: ClientDisconnectReason & ClientState): void {
    if (this.token !== undefined && this.serverIndex + 1 < this.token.serverAddresses.length && this.state_ !== 'connected') {
      this.serverIndex++;
      this.tryServer(now);
      return;
    }
    this.fail(state);
  }

  private fail(state: ClientDisconnectReason & ClientState): void {
    this.finish(state, state, false);
  }

  /**
   * Enter an ending state; the session stays until the next `connect`, so its undrained messages come
   * before the state's event and `'disconnected'`.
   */
  private finish(state: ClientState, reason: ClientDisconnectReason, tellPeer: boolean): void {
    this.state_ = state;
    this.rawQueue.length = 0;
    this.end(tellPeer, { type: 'state', state }, { type: 'disconnected', reason });
  }

  /** The one place the state changes on the way in (each change is an event; the end's are in `finish`). */
  private setState(now: number, s: ClientState): void {
    if (this.state_ === s) return;
    this.state_ = s;
    if (s !== 'connected') this.timers.set(Timer.Handshake, now + this.timeoutMs);
    this.push({ type: 'state', state: s });
  }
}
