import type { Address } from '../core/endpoint.js';
import { checkConfig } from '../core/errors.js';
import { Host, HostEndpoint, type HostCounter, type HostEvent, type HostedPeer, type PeerId } from '../core/host.js';
import { ReceiveBudget } from './budget.js';
import { type ChunkReceiverOptions, hostedBlockPeak, resolveReceiverOptions } from './config.js';
import { ChunkReceiver, type ChunkReceiverEvent } from './receiver.js';
import { PacketType, peekPacketType } from './wire.js';

/** What one sender of a `ChunkHost` raises: its receiver's events, then `'expired'` if it went quiet. */
export type ChunkHostPeerEvent =
  | ChunkReceiverEvent
  /** Nothing came from this sender for `idleMs`: its receiver (and any partial block) was dropped. */
  | { type: 'expired'; idleMs: number };

/** An event of a `ChunkHost`, tagged with the sender's peer id and address. */
export type ChunkHostEvent = HostEvent<ChunkHostPeerEvent>;

/** Counter names of a `ChunkHost`: its `Host`'s, and `overBudget` (slices dropped because the receive budget was full). */
export type ChunkHostCounter = HostCounter | 'overBudget';

/** Options of a `ChunkHost`. Times in ms. */
export interface ChunkHostOptions {
  /**
   * Config of each sender's `ChunkReceiver` (`maxBlockBytes`, acks…). Its `maxMemoryBytes` is each
   * sender's share of the host's budget (default 2 × (maxBlockBytes + maxBlockBytes/512 + 1)); it must
   * hold one largest block while it is assembled (≈ 2 × maxBlockBytes).
   */
  receiver?: ChunkReceiverOptions;
  /**
   * Receive budget of all senders together, bytes (default 64 MiB): blocks being received (reserved in
   * ~16 KiB pieces as their slices arrive), blocks being assembled, and delivered blocks not yet polled.
   * A slice it does not admit is dropped unacked and counted in `overBudget` (the sender resends it later).
   * Must hold one largest block while it is assembled (≈ 2 × receiver.maxBlockBytes).
   */
  maxMemoryBytes?: number;
  /**
   * Most senders at once (default 16). A datagram from a new address beyond it is dropped and
   * counted in `refusedFull`: that sender gets no acks (it stalls) until a slot frees.
   */
  maxSenders?: number;
  /** A sender that sent nothing for this long is dropped with an `'expired'` event (default 30 000; 0 = never). */
  idleTimeoutMs?: number;
  /** Admit a new sender address (default: every address). A refused one is counted in `refused`. */
  accept?: (from: Address) => boolean;
}

/** One sender's receiver, plus the idle expiry the host needs. */
class SenderPeer implements HostedPeer<ChunkHostPeerEvent> {
  readonly receiver: ChunkReceiver;
  private lastHeard: number;
  private expired = false;
  private expiredReported = false;

  constructor(config: ChunkReceiverOptions | undefined, budget: ReceiveBudget, now: number, private readonly idleMs: number) {
    this.receiver = new ChunkReceiver(config, budget);
    this.lastHeard = now;
  }

  handleDatagram(now: number, bytes: Uint8Array): void {
    if (now > this.lastHeard) this.lastHeard = now;
    this.receiver.handleDatagram(now, bytes);
  }

  handleTimeout(now: number): void {
    this.receiver.handleTimeout(now);
    if (!this.expired && this.idleMs > 0 && now >= this.lastHeard + this.idleMs) {
      this.expired = true;
      this.receiver.freePartialBlocks();
    }
  }

  pollTransmit(now: number, out: Uint8Array): number | undefined {
    return this.receiver.pollTransmit(now, out);
  }

  pollTimeout(): number | undefined {
    const r = this.receiver.pollTimeout();
    if (this.idleMs === 0 || this.expired) return r;
    const idle = this.lastHeard + this.idleMs;
    return r === undefined || idle < r ? idle : r;
  }

  pollEvent(): ChunkHostPeerEvent | undefined {
    const e = this.receiver.pollEvent();
    if (e !== undefined) return e;
    if (this.expired && !this.expiredReported) {
      this.expiredReported = true;
      return { type: 'expired', idleMs: this.idleMs };
    }
    return undefined;
  }

  finished(): boolean {
    return this.expired;
  }
}

/**
 * Receives blocks from many senders on one address space: a `Host` of `ChunkReceiver`s, one per
 * sender address, created on the sender's first slice or cancel (other datagrams from unknown
 * addresses create nothing and are counted in `refused`). Each receiver acks and reassembles its own
 * sender's blocks as a lone `ChunkReceiver` would; events carry the sender's address.
 *
 * Limits: at most `maxSenders` receivers; all of them share one receive budget (`maxMemoryBytes`, 64 MiB),
 * reserved as slices arrive, each sender within its share (`receiver.maxMemoryBytes`); a quiet sender is
 * dropped after `idleTimeoutMs` and its reservation returned. A sender's address is not verified: see
 * docs/chunk.md §ChunkHost for what a flood from spoofed addresses costs. Drive it like any `Endpoint`
 * (UDP driver, simulator world).
 */
export class ChunkHost extends HostEndpoint<SenderPeer, ChunkHostPeerEvent, ChunkHostEvent> {
  /** Most senders at once. */
  readonly maxSenders: number;
  /** Idle expiry, ms (0 = never). */
  readonly idleTimeoutMs: number;
  /** Receive budget of all senders together, bytes. */
  readonly maxMemoryBytes: number;
  protected readonly host: Host<SenderPeer, ChunkHostPeerEvent>;
  private readonly receiverConfig: ChunkReceiverOptions | undefined;
  private readonly acceptAddress: ((from: Address) => boolean) | undefined;
  private readonly budget: ReceiveBudget;

  constructor(options: ChunkHostOptions = {}) {
    super();
    checkConfig(typeof options === 'object' && options !== null, 'options must be an object');
    const max = options.maxSenders ?? 16;
    checkConfig(Number.isInteger(max) && max >= 1, 'maxSenders must be an integer ≥ 1');
    const idle = options.idleTimeoutMs ?? 30_000;
    checkConfig(typeof idle === 'number' && Number.isFinite(idle) && idle >= 0, 'idleTimeoutMs must be a finite number of ms ≥ 0');
    checkConfig(options.accept === undefined || typeof options.accept === 'function', 'accept must be a function');
    // Validate the receiver config once, here, rather than on some sender's first datagram.
    const rc = resolveReceiverOptions(options.receiver);
    const peak = hostedBlockPeak(rc.maxBlockBytes);
    const budget = options.maxMemoryBytes ?? 64 * 1024 * 1024;
    checkConfig(Number.isSafeInteger(budget) && budget >= peak,
      `maxMemoryBytes must be an integer ≥ ${peak} (one block of receiver.maxBlockBytes while it is assembled)`);
    checkConfig(rc.maxMemoryBytes >= peak,
      `receiver.maxMemoryBytes must be ≥ ${peak} (one block of receiver.maxBlockBytes while it is assembled)`);
    this.budget = new ReceiveBudget(budget, peak);
    this.maxMemoryBytes = budget;
    this.maxSenders = max;
    this.idleTimeoutMs = idle;
    this.receiverConfig = options.receiver;
    this.acceptAddress = options.accept;
    this.host = new Host<SenderPeer, ChunkHostPeerEvent>({
      maxPeers: max,
      accept: (now, from, bytes) => this.admit(now, from, bytes),
      maxReplies: 0,
    });
  }

  /** Senders holding a slot (live, or expired with events not yet polled). */
  get senderCount(): number {
    return this.host.size;
  }

  /** The receiver of the live sender at `address`, or `undefined`. */
  receiver(address: Address): ChunkReceiver | undefined {
    const id = this.host.peerAt(address);
    return id === undefined ? undefined : this.host.get(id)!.receiver;
  }

  /** Addresses of the live senders. */
  senders(): Address[] {
    return this.host.ids().map((id) => this.host.addressOf(id)!);
  }

  /**
   * Drop the sender at `address` now (its partial block is freed; its queued events are still
   * polled). Returns false if there is none.
   */
  remove(address: Address): boolean {
    const id = this.host.peerAt(address);
    if (id === undefined) return false;
    this.host.get(id)!.receiver.freePartialBlocks();
    return this.host.remove(id);
  }

  /** Bytes reserved from the receive budget (≤ `maxMemoryBytes`): blocks being received or assembled, and unpolled blocks. */
  memoryBytes(): number {
    return this.budget.usedBytes;
  }

  /**
   * A copy of the counters: the host's (`refusedFull`, `refused`, `peersAdded`, `peersFreed`…) and
   * `overBudget`; per sender see `receiver(address).counters()`.
   */
  counters(): Readonly<Record<ChunkHostCounter, number>> {
    return { ...this.host.counters(), overBudget: this.budget.refused };
  }

  pollEvent(): ChunkHostEvent | undefined {
    return this.host.pollEvent();
  }

  /** Id of the sender at `address` in the underlying host (events carry it), or `undefined`. */
  peerId(address: Address): PeerId | undefined {
    return this.host.peerAt(address);
  }

  private admit(now: number, from: Address, bytes: Uint8Array): SenderPeer | undefined {
    const t = peekPacketType(bytes);
    if (t !== PacketType.Slice && t !== PacketType.Cancel) return undefined;
    if (this.acceptAddress !== undefined && !this.acceptAddress(from)) return undefined;
    return new SenderPeer(this.receiverConfig, this.budget, now, this.idleTimeoutMs);
  }
}
