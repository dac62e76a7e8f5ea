import type { SansIoPeer } from '../core/peer.js';
import type { ChunkReceiverOptions, ChunkSenderOptions } from './config.js';
import { ChunkReceiver, type ChunkReceiverEvent } from './receiver.js';
import { ChunkSender, type ChunkSenderEvent } from './sender.js';
import { PacketType, peekPacketType } from './wire.js';

/** An event of either direction of a `ChunkEndpoint`, tagged with the part that raised it. */
export type ChunkEndpointEvent =
  | { readonly from: 'sender'; readonly event: ChunkSenderEvent }
  | { readonly from: 'receiver'; readonly event: ChunkReceiverEvent };

/** Options of a `ChunkEndpoint`: one config per direction. */
export interface ChunkEndpointOptions {
  /** Config of the outgoing direction's `ChunkSender`. */
  sender?: ChunkSenderOptions;
  /** Config of the incoming direction's `ChunkReceiver`. */
  receiver?: ChunkReceiverOptions;
}

/**
 * Both ends of the chunk protocol on one datagram path, for bidirectional block transfer: slices
 * and cancels go to `receiver`, acks and refusals to `sender` (demuxed by the type byte). Same
 * drive contract as its parts; `pollTransmit` gives the receiver's small acks priority over slices.
 * Send with `sender.sendBlock`; `pollEvent` drains the receiver's events, then the sender's.
 */
export class ChunkEndpoint implements SansIoPeer<ChunkEndpointEvent> {
  /** Sends this side's blocks. */
  readonly sender: ChunkSender;
  /** Reassembles the peer's blocks. */
  readonly receiver: ChunkReceiver;

  constructor(config: ChunkEndpointOptions = {}) {
    this.sender = new ChunkSender(config.sender);
    this.receiver = new ChunkReceiver(config.receiver);
  }

  /** Route one datagram by its type byte; unknown ones go to the receiver, which counts them as malformed. */
  handleDatagram(now: number, bytes: Uint8Array): void {
    const t = peekPacketType(bytes);
    if (t === PacketType.Ack || t === PacketType.Refuse) this.sender.handleDatagram(now, bytes);
    else this.receiver.handleDatagram(now, bytes);
  }

  /** Run both parts' timers. */
  handleTimeout(now: number): void {
    this.receiver.handleTimeout(now);
    this.sender.handleTimeout(now);
  }

  /** Next datagram: a due ack or refusal first, else the sender's next cancel or slice. */
  pollTransmit(now: number, out: Uint8Array): number | undefined {
    return this.receiver.pollTransmit(now, out) ?? this.sender.pollTransmit(now, out);
  }

  /** The earlier of both parts' timeouts (ms), or undefined. */
  pollTimeout(): number | undefined {
    const a = this.receiver.pollTimeout();
    const b = this.sender.pollTimeout();
    if (a === undefined) return b;
    if (b === undefined) return a;
    return Math.min(a, b);
  }

  /** Next event of either part (the receiver's first), tagged with its origin, or undefined. */
  pollEvent(): ChunkEndpointEvent | undefined {
    const r = this.receiver.pollEvent();
    if (r !== undefined) return { from: 'receiver', event: r };
    const s = this.sender.pollEvent();
    if (s !== undefined) return { from: 'sender', event: s };
    return undefined;
  }

  /** A driver's wake hook (see `Endpoint.setWaker`): the sender's commands call it. */
  setWaker(waker: (() => void) | undefined): void {
    this.sender.setWaker(waker);
  }

  /** Bytes held by both parts. */
  memoryBytes(): number {
    return this.sender.memoryBytes() + this.receiver.memoryBytes();
  }
}
