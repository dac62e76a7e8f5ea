import fc from 'fast-check';
import siphash from 'siphash';
import { describe, expect, it } from 'vitest';
import { GamewireError } from './errors.js';
import { sipHash24, sipHash24Low32, sipHashKey } from './siphash.js';

// vectors_sip64 of the reference implementation (github.com/veorq/SipHash, vectors.h; the SipHash
// paper's Appendix A): key 00 01 … 0f, message i = the i bytes 00 01 … (i−1), output bytes in order.
const VECTORS = [
  '310e0edd47db6f72', 'fd67dc93c539f874', '5a4fa9d909806c0d', '2d7efbd796666785',
  'b7877127e09427cf', '8da699cd64557618', 'cee3fe586e46c9cb', '37d1018bf50002ab',
  '6224939a79f5f593', 'b0e4a90bdf82009e', 'f3b9dd94c5bb5d7a', 'a7ad6b22462fb3f4',
  'fbe50e86bc8f1e75', '903d84c02756ea14', 'eef27a8e90ca23f7', 'e545be4961ca29a1',
  'db9bc2577fcc2a3f', '9447be2cf5e99a69', '9cd38d96f0b3c14b', 'bd6179a71dc96dbb',
  '98eea21af25cd6be', 'c7673b2eb0cbf2d0', '883ea3e395675393', 'c8ce5ccd8c030ca8',
  '94af49f6c650adb8', 'eab8858ade92e1bc', 'f315bb5bb835d817', 'adcf6b0763612e2f',
  'a5c91da7acaa4dde', '716595876650a2a6', '28ef495c53a387ad', '42c341d8fa92d832',
  'ce7cf2722f512771', 'e37859f94623f3a7', '381205bb1ab0e012', 'ae97a10fd434e015',
  'b4a31508beff4d31', '81396229f0907902', '4d0cf49ee5d4dcca', '5c73336a76d8bf9a',
  'd0a704536ba93e0e', '925958fcd6420cad', 'a915c29bc8067318', '952b79f3bc0aa6d4',
  'f21df2e41d4535f9', '87577519048f53a9', '10a56cf5dfcd9adb', 'eb75095ccd986cd0',
  '51a9cb9ecba312e6', '96afadfc2ce666c7', '72fe52975a4364ee', '5a1645b276d592a1',
  'b274cb8ebf87870a', '6f9bb4203de7b381', 'eaecb2a30b22a87f', '9924a43cc1315724',
  'bd838d3aafbf8db7', '0b1a2a3265d51aea', '135079a3231ce660', '932b2846e4d70666',
  'e1915f5cb1eca46c', 'f325965ca16d629f', '575ff28e60381be5', '724506eb4c328a95',
];

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const iota = (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => i);

/** The `siphash` package's result (the 64-bit value as high and low u32) as the 8 reference output bytes. */
function oracle(key: Uint8Array, message: Uint8Array): string {
  const { h, l } = siphash.hash(sipHashKey(key), message);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setUint32(0, l >>> 0, true);
  new DataView(out.buffer).setUint32(4, h >>> 0, true);
  return hex(out);
}

describe('SipHash-2-4', () => {
  it('matches the 64 reference vectors (messages of 0..63 bytes)', () => {
    expect(VECTORS).toHaveLength(64);
    const key = sipHashKey(iota(16));
    const out = new Uint8Array(10);
    for (let i = 0; i < 64; i++) {
      sipHash24(key, iota(i), out, 1);
      expect(hex(out.subarray(1, 9)), `vector ${i}`).toBe(VECTORS[i]);
      expect(sipHash24Low32(key, iota(i)), `vector ${i}`).toBe(new DataView(out.buffer).getUint32(1, true));
    }
  });

  it('agrees with the siphash package on random keys and messages', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.uint8Array({ maxLength: 300 }), (key, message) => {
        const out = new Uint8Array(8);
        sipHash24(sipHashKey(key), message, out);
        expect(hex(out)).toBe(oracle(key, message));
      }),
    );
  });

  it('reads a message through its view (offset into a larger buffer)', () => {
    const key = sipHashKey(iota(16));
    const big = iota(40);
    expect(sipHash24Low32(key, big.subarray(3, 20))).toBe(sipHash24Low32(key, big.slice(3, 20)));
  });

  it('rejects keys that are not 16 bytes and outputs without room', () => {
    expect(() => sipHashKey(new Uint8Array(15))).toThrow(GamewireError);
    expect(() => sipHash24(sipHashKey(iota(16)), iota(1), new Uint8Array(7))).toThrow(GamewireError);
  });
});
