import type { DecodeResult } from '../../src/core/result.js';
import type { ReplayProtection } from '../../src/netcode/wire.js';
import {
  newNetcodePacket, type NetcodeDropReason, type NetcodePacket, type NetcodeRequest, netcodeDropReason, readPacket,
} from '../../src/netcode/wire.js';
import type { CryptoProvider } from '../../src/crypto/provider.js';

/** An edge decoder's value, or undefined when it rejected its input. */
export function okValue<T>(r: DecodeResult<T, string>): T | undefined {
  return r.ok ? r.value : undefined;
}

/** `readRequestPacket`'s outcome as one value: the request, or `{ drop: reason }`. */
export function requestOf(r: DecodeResult<NetcodeRequest, NetcodeDropReason>): NetcodeRequest | { drop: NetcodeDropReason } {
  return r.ok ? r.value : { drop: r.code };
}

/**
 * `readPacket` into a fresh struct, its outcome as one value: the packet, or `{ drop: reason }`.
 * Throws if the returned length is not the body's (the decoder's own contract).
 */
export function packetOf(
  b: Uint8Array, protocolId: bigint, key: Uint8Array, allowed: number, replay: ReplayProtection | undefined,
  crypto: CryptoProvider, out?: Uint8Array,
): NetcodePacket | { drop: NetcodeDropReason } {
  const p = newNetcodePacket();
  const n = readPacket(b, protocolId, key, allowed, replay, crypto, p, out);
  if (n < 0) return { drop: netcodeDropReason(n) };
  if (n !== p.body.length) throw new Error(`readPacket returned ${n} for a body of ${p.body.length} bytes`);
  return p;
}
