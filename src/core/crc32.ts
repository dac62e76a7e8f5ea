// Table-driven CRC-32 (reflected, polynomial 0xEDB88320). Local rather than the `crc` package
// because that one only takes a whole array, and a `subarray` per call costs more than the CRC of a header.
const CRC_TABLE = new Int32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = (c & 1) !== 0 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c;
}

/**
 * CRC-32 (IEEE 802.3, the zlib one) of `bytes[start, end)`, as an unsigned 32-bit number.
 * `start` and `end` are byte offsets with 0 ≤ start ≤ end ≤ bytes.length.
 */
export function crc32Of(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let c = -1;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}
