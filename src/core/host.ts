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
  /**
   * Optional: where the datagram the last `pollTransmit` wrote goes, when not the peer's address (a
   * peer with a second transport, such as a browser client's block lane on a WebSocket of its own).
   */
  transmitAddress?(): Address | undefined;
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
   * when it was handled or dropped here (the caller counts). It finds peers with the host's own
   * indexes: `firstAt`/`nextAt` (peers may then share an address, so `peerAt` is unavailable) and
   * `peerWithKey`. Exclusive with `accept`.
   */
  route?: (now: number, from: Address, bytes: Uint8Array) => PeerId | undefined;
  /** Stateless datagrams (`sendTo`) waiting for `pollTransmit`; beyond it new ones are dropped and counted in `repliesDropped` (default 1024). */
  maxReplies?: number;
  /**
   * The source group of an address, for per-source limits (e.g. `addressGroup`: the IPv4 address or
   * IPv6 /64 without the port). With it the host counts its live peers per group (`groupSize`) as
   * peers are added, rebound and retired; the owner decides what a full group refuses.
   */
  group?: (address: Address) => string;
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
const KEYED = 64;

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
 * Many sans-IO peers behind one address space, as one `Endpoint`: the netcode server (UDP and browser
 * clients), the unsecured `ConnectionHost`, the KCP server and client, the multi-sender block
 * receiver and the link proxy are hosts of different peers.
 *
 * - Slots: each peer gets a `PeerId`; a removed peer's slot is reused under a new generation.
 * - Identity: the host holds the only maps from what names a peer to its slot, kept on add, rebind
 *   and retire: its address (one peer per address, or several in `route` mode, walked in the order
 *   they came with `firstAt`/`nextAt`), an optional second address (`alias`: a transport of its own
 *   for part of its traffic), an optional key of the owner's (`add(address, peer, key)`: a client
 *   id, a conversation id; `peerWithKey`), and live peers per source group (`groupSize`).
 * - Routing: by address (`accept` creates peers on a first datagram, or refuses), or by the owner's
 *   `route` function over those indexes (connection ids, cookies, several peers per address).
 * - Time: ONE deadline heap over all peers. A peer is woken (`handleTimeout`) only when due; its
 *   deadline is re-read lazily after anything that may move it (a datagram, a wake-up, a transmit, an
 *   event, `touch`), and a peer still due right after its own wake-up waits until 1 ms later.
 * - Output: datagrams are built on demand, one per peer in turn (round robin) across peers that may
 *   have something to send; stateless replies (`sendTo`) go first. Events are tagged by peer.
 *
 * Retiring (`remove`, or the peer's `finished()`): the peer gets no more datagrams or wake-ups and
 * leaves the address index, the key index and its group at once; what it still has to send and its
 * queued events are drained, then its slot is freed. A retiring peer still counts against `maxPeers`.
 *
 * `K` is the type of the owner's keys (`never` when it gives none).
 */
export class Host<P extends HostedPeer<E>, E = P extends SansIoPeer<infer X> ? X : unknown, K = never>
implements Endpoint<HostEvent<E>> {
  /** Most peers holding a slot (see `HostOptions.maxPeers`). */
  readonly maxPeers: number;
  private readonly accept: HostOptions<P>['accept'];
  private readonly route: HostOptions<P>['route'];
  private readonly maxReplies: number;
  private readonly groupOf: ((address: Address) => string) | undefined;
  // Live peers by address: the first slot at each address; several (route mode) are chained in the
  // order they came: `next` of each slot, and `prev` (the first slot's `prev` is the last slot).
  private readonly byAddress = new Map<Address, number>();
  private next: Int32Array;
  private prev: Int32Array;
  private readonly byKey = new Map<K, number>();
  private keyOf: (K | undefined)[] = [];
  // A live peer's second address (`alias`), at most one per peer.
  private readonly byAlias = new Map<Address, number>();
  private aliasOf: (Address | undefined)[] = [];
  private readonly groups = new Map<string, number>();
  private group: string[] = [];
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
    checkConfig(options.group === undefined || typeof options.group === 'function', 'group must be a function');
    this.maxPeers = max;
    this.accept = options.accept;
    this.route = options.route;
    this.maxReplies = replies;
    this.groupOf = options.group;
    // Slot tables double as peers arrive, up to maxPeers entries and no further.
    const start = Math.min(16, max);
    this.heap = new DeadlineHeap(start, max);
    this.gen = new Int32Array(start);
    this.flags = new Uint8Array(start);
    this.next = new Int32Array(start);
    this.prev = new Int32Array(start);
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
   * Add `peer` at `address` (the client side, or an owner's `route`), with the owner's `key` if it
   * gives one (`peerWithKey`). It is polled for datagrams and events at once and its deadline is read
   * at the next `pollTimeout`/`handleTimeout`. Throws `queue-full` when the host is full,
   * `invalid-state` if another peer holds `address` (address routing) or `key`.
   */
  add(address: Address, peer: P, key?: K): PeerId {
    checkArg(typeof address === 'string', 'address must be a string');
    if (this.used >= this.maxPeers) throw new GamewireError('queue-full', `host holds maxPeers (${this.maxPeers}) peers`);
    if (this.route === undefined && (this.byAddress.has(address) || this.byAlias.has(address))) {
      throw new GamewireError('invalid-state', `a peer already has address ${address}`);
    }
    if (key !== undefined && this.byKey.has(key)) throw new GamewireError('invalid-state', `a peer already has key ${String(key)}`);
    const slot = this.free.pop() ?? this.grow();
    this.peerOf[slot] = peer;
    this.addr[slot] = address;
    this.flags[slot] = LIVE;
    this.link(slot, address);
    if (key !== undefined) {
      this.flags[slot]! |= KEYED;
      this.keyOf[slot] = key;
      this.byKey.set(key, slot);
    }
    if (this.groupOf !== undefined) this.join(slot, this.groupOf(address));
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

  /** The live peer at `address` (address routing only; throws `invalid-state` with `route`: see `firstAt`). */
  peerAt(address: Address): PeerId | undefined {
    if (this.route !== undefined) throw new GamewireError('invalid-state', 'peerAt needs address routing (no route option)');
    const slot = this.byAddress.get(address) ?? this.byAlias.get(address);
    return slot === undefined ? undefined : this.idAt(slot);
  }

  /**
   * The first live peer at `address` (the one that came first), or `undefined`; `nextAt` walks the
   * others. With no peer there, the live peer whose second address it is (`alias`).
   */
  firstAt(address: Address): PeerId | undefined {
    const slot = this.byAddress.get(address) ?? this.byAlias.get(address);
    return slot === undefined ? undefined : this.idAt(slot);
  }

  /**
   * Give the live peer `id` a second address, found by `firstAt` while no peer has it as its own (a
   * transport of its own for part of its traffic: a netcode client's block lane). It replaces the
   * peer's previous second address, and goes when the peer retires or `unalias` is called; what the
   * peer sends still names its own destination. Throws `invalid-state` for a peer that is not live, or
   * an address another peer holds (its own or second).
   */
  alias(id: PeerId, address: Address): void {
    checkArg(typeof address === 'string', 'address must be a string');
    const slot = this.slotOf(id);
    if (slot < 0 || (this.flags[slot]! & LIVE) === 0) throw new GamewireError('invalid-state', 'alias of a peer that is not live');
    const other = this.byAddress.get(address) ?? this.byAlias.get(address);
    if (other !== undefined && other !== slot) throw new GamewireError('invalid-state', `a peer already has address ${address}`);
    this.dropAlias(slot);
    this.aliasOf[slot] = address;
    this.byAlias.set(address, slot);
  }

  /** Forget the second address `address`; returns the live peer that had it, or `undefined`. */
  unalias(address: Address): PeerId | undefined {
    const slot = this.byAlias.get(address);
    if (slot === undefined) return undefined;
    this.dropAlias(slot);
    return this.idAt(slot);
  }

  /** The live peer after the live peer `id` at its address (in the order they came), or `undefined`. */
  nextAt(id: PeerId): PeerId | undefined {
    const slot = this.slotOf(id);
    if (slot < 0 || (this.flags[slot]! & LIVE) === 0) return undefined;
    const n = this.next[slot]!;
    return n < 0 ? undefined : this.idAt(n);
  }

  /** The live peer added with `key`, or `undefined`. */
  peerWithKey(key: K): PeerId | undefined {
    const slot = this.byKey.get(key);
    return slot === undefined ? undefined : this.idAt(slot);
  }

  /** Ids of the live peers added with a key, in the order they were added (a snapshot). */
  keyedIds(): PeerId[] {
    const out: PeerId[] = [];
    for (const slot of this.byKey.values()) out.push(this.idAt(slot));
    return out;
  }

  /** Live peers whose address is in `address`'s group (see `HostOptions.group`; throws `invalid-state` without it). */
  groupSize(address: Address): number {
    if (this.groupOf === undefined) throw new GamewireError('invalid-state', 'groupSize needs the group option');
    return this.groups.get(this.groupOf(address)) ?? 0;
  }

  /** Ids of the live peers (a snapshot). */
  ids(): PeerId[] {
    const out: PeerId[] = [];
    for (let s = 0; s < this.peerOf.length; s++) if ((this.flags[s]! & LIVE) !== 0) out.push(this.idAt(s));
    return out;
  }

  /**
   * Move a live peer to `address` (migration): its datagrams go there from now on, and it is found
   * there (after the peers already at `address`); its key stays. Throws `invalid-state` for an
   * unknown id, or if another peer holds `address` (address routing).
   */
  rebind(id: PeerId, address: Address): void {
    const slot = this.slotOf(id);
    if (slot < 0 || (this.flags[slot]! & LIVE) === 0) throw new GamewireError('invalid-state', 'rebind of a peer that is not live');
    if (this.route === undefined) {
      const other = this.byAddress.get(address) ?? this.byAlias.get(address);
      if (other !== undefined && other !== slot) throw new GamewireError('invalid-state', `a peer already has address ${address}`);
    }
    if (address === this.addr[slot]) return;
    this.unlink(slot);
    this.addr[slot] = address;
    this.link(slot, address);
    if (this.groupOf !== undefined) {
      const g = this.groupOf(address);
      if (g !== this.group[slot]) {
        this.leave(slot);
        this.join(slot, g);
      }
    }
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
      const s = this.byAddress.get(from) ?? this.byAlias.get(from);
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
      this.transmit.to = this.peerOf[slot]!.transmitAddress?.() ?? this.addr[slot]!;
      return this.transmit;
    }
    return undefined;
  }

  /** The next event of any peer (peers in turn as they had input), tagged, or `undefined`. */
  pollEvent(): HostEvent<E> | undefined {
    const e = this.pollPeerEvent();
    if (e === undefined) return undefined;
    const slot = this.evSlot;
    return { peer: this.idAt(slot), address: this.addr[slot]!, event: e };
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

  private idAt(slot: number): PeerId {
    return this.gen[slot]! * SLOT_SPACE + slot;
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
    this.keyOf.push(undefined);
    this.aliasOf.push(undefined);
    this.group.push('');
    if (slot >= this.flags.length) {
      const n = grownLength(this.flags.length, slot + 1, this.maxPeers);
      const f = new Uint8Array(n);
      f.set(this.flags);
      this.flags = f;
      this.gen = grownInt32(this.gen, n);
      this.next = grownInt32(this.next, n);
      this.prev = grownInt32(this.prev, n);
    }
    return slot;
  }

  /** Put `slot` last among the peers at `address`. */
  private link(slot: number, address: Address): void {
    this.next[slot] = -1;
    const first = this.byAddress.get(address);
    if (first === undefined) {
      this.byAddress.set(address, slot);
      this.prev[slot] = slot;
      return;
    }
    const last = this.prev[first]!;
    this.next[last] = slot;
    this.prev[slot] = last;
    this.prev[first] = slot;
  }

  /** Take `slot` out of the peers at its address. */
  private unlink(slot: number): void {
    const address = this.addr[slot]!;
    const first = this.byAddress.get(address)!;
    const n = this.next[slot]!;
    if (slot === first) {
      if (n < 0) this.byAddress.delete(address);
      else {
        this.byAddress.set(address, n);
        this.prev[n] = this.prev[slot]!;
      }
      return;
    }
    const p = this.prev[slot]!;
    this.next[p] = n;
    if (n < 0) this.prev[first] = p;
    else this.prev[n] = p;
  }

  private join(slot: number, group: string): void {
    this.group[slot] = group;
    this.groups.set(group, (this.groups.get(group) ?? 0) + 1);
  }

  private leave(slot: number): void {
    const g = this.group[slot]!;
    const n = this.groups.get(g)! - 1;
    if (n > 0) this.groups.set(g, n);
    else this.groups.delete(g);
    this.group[slot] = '';
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
    this.unlink(slot);
    if ((this.flags[slot]! & KEYED) !== 0) {
      this.flags[slot]! &= ~KEYED;
      this.byKey.delete(this.keyOf[slot]!);
      this.keyOf[slot] = undefined;
    }
    this.dropAlias(slot);
    if (this.groupOf !== undefined) this.leave(slot);
    // Drain what it still has, then free the slot (released()).
    this.markTx(slot);
    if ((this.flags[slot]! & IN_EV) === 0) {
      this.flags[slot]! |= IN_EV;
      this.ev.push(slot);
    }
  }

  private dropAlias(slot: number): void {
    const a = this.aliasOf[slot];
    if (a === undefined) return;
    this.byAlias.delete(a);
    this.aliasOf[slot] = undefined;
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

function grownInt32(a: Int32Array, n: number): Int32Array {
  const b = new Int32Array(n);
  b.set(a);
  return b;
}

/**
 * An addressed `Endpoint` whose drive methods are its `Host`'s: what a server of many peers
 * (`ConnectionHost`, `ChunkHost`, netcode's `Server`) shows a driver. Subclasses make `host` and say
 * what an event is (`pollEvent`).
 */
export abstract class HostEndpoint<P extends HostedPeer<PE>, PE, E, K = never> implements Endpoint<E> {
  /** The host of the peers (`K`: its keys); made by the subclass's constructor. */
  protected abstract readonly host: Host<P, PE, K>;

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
