/**
 * Pending deliveries of a `Link`, ordered by (time, insertion order). Internal to sim/.
 *
 * Most links schedule in non-decreasing time (no jitter, or reorder=false), so entries that are not
 * earlier than the newest FIFO entry go to an O(1) ring; only out-of-order ones pay for the binary
 * heap. `pop` takes whichever head is smaller. Each entry carries its storage buffer and payload size.
 */
export class DeliverySchedule {
  private seq = 0;

  // FIFO ring (times non-decreasing from head to tail).
  private fTime = new Float64Array(256);
  private fSeq = new Float64Array(256);
  private fSize = new Int32Array(256);
  private fData: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(256);
  private fTag = new Int32Array(256);
  private fHead = 0;
  private fLen = 0;

  // Binary min-heap as parallel arrays.
  private hTime: number[] = [];
  private hSeq: number[] = [];
  private hData: (Uint8Array | undefined)[] = [];
  private hSize: number[] = [];
  private hTag: number[] = [];
  private hLen = 0;

  /** Payload bytes of all entries. */
  bytes = 0;
  /** Size of the entry removed by the last `pop`. */
  popSize = 0;
  /** Tag of the entry removed by the last `pop`. */
  popTag = 0;
  /** Sequence number (scheduling order) of the entry removed by the last `pop`. */
  popSeq = 0;

  /** Number of entries. */
  get length(): number {
    return this.fLen + this.hLen;
  }

  /** Time of the earliest entry, or `undefined`. */
  peekTime(): number | undefined {
    if (this.fLen === 0) return this.hLen === 0 ? undefined : this.hTime[0];
    const ft = this.fTime[this.fHead];
    return this.hLen === 0 || ft <= this.hTime[0] ? ft : this.hTime[0];
  }

  /** Time of the latest entry (O(entries out of order)), or -Infinity when empty. */
  maxTime(): number {
    let t = this.fLen === 0 ? -Infinity : this.fTime[(this.fHead + this.fLen - 1) % this.fTime.length];
    for (let i = 0; i < this.hLen; i++) if (this.hTime[i] > t) t = this.hTime[i];
    return t;
  }

  /** Payload size of the earliest entry, or `undefined`. */
  peekSize(): number | undefined {
    if (this.length === 0) return undefined;
    return this.fifoFirst() ? this.fSize[this.fHead] : this.hSize[0];
  }

  /**
   * Add an entry due at `time` holding `size` payload bytes in `data`, with an integer `tag` (int32)
   * returned by `pop`. Returns its sequence number (for `retime`).
   */
  push(time: number, data: Uint8Array, size: number, tag = 0): number {
    const seq = this.seq++;
    this.bytes += size;
    const cap = this.fTime.length;
    if (this.fLen === 0 || time >= this.fTime[(this.fHead + this.fLen - 1) % cap]) {
      if (this.fLen === cap) this.growFifo();
      const i = (this.fHead + this.fLen) % this.fTime.length;
      this.fTime[i] = time;
      this.fSeq[i] = seq;
      this.fSize[i] = size;
      this.fData[i] = data;
      this.fTag[i] = tag;
      this.fLen++;
    } else {
      this.heapPush(time, seq, data, size, tag);
    }
    return seq;
  }

  /**
   * Move entries: each entry whose sequence number is in `shift` gets that many ms added to its time,
   * but never below `floor`. With `fifo`, times are then clamped to be non-decreasing in scheduling
   * order (as they were). Rebuilds the schedule: O(n log n), for rare events such as a link reconfiguration.
   */
  retime(shift: ReadonlyMap<number, number>, floor: number, fifo: boolean): void {
    const n = this.length;
    const time = new Float64Array(n);
    const seq = new Float64Array(n);
    const size = new Int32Array(n);
    const tag = new Int32Array(n);
    const data = new Array<Uint8Array>(n);
    for (let k = 0; k < n; k++) {
      const t = this.peekTime()!;
      data[k] = this.pop();
      seq[k] = this.popSeq;
      const d = shift.get(this.popSeq);
      time[k] = d === undefined ? t : Math.max(floor, t + d);
      size[k] = this.popSize;
      tag[k] = this.popTag;
    }
    const order = Array.from({ length: n }, (_, k) => k);
    if (fifo) {
      order.sort((x, y) => seq[x] - seq[y]);
      let max = -Infinity;
      for (const k of order) {
        if (time[k] < max) time[k] = max;
        max = time[k];
      }
    }
    order.sort((x, y) => time[x] - time[y] || seq[x] - seq[y]);
    while (this.fTime.length < n) this.growFifo();
    this.fHead = 0;
    this.fLen = 0;
    for (const k of order) {
      this.fTime[this.fLen] = time[k];
      this.fSeq[this.fLen] = seq[k];
      this.fSize[this.fLen] = size[k];
      this.fData[this.fLen] = data[k];
      this.fTag[this.fLen] = tag[k];
      this.fLen++;
      this.bytes += size[k];
    }
  }

  /** Remove the earliest entry (the schedule must not be empty); its size is left in `popSize`. */
  pop(): Uint8Array {
    if (this.fifoFirst()) {
      const i = this.fHead;
      const d = this.fData[i]!;
      this.fData[i] = undefined;
      this.popSize = this.fSize[i];
      this.popTag = this.fTag[i];
      this.popSeq = this.fSeq[i];
      this.fHead = (i + 1) % this.fTime.length;
      this.fLen--;
      this.bytes -= this.popSize;
      return d;
    }
    return this.heapPop();
  }

  private fifoFirst(): boolean {
    if (this.fLen === 0) return false;
    if (this.hLen === 0) return true;
    const ft = this.fTime[this.fHead];
    const ht = this.hTime[0];
    return ft < ht || (ft === ht && this.fSeq[this.fHead] < this.hSeq[0]);
  }

  private growFifo(): void {
    const cap = this.fTime.length;
    const t = new Float64Array(cap * 2);
    const s = new Float64Array(cap * 2);
    const z = new Int32Array(cap * 2);
    const d = new Array<Uint8Array | undefined>(cap * 2);
    const g = new Int32Array(cap * 2);
    for (let k = 0; k < this.fLen; k++) {
      const j = (this.fHead + k) % cap;
      t[k] = this.fTime[j];
      s[k] = this.fSeq[j];
      z[k] = this.fSize[j];
      d[k] = this.fData[j];
      g[k] = this.fTag[j];
    }
    this.fTag = g;
    this.fTime = t;
    this.fSeq = s;
    this.fSize = z;
    this.fData = d;
    this.fHead = 0;
  }

  private heapPush(time: number, seq: number, data: Uint8Array, size: number, tag: number): void {
    const ht = this.hTime;
    const hs = this.hSeq;
    const hd = this.hData;
    const hz = this.hSize;
    const hg = this.hTag;
    let i = this.hLen++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pt = ht[p];
      if (pt < time || (pt === time && hs[p] < seq)) break;
      ht[i] = pt;
      hs[i] = hs[p];
      hd[i] = hd[p];
      hz[i] = hz[p];
      hg[i] = hg[p];
      i = p;
    }
    ht[i] = time;
    hs[i] = seq;
    hd[i] = data;
    hz[i] = size;
    hg[i] = tag;
  }

  private heapPop(): Uint8Array {
    const ht = this.hTime;
    const hs = this.hSeq;
    const hd = this.hData;
    const hz = this.hSize;
    const hg = this.hTag;
    const top = hd[0]!;
    this.popSize = hz[0];
    this.popTag = hg[0];
    this.popSeq = hs[0];
    this.bytes -= this.popSize;
    const n = --this.hLen;
    const t = ht[n];
    const s = hs[n];
    const d = hd[n];
    const z = hz[n];
    const g = hg[n];
    hd[n] = undefined;
    let i = 0;
    for (;;) {
      let m = 2 * i + 1;
      if (m >= n) break;
      const r = m + 1;
      if (r < n && (ht[r] < ht[m] || (ht[r] === ht[m] && hs[r] < hs[m]))) m = r;
      if (t < ht[m] || (t === ht[m] && s < hs[m])) break;
      ht[i] = ht[m];
      hs[i] = hs[m];
      hd[i] = hd[m];
      hz[i] = hz[m];
      hg[i] = hg[m];
      i = m;
    }
    if (n > 0) {
      ht[i] = t;
      hs[i] = s;
      hd[i] = d;
      hz[i] = z;
      hg[i] = g;
    }
    return top;
  }
}
