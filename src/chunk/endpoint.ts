import type { SansIoPeer } from '../core/peer.js';
import type { ChunkReceiverConfig, ChunkSenderConfig } from './config.js';
import { ChunkReceiver } from './receiver.js';
import { ChunkSender } from './sender.js';
import { PacketType, peekPacketType } from './wire.js';

/** Options of a `ChunkEndpoint`: one config per direction. */
export interface ChunkEndpointConfig {
  /** Config of the outgoing direction's `ChunkSender`. */
  sender?: ChunkSenderConfig;
  /** Config of the incoming direction's `ChunkReceiver`. */
  receiver?: ChunkReceiverConfig;
}

/**
 * Both ends of the chunk protocol on one datagram path, for bidirectional block transfer: slices
 * and cancels go to `receiver`, acks and refusals to `sender` (demuxed by the type byte). Same
 * drive contract as its parts; `pollTransmit` gives the receiver's small acks priority over slices.
 * Use `sender.sendBlock` / `sender.pollEvent` and `receiver.pollEvent` directly.
 */
export class ChunkEndpoint implements SansIoPeer {
  /** Sends this side's blocks. */
  readonly sender: ChunkSender;
  /** Reassembles the peer's blocks. */
  readonly receiver: ChunkReceiver;

  constructor(config: ChunkEndpointConfig = {}) {
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

  /** Bytes held by both parts. */
  memoryBytes(): number {
    return this.sender.memoryBytes() + this.receiver.memoryBytes();
  }
}
