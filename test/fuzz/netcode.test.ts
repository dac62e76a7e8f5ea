// The seeded slice of the netcode reader fuzz (netcode-harness.ts says what is checked); long runs:
// `npm run fuzz -- N [SEED]`. Each target also has to reach every way of making inputs and, for the
// packet and request readers, every drop reason, so a harness that stopped reaching a check fails here.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nodeCrypto } from '../../src/adapters/node/node-crypto.js';
import { nobleCrypto } from '../../src/crypto/noble.js';
import { sodiumCrypto } from '../../src/crypto/sodium.js';
import { addressToKey, parseAddress, readPrivateToken, writePrivateToken } from '../../src/netcode/wire.js';
import { okValue } from '../harness/decoders.js';
import { EXPECTED_DROPS, NETCODE_FUZZ_MODES, NETCODE_FUZZ_TARGETS, runNetcodeFuzz } from './netcode-harness.js';

const providers = [nobleCrypto, nodeCrypto, await sodiumCrypto()];
const INPUTS_PER_TARGET = 1000;

describe('fuzz: netcode readers, seeded slice', () => {
  for (const target of NETCODE_FUZZ_TARGETS) {
    it(`${target}: never throws, never accepts a mutated sealed input, accepts and round-trips valid ones`, () => {
      fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => {
        const r = runNetcodeFuzz({ seed, inputs: INPUTS_PER_TARGET, providers, targets: [target] });
        const f = r.failure;
        if (f !== undefined) {
          throw new Error(`${f.message}\n  ${f.mode}, input ${f.inputHex}\n  replay: npm run fuzz -- --case ${target}:${f.caseSeed}`);
        }
        const s = r.stats[target]!;
        expect(s.inputs).toBe(INPUTS_PER_TARGET);
        expect(Object.keys(s.modes).sort()).toEqual([...NETCODE_FUZZ_MODES[target]].sort());
        expect(s.accepted).toBeGreaterThan(INPUTS_PER_TARGET / 20);
        expect(s.inputs - s.accepted).toBeGreaterThan(INPUTS_PER_TARGET / 4);
        for (const reason of EXPECTED_DROPS[target] ?? []) expect(s.rejected[reason] ?? 0, `drop '${reason}'`).toBeGreaterThan(0);
      }), { numRuns: 1, endOnFailure: true });
    });
  }
});

describe('fuzz regressions: netcode', () => {
  it('an IPv4 address with a leading zero is refused (it named another address than a token carries)', () => {
    // Found by the address target: "033.189.109.116:48562" parsed to the key "033.189.109.116:48562",
    // but written into a token it reads back as "33.189.109.116:48562", so a Server configured with it
    // refused every token; node:net and inet_pton (the reference's parser) refuse it.
    for (const text of ['033.189.109.116:48562', '1.2.3.04:5', '00.0.0.0:1']) expect(okValue(parseAddress(text)), text).toBeUndefined();
    for (const text of ['0.0.0.0:0', '10.0.100.1:5', '255.255.255.255:65535']) {
      const a = okValue(parseAddress(text))!;
      expect(addressToKey(a)).toBe(text);
      const t = okValue(readPrivateToken(writePrivateToken({
        clientId: 1n, timeoutSeconds: 1, serverAddresses: [a], clientToServerKey: new Uint8Array(32), serverToClientKey: new Uint8Array(32),
        userData: new Uint8Array(256),
      })))!;
      expect(addressToKey(t.serverAddresses[0]!)).toBe(text);
    }
  });
});
