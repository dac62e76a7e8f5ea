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

/** Result of decoding bytes from the wire. Decoders never throw on bad input. */
export type DecodeResult<T> =
  | { ok: true; value: T; bytesRead: number }
  | { ok: false; code: DecodeErrorCode };

/** Build a successful decode result. */
export function decoded<T>(value: T, bytesRead: number): DecodeResult<T> {
  return { ok: true, value, bytesRead };
}

/** Build a failed decode result. */
export function rejected<T>(code: DecodeErrorCode): DecodeResult<T> {
  return { ok: false, code };
}
