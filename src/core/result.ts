/**
 * Decoders come in two shapes, one for each kind of caller; neither throws on bad bytes.
 *
 * - **Hot paths** (run per datagram or per frame: the packet header, channel frames and lengths,
 *   chunk slices, netcode packets, a KCP datagram's conv): `read…(bytes, …, into)` reads into a
 *   struct the caller owns and reuses, and returns a number: what was read (bytes, or the value
 *   itself where it is one number) when ≥ 0, or a negative code saying why the input was rejected
 *   (`DecodeFail`, or the protocol's own negative codes, such as netcode's drop reasons), which the
 *   caller counts. Nothing is allocated for the result.
 * - **The edge** (tokens, handshakes, control packets, whole-packet decoders that tests and hex
 *   vectors use): `decode…`/`read…` return a `DecodeResult`, `{ ok: true, value, bytesRead }` or
 *   `{ ok: false, code }`.
 */

/** Why a decoder rejected its input. A string-literal union so reasons can be counted by name. */
export type DecodeErrorCode =
  | 'truncated'
  | 'bad-type'
  | 'bad-version'
  | 'bad-length'
  | 'bad-field'
  | 'out-of-range'
  | 'trailing-bytes'
  | 'bad-checksum';

/**
 * Result of decoding bytes from the wire at the edge (see above). `C` is the union of rejection
 * codes, `DecodeErrorCode` unless the protocol names its own (netcode's drop reasons).
 */
export type DecodeResult<T, C extends string = DecodeErrorCode> =
  | { ok: true; value: T; bytesRead: number }
  | { ok: false; code: C };

/** Build a successful decode result. */
export function decoded<T, C extends string = DecodeErrorCode>(value: T, bytesRead: number): DecodeResult<T, C> {
  return { ok: true, value, bytesRead };
}

/** Build a failed decode result. */
export function rejected<T, C extends string = DecodeErrorCode>(code: C): DecodeResult<T, C> {
  return { ok: false, code };
}

const DECODE_ERROR_CODES: readonly DecodeErrorCode[] = [
  'truncated', 'bad-type', 'bad-version', 'bad-length', 'bad-field', 'out-of-range', 'trailing-bytes', 'bad-checksum',
];

/** The negative codes a hot-path decoder returns for each `DecodeErrorCode` (`decodeErrorOf` names them). */
export const DecodeFail = {
  truncated: -1,
  badType: -2,
  badVersion: -3,
  badLength: -4,
  badField: -5,
  outOfRange: -6,
  trailingBytes: -7,
  badChecksum: -8,
} as const;

/** The name of a hot-path decoder's negative code `n` (one of `DecodeFail`). */
export function decodeErrorOf(n: number): DecodeErrorCode {
  return DECODE_ERROR_CODES[-n - 1]!;
}
