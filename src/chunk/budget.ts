/**
 * The receive budget a `ChunkHost` shares among its senders' receivers: bytes are reserved as slices
 * arrive (in pieces) and released when a block is freed or its `block` event is polled.
 *
 * Reservations that would take the budget into its last `headroomBytes` (room for one largest block while
 * it is assembled) are admitted for one block at a time, the first that needs them among the blocks each
 * sender must complete next, until that block is finished or freed. Every other block stays below
 * `limitBytes − headroomBytes`, so the block holding the headroom can always complete: half-received blocks
 * of several senders never wait on each other for ever. Internal to `ChunkHost` and `ChunkReceiver`; see
 * docs/chunk.md §ChunkHost.
 */
export class ReceiveBudget {
  /** Bytes reserved now. */
  usedBytes = 0;
  /** Reservations refused (each a slice dropped unacked). */
  refused = 0;
  private holder: object | undefined;

  /**
   * @param limitBytes the most ever reserved, bytes
   * @param headroomBytes the top of it kept for one block at a time, bytes (≤ limitBytes)
   */
  constructor(readonly limitBytes: number, readonly headroomBytes: number) {}

  /**
   * Reserve `bytes` for `block`; false (nothing reserved, counted in `refused`) when the budget does not
   * admit it. Only a block its sender must complete next (`mayHoldHeadroom`) may take the headroom.
   */
  reserve(block: object, bytes: number, mayHoldHeadroom: boolean): boolean {
    const after = this.usedBytes + bytes;
    if (after > this.limitBytes - this.headroomBytes) {
      if (mayHoldHeadroom) this.holder ??= block;
      if (this.holder !== block || after > this.limitBytes) {
        this.refused++;
        return false;
      }
    }
    this.usedBytes = after;
    return true;
  }

  /** Return `bytes` reserved earlier. */
  release(bytes: number): void {
    this.usedBytes -= bytes;
  }

  /** `block` needs no more (complete, cancelled or freed): the headroom goes to the next block that needs it. */
  finish(block: object): void {
    if (this.holder === block) this.holder = undefined;
  }
}
