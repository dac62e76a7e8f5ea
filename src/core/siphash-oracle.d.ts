// Types for siphash@1.2.0 (jedisct1/siphash-js), a devDependency used only as the test oracle of core/siphash.ts.
declare module 'siphash' {
  /** SipHash-2-4 of `message` under a 128-bit key given as four u32 words; `h`/`l` are the high/low u32 halves. */
  function hash(key: Uint32Array, message: Uint8Array | string): { h: number; l: number };
  const siphash: { hash: typeof hash };
  export default siphash;
}
