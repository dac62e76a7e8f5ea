/** npm `libsodium` (the raw Emscripten build, no types of its own): its default export makes the module. */
declare module 'libsodium' {
  const createModule: (options: { getRandomValue(): number }) => Promise<unknown>;
  export default createModule;
}
