import { checkArg, GamewireError } from '../core/errors.js';
import type { Lanes } from '../connection/session.js';
import { FrameKind } from '../connection/wire.js';
import { NETCODE_MAX_PAYLOAD_BYTES } from './options.js';

/*
 * What a netcode payload packet carries, both ways: raw payloads queued by the application, or a
 * body of the connection's lanes (DATA or BLOCK after its kind byte).
 */

/** @internal Check and queue (a copy of) one raw payload; throws `message-too-large`, `queue-full`. */
export function queueRaw(queue: Uint8Array[], bytes: Uint8Array, max: number): void {
  checkArg(bytes instanceof Uint8Array, 'a payload is a Uint8Array');
  if (bytes.length < 1 || bytes.length > NETCODE_MAX_PAYLOAD_BYTES) {
    throw new GamewireError('message-too-large', `a raw payload is 1..${NETCODE_MAX_PAYLOAD_BYTES} bytes, not ${bytes.length}`);
  }
  if (queue.length >= max) throw new GamewireError('queue-full', `${queue.length} raw payloads queued`);
  queue.push(bytes.slice());
}

/**
 * @internal The next payload into `plain`: the oldest raw payload (raw mode), or the session's next
 * body after its kind byte (DATA or BLOCK). Its length, or undefined when nothing is due.
 */
export function nextPayload(now: number, session: Lanes<unknown> | undefined, raw: Uint8Array[], plain: Uint8Array): number | undefined {
  if (session === undefined) {
    const p = raw.shift();
    if (p === undefined) return undefined;
    plain.set(p);
    return p.length;
  }
  const n = session.write(now, plain, false);
  if (n !== undefined) plain[0] = session.writtenKind;
  return n;
}

/**
 * @internal A decrypted payload's body into the session (DATA or BLOCK, the peer's blocks being chunk
 * session `peerChunkSession`); false in raw mode, where the caller hands the bytes out. Never throws.
 */
export function takePayload(now: number, session: Lanes<unknown> | undefined, body: Uint8Array, peerChunkSession: number): boolean {
  if (session === undefined) return false;
  if (body[0] === FrameKind.Data) session.receiveData(now, body, 1);
  else if (body[0] === FrameKind.Block) session.receiveBlock(now, body, 1, peerChunkSession);
  return true;
}
