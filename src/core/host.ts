import { DeadlineHeap, grownLength } from './deadline-heap.js';
import type { Address, Endpoint, Transmit } from './endpoint.js';
import { checkArg, checkConfig, GamewireError } from './errors.js';
import type { SansIoPeer } from './peer.js';

/**
 * A peer's handle in a `Host` (a non-negative integer). Stable while the peer holds its slot; a
 * generation folded into it means a stale id never reaches the slot's next peer.
 */
export type PeerId = number;

/** What a `Host` drives: a single-remote sans-IO peer that may say when it has ended. */
export interface HostedPeer<E = unknown> extends SansIoPeer<E> {
  /**
   * Optional: true once the peer has ended. The host then retires it as with `Host.remove`.
   * Checked after every datagram, wake-up and `touch`.
   */
  finished?(): boolean;
}

/** An event of one hosted peer, tagged with the peer's id and its address at the time of polling. */
export interface HostEvent<E> {
  /** The peer that raised it (may be retired by now: its slot is held until its events are drained). */
  readonly peer: PeerId;
  /** The peer's address. */
  readonly address: Address;
  /** The peer's own event. */
  readonly event: E;
}

/** Options of a `Host`. */
export interface HostOptions<P> {
  /**
   * Most peers holding a slot, live or retiring (default 1024; at most 2^21). At the limit a datagram
   * from a new address is dropped and counted in `refusedFull`, and `add` throws `queue-full`.
   */
  maxPeers?: number;
  /**
   * A datagram came from an address with no peer: return a new peer for `from` (it then receives
   * this datagram), or `undefined` to refuse it (dropped, counted in `refused`). Without `accept`,
   * such datagrams are dropped and counted in `unknownAddress`. Not called when the host is full.
   * It may answer statelessly with `sendTo` (a challenge, a refusal) instead of creating a peer; an
   * owner that must answer even when the host is full (as the KCP server's REFUSE) routes itself (`route`).
   */
  accept?: (now: number, from: Address, bytes: Uint8Array) => P | undefined;
  /**
   * Replace routing by address: return the id of the live peer this datagram is for, or `undefined`
   * when it was handled or dropped here (the caller counts). Peers may then share an address and
   * `peerAt` is unavailable. Exclusive with `accept`.
   */
  route?: (now: number, from: Address, bytes: Uint8Array) => PeerId | undefined;
  /** Stateless datagrams (`sendTo`) waiting for `pollTransmit`; beyond it new ones are dropped and counted in `repliesDropped` (default 1024). */
  maxReplies?: number;
}

/** Counter names of a `Host`. */
export type HostCounter =
  | 'datagramsIn'
  | 'unknownAddress'
  | 'refused'
  | 'refusedFull'
  | 'peersAdded'
  | 'peersFreed'
  | 'wakeups'
  | 'datagramsOut'
  | 'repliesDropped'
  | 'transmitTooLarge';

/** Largest slot count (ids fold a generation above it, so ids stay safe integers). */
const SLOT_SPACE = 2 ** 21;

const LIVE = 1;
const RETIRED = 2;
const IN_TX = 4;
const IN_EV = 8;
const DIRTY = 16;
const WOKE = 32;

/** A FIFO of slot numbers; each slot is in it at most once, so it never holds more than `maxSlots`. */
class SlotQueue {
  private buf: Int32Array;
  private head = 0;
  length = 0;

  constructor(private readonly maxSlots: number) {
    this.buf = new Int32Array(Math.min(16, maxSlots));
  }

  push(slot: number): void {
    if (this.length === this.buf.length) {
      const n = this.buf.length;
      const b = new Int32Array(grownLength(n, n + 1, this.maxSlots));
      for (let i = 0; i < n; i++) b[i] = this.buf[(this.head + i) % n]!;
      this.buf = b;
      this.head = 0;
    }
    this.buf[(this.head + this.length) % this.buf.length] = slot;
    this.length++;
  }

  /** Head slot (caller checks `length > 0`). */
  peek(): number {
    return this.buf[this.head]!;
  }

  shift(): number {
    const s = this.buf[this.head]!;
    this.head = (this.head + 1) % this.buf.length;
    this.length--;
    return s;
  }
}

/**
 * Many sans-IO peers behind one address space, as one `Endpoint`: the KCP server and client, the
 * multi-sender block receiver, and later the netcode and browser servers are hosts of different peers.
 *
 * - Slots: each peer gets a `PeerId`; a removed peer's slot is reused under a new generation.
 * - Routing: by address (a bounded map; `accept` creates peers on a first datagram, or refuses), or
 *   by the owner's `route` function (connection ids, cookies, several peers per address).
 * - Time: ONE deadline heap over all peers. A peer is woken (`handleTimeout`) only when due; its
 *   deadline is re-read lazily after anything that may move it (a datagram, a wake-up, a transmit, an
 *   event, `touch`), and a peer still due right after its own wake-up waits until 1 ms later.
 * - Output: datagrams are built on demand, one per peer in turn (round robin) across peers that may
 *   have something to send; stateless replies (`sendTo`) go first. Events are tagged by peer.
 *
 * Retiring (`remove`, or the peer's `finished()`): the peer gets no more datagrams or wake-ups and
 * leaves the address map at once; what it still has to send and its queued events are drained, then
 * its slot is freed. A retiring peer still counts against `maxPeers`.
 */
export class Host<P extends HostedPeer<E>, E = P extends SansIoPeer<infer X> ? X : unknown>
implements Endpoint<HostEvent<E>> {
  /** Most peers holding a slot (see `HostOptions.maxPeers`). */
  readonly maxPeers: number;
  private readonly accept: HostOptions<P>['accept'];
  private readonly route: HostOptions<P>['route'];
  private readonly maxReplies: number;
  private readonly byAddress = new Map<Address, number>();
  private readonly heap: DeadlineHeap;
  private peerOf: (P | undefined)[] = [];
  private addr: Address[] = [];
  private gen: Int32Array;
  private flags: Uint8Array;
  // Slots woken by the latest handleTimeout (flag WOKE) and its time: the re-key rule needs no more.
  private woke: number[] = [];
  private wokeAt = -Infinity;
  private readonly free: number[] = [];
  private used = 0;
  private live = 0;
  private dirty: number[] = [];
  private readonly tx: SlotQueue;
  private readonly ev: SlotQueue;
  private readonly replyTo: Address[] = [];
  private readonly replyData: Uint8Array[] = [];
  private replyHead = 0;
  private readonly transmit: Transmit = { length: 0, to: '' };
  private waker: (() => void) | undefined;
  // Slot of the event pollPeerEvent returned last.
  private evSlot = 0;
  private readonly ctr: Record<HostCounter, number> = {
    datagramsIn: 0, unknownAddress: 0, refused: 0, refusedFull: 0, peersAdded: 0, peersFreed: 0, wakeups: 0,
    datagramsOut: 0, repliesDropped: 0, transmitTooLarge: 0,
  };

  constructor(options: HostOptions<P> = {}) {
    checkConfig(typeof options === 'object' && options !== null, 'options must be an object');
    const max = options.maxPeers ?? 1024;
    checkConfig(Number.isInteger(max) && max >= 1 && max <= SLOT_SPACE, `maxPeers must be an integer in [1, ${SLOT_SPACE}]`);
    const replies = options.maxReplies ?? 1024;
    checkConfig(Number.isInteger(replies) && replies >= 0, 'maxReplies must be an integer ≥ 0');
    checkConfig(options.accept === undefined || typeof options.accept === 'function', 'accept must be a function');
    checkConfig(options.route === undefined || typeof options.route === 'function', 'route must be a function');
    checkConfig(options.accept === undefined || options.route === undefined, 'give accept or route, not both');
    this.maxPeers = max;
    this.accept = options.accept;
    this.route = options.route;
    this.maxReplies = replies;
    // Slot tables double as peers arrive, up to maxPeers entries and no further.
    const start = Math.min(16, max);
    this.heap = new DeadlineHeap(start, max);
    this.gen = new Int32Array(start);
    this.flags = new Uint8Array(start);
    this.tx = new SlotQueue(max);
    this.ev = new SlotQueue(max);
  }

  /** Peers holding a slot (live and retiring). */
  get size(): number {
    return this.used;
  }

  /** Live peers (not retiring). */
  get liveCount(): number {
    return this.live;
  }

  /** True when `size` has reached `maxPeers`. */
  get full(): boolean {
    return this.used >= this.maxPeers;
  }

  /** A copy of every counter. */
  counters(): Readonly<Record<HostCounter, number>> {
    return { ...this.ctr };
  }

  /**
   * A driver's wake hook (see `Endpoint.setWaker`): called by the commands that leave work outside
   * any input (`add`, `remove`, `touch`, `sendTo`), and by any peer's own wake hook, which the host sets.
   */
  setWaker(waker: (() => void) | undefined): void {
    this.waker = waker;
  }

  /**
   * Add `peer` at `address` (the client side, or an owner's `route`). It is polled for datagrams and
   * events at once and its deadline is read at the next `pollTimeout`/`handleTimeout`. Throws
   * `queue-full` when the host is full, `invalid-state` if another peer holds `address` (address routing).
   */
  add(address: Address, peer: P): PeerId {
    checkArg(typeof address === 'string', 'address must be a string');
    if (this.used >= this.maxPeers) throw new GamewireError('queue-full', `host holds maxPeers (${this.maxPeers}) peers`);
    if (this.route === undefined && this.byAddress.has(address)) {
      throw new GamewireError('invalid-state', `a peer already has address ${address}`);
    }
    const slot = this.free.pop() ?? this.grow();
    this.peerOf[slot] = peer;
    this.addr[slot] = address;
    this.flags[slot] = LIVE;
    if (this.route === undefined) this.byAddress.set(address, slot);
    this.used++;
    this.live++;
    this.ctr.peersAdded++;
    this.stir(slot);
    const id = this.gen[slot]! * SLOT_SPACE + slot;
    peer.setWaker?.(() => this.touch(id));
    this.waker?.();
    return id;
  }

  /** Retire a live peer (see the class doc); returns false if `id` is not a live peer. */
  remove(id: PeerId): boolean {
    const slot = this.slotOf(id);
    if (slot < 0 || (this.flags[slot]! & LIVE) === 0) return false;
    this.retire(slot);
    this.waker?.();
    return true;
  }

  /** The peer with `id` while it holds its slot (live or retiring), else `undefined`. */
  get(id: PeerId): P | undefined {
    const slot = this.slotOf(id);
    return slot < 0 ? undefined : this.peerOf[slot];
  }

  /** True if `id` is a live peer (not retiring, not freed). */
  isLive(id: PeerId): boolean {
    const slot = this.slotOf(id);
    return slot >= 0 && (this.flags[slot]! & LIVE) !== 0;
  }

  /** Address of the peer with `id`, or `undefined` once its slot is freed. */
  addressOf(id: PeerId): Address | undefined {
    const slot = this.slotOf(id);
    return slot < 0 ? undefined : this.addr[slot];
  }

  /** The live peer at `address` (address routing only; throws `invalid-state` with `route`). */
  peerAt(address: Address): PeerId | undefined {
    if (this.route !== undefined) throw new GamewireError('invalid-state', 'peerAt needs address routing (no route option)');
    const slot = this.byAddress.get(address);
    return slot === undefined ? undefined : this.gen[slot]! * SLOT_SPACE + slot;
  }

  /** Ids of the live peers (a snapshot). */
  ids(): PeerId[] {
    const out: PeerId[] = [];
    for (let s = 0; s < this.peerOf.length; s++) if ((this.flags[s]! & LIVE) !== 0) out.push(this.gen[s]! * SLOT_SPACE + s);
    return out;
  }

  /**
   * Move a live peer to `address` (migration): its datagrams go there from now on. Throws
   * `invalid-state` for an unknown id, or if another peer holds `address` (address routing).
   */
  rebind(id: PeerId, address: Address): void {
    const slot = this.slotOf(id);
    if (slot < 0 || (this.flags[slot]! & LIVE) === 0) throw new GamewireError('invalid-state', 'rebind of a peer that is not live');
    if (this.route === undefined) {
      const other = this.byAddress.get(address);
      if (other !== undefined && other !== slot) throw new GamewireError('invalid-state', `a peer already has address ${address}`);
      this.byAddress.delete(this.addr[slot]!);
      this.byAddress.set(address, slot);
    }
    this.addr[slot] = address;
  }

  /**
   * Call after a command on a hosted peer (send, close, …): it may now have datagrams, events or a
   * new deadline. Ignored for ids that are not live.
   */
  touch(id: PeerId): void {
    const slot = this.slotOf(id);
    if (slot < 0 || (this.flags[slot]! & LIVE) === 0) return;
    this.afterInput(slot);
    this.waker?.();
  }

  /**
   * Queue a copy of `bytes` for `to` outside any peer (a handshake answer to an address that has no
   * peer yet, a refusal). Returns false, and counts `repliesDropped`, when `maxReplies` are waiting.
   */
  sendTo(to: Address, bytes: Uint8Array): boolean {
    if (this.replyTo.length - this.replyHead >= this.maxReplies) {
      this.ctr.repliesDropped++;
      return false;
    }
    this.replyTo.push(to);
    this.replyData.push(bytes.slice());
    this.waker?.();
    return true;
  }

  /** Route one datagram to its peer (see `HostOptions`); never throws on bad bytes. */
  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    this.ctr.datagramsIn++;
    let slot: number;
    if (this.route !== undefined) {
      const id = this.route(now, from, bytes);
      if (id === undefined) return;
      slot = this.slotOf(id);
      if (slot < 0 || (this.flags[slot]! & LIVE) === 0) return;
    } else {
      const s = this.byAddress.get(from);
      if (s !== undefined) slot = s;
      else {
        if (this.accept === undefined) {
          this.ctr.unknownAddress++;
          return;
        }
        if (this.used >= this.maxPeers) {
          this.ctr.refusedFull++;
          return;
        }
        const peer = this.accept(now, from, bytes);
        if (peer === undefined) {
          this.ctr.refused++;
          return;
        }
        slot = this.slotOf(this.add(from, peer));
      }
    }
    this.peerOf[slot]!.handleDatagram(now, bytes);
    this.afterInput(slot);
  }

  /** Wake every peer due at or before `now` (ms), each once. */
  handleTimeout(now: number): void {
    checkArg(typeof now === 'number' && !Number.isNaN(now), 'now must be a number of ms');
    this.flushDirty();
    if (now !== this.wokeAt) {
      for (const slot of this.woke) this.flags[slot]! &= ~WOKE;
      this.woke = [];
      this.wokeAt = now;
    }
    const heap = this.heap;
    for (let slot = heap.popDue(now); slot >= 0; slot = heap.popDue(now)) {
      this.flags[slot]! |= WOKE;
      this.woke.push(slot);
      this.ctr.wakeups++;
      this.peerOf[slot]!.handleTimeout(now);
      this.afterInput(slot);
    }
  }

  /** Earliest deadline of any live peer (ms), or `undefined`. */
  pollTimeout(): number | undefined {
    this.flushDirty();
    return this.heap.peekTime();
  }

  /**
   * Write the next datagram into `out`: a stateless reply first, else the next peer in turn that has
   * one. A reply longer than `out` is dropped and counted in `transmitTooLarge`.
   */
  pollTransmit(now: number, out: Uint8Array): Transmit | undefined {
    while (this.replyHead < this.replyTo.length) {
      const to = this.replyTo[this.replyHead]!;
      const b = this.replyData[this.replyHead]!;
      this.shiftReply();
      if (b.length > out.length) {
        this.ctr.transmitTooLarge++;
        continue;
      }
      out.set(b);
      this.ctr.datagramsOut++;
      this.transmit.length = b.length;
      this.transmit.to = to;
      return this.transmit;
    }
    const tx = this.tx;
    while (tx.length > 0) {
      const slot = tx.peek();
      const n = this.peerOf[slot]!.pollTransmit(now, out);
      if (n === undefined) {
        tx.shift();
        this.flags[slot]! &= ~IN_TX;
        this.released(slot);
        continue;
      }
      tx.shift();
      tx.push(slot);
      this.markDirty(slot);
      this.ctr.datagramsOut++;
      this.transmit.length = n;
      this.transmit.to = this.addr[slot]!;
      return this.transmit;
    }
    return undefined;
  }

  /**
   * The next stateless reply without a copy (ownership passes to the caller), or `undefined`. For
   * owners that offer a zero-copy `pollDatagram` beside `pollTransmit`.
   */
  takeReply(): { bytes: Uint8Array; to: Address } | undefined {
    if (this.replyHead >= this.replyTo.length) return undefined;
    const r = { bytes: this.replyData[this.replyHead]!, to: this.replyTo[this.replyHead]! };
    this.shiftReply();
    this.ctr.datagramsOut++;
    return r;
  }

  /**
   * The round robin of `pollTransmit` with the owner's own producer: `take(peer)` is asked of each
   * peer in turn that may have something to send until one returns a value (for zero-copy output).
   */
  takeEach<R>(take: (peer: P) => R | undefined): R | undefined {
    const tx = this.tx;
    while (tx.length > 0) {
      const slot = tx.peek();
      const r = take(this.peerOf[slot]!);
      tx.shift();
      if (r === undefined) {
        this.flags[slot]! &= ~IN_TX;
        this.released(slot);
        continue;
      }
      tx.push(slot);
      this.markDirty(slot);
      this.ctr.datagramsOut++;
      return r;
    }
    return undefined;
  }

  /** The next event of any peer (peers in turn as they had input), tagged, or `undefined`. */
  pollEvent(): HostEvent<E> | undefined {
    const e = this.pollPeerEvent();
    if (e === undefined) return undefined;
    const slot = this.evSlot;
    return { peer: this.gen[slot]! * SLOT_SPACE + slot, address: this.addr[slot]!, event: e };
  }

  /** As `pollEvent`, untagged: for owners whose peers' events already name the peer (no wrapper object). */
  pollPeerEvent(): E | undefined {
    const ev = this.ev;
    while (ev.length > 0) {
      const slot = ev.peek();
      const e = this.peerOf[slot]!.pollEvent();
      if (e === undefined) {
        ev.shift();
        this.flags[slot]! &= ~IN_EV;
        this.released(slot);
        continue;
      }
      // Reading an event may free room in the peer (a receive window): let it send and re-time.
      if ((this.flags[slot]! & LIVE) !== 0) {
        this.markDirty(slot);
        this.markTx(slot);
      }
      this.evSlot = slot;
      return e as E;
    }
    return undefined;
  }

  private slotOf(id: PeerId): number {
    if (!Number.isInteger(id) || id < 0) return -1;
    const slot = id % SLOT_SPACE;
    if (slot >= this.peerOf.length || this.peerOf[slot] === undefined) return -1;
    return this.gen[slot]! === (id - slot) / SLOT_SPACE ? slot : -1;
  }

  private grow(): number {
    const slot = this.peerOf.length;
    this.peerOf.push(undefined);
    this.addr.push('');
    if (slot >= this.flags.length) {
      const n = grownLength(this.flags.length, slot + 1, this.maxPeers);
      const f = new Uint8Array(n);
      f.set(this.flags);
      this.flags = f;
      const g = new Int32Array(n);
      g.set(this.gen);
      this.gen = g;
    }
    return slot;
  }

  /** The peer had input (datagram, wake-up, command): it may have ended, or have output and a new deadline. */
  private afterInput(slot: number): void {
    if ((this.flags[slot]! & LIVE) === 0) return; // retired during the input: retire() queued its drain
    const p = this.peerOf[slot]!;
    if (p.finished !== undefined && p.finished()) {
      this.retire(slot);
      return;
    }
    this.stir(slot);
  }

  private stir(slot: number): void {
    this.markDirty(slot);
    this.markTx(slot);
    if ((this.flags[slot]! & IN_EV) === 0) {
      this.flags[slot]! |= IN_EV;
      this.ev.push(slot);
    }
  }

  private markDirty(slot: number): void {
    if ((this.flags[slot]! & (DIRTY | LIVE)) !== LIVE) return;
    this.flags[slot]! |= DIRTY;
    this.dirty.push(slot);
  }

  private markTx(slot: number): void {
    if ((this.flags[slot]! & IN_TX) !== 0) return;
    this.flags[slot]! |= IN_TX;
    this.tx.push(slot);
  }

  private flushDirty(): void {
    if (this.dirty.length === 0) return;
    const list = this.dirty;
    this.dirty = [];
    for (const slot of list) {
      this.flags[slot]! &= ~DIRTY;
      if ((this.flags[slot]! & LIVE) === 0) continue;
      const p = this.peerOf[slot]!;
      if (p.finished !== undefined && p.finished()) {
        this.retire(slot);
        continue;
      }
      const t = p.pollTimeout();
      if (t === undefined) this.heap.delete(slot);
      else this.heap.reschedule(slot, t, (this.flags[slot]! & WOKE) !== 0 ? this.wokeAt : -Infinity);
    }
  }

  private retire(slot: number): void {
    this.flags[slot] = (this.flags[slot]! & ~(LIVE | DIRTY)) | RETIRED;
    this.live--;
    this.heap.delete(slot);
    if (this.route === undefined && this.byAddress.get(this.addr[slot]!) === slot) this.byAddress.delete(this.addr[slot]!);
    // Drain what it still has, then free the slot (released()).
    this.markTx(slot);
    if ((this.flags[slot]! & IN_EV) === 0) {
      this.flags[slot]! |= IN_EV;
      this.ev.push(slot);
    }
  }

  /** Free a retired slot once it is out of both queues. */
  private released(slot: number): void {
    if ((this.flags[slot]! & (RETIRED | IN_TX | IN_EV)) !== RETIRED) return;
    this.peerOf[slot]!.setWaker?.(undefined);
    this.flags[slot] = 0;
    this.peerOf[slot] = undefined;
    this.addr[slot] = '';
    this.gen[slot] = (this.gen[slot]! + 1) % 2 ** 31;
    this.free.push(slot);
    this.used--;
    this.ctr.peersFreed++;
  }

  private shiftReply(): void {
    this.replyHead++;
    if (this.replyHead === this.replyTo.length) {
      this.replyTo.length = 0;
      this.replyData.length = 0;
      this.replyHead = 0;
    } else if (this.replyHead >= 1024 && this.replyHead * 2 >= this.replyTo.length) {
      this.replyTo.splice(0, this.replyHead);
      this.replyData.splice(0, this.replyHead);
      this.replyHead = 0;
    }
  }
}

/**
 * An addressed `Endpoint` whose drive methods are its `Host`'s: what a server of many peers
 * (`ConnectionHost`, `ChunkHost`, netcode's `Server`) shows a driver. Subclasses make `host` and say
 * what an event is (`pollEvent`).
 */
export abstract class HostEndpoint<P extends HostedPeer<PE>, PE, E> implements Endpoint<E> {
  /** The host of the peers; made by the subclass's constructor. */
  protected abstract readonly host: Host<P, PE>;

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    this.host.handleDatagram(now, from, bytes);
  }

  handleTimeout(now: number): void {
    this.host.handleTimeout(now);
  }

  pollTransmit(now: number, out: Uint8Array): Transmit | undefined {
    return this.host.pollTransmit(now, out);
  }

  pollTimeout(): number | undefined {
    return this.host.pollTimeout();
  }

  setWaker(waker: (() => void) | undefined): void {
    this.host.setWaker(waker);
  }

  abstract pollEvent(): E | undefined;
}
