// Netcode inputs found by fuzzing, kept as regression tests.
import { describe, expect, it } from 'vitest';
import { addressToKey, parseAddress, readPrivateToken, writePrivateToken } from '../../src/netcode/wire.js';

describe('fuzz regressions: netcode', () => {
  it('an IPv4 address with a leading zero is refused (it named another address than a token carries)', () => {
    // Found by the address target: "033.189.109.116:48562" parsed to the key "033.189.109.116:48562",
    // but written into a token it reads back as "33.189.109.116:48562", so a Server configured with it
    // refused every token; node:net and inet_pton (the reference's parser) refuse it.
    for (const text of ['033.189.109.116:48562', '1.2.3.04:5', '00.0.0.0:1']) expect(parseAddress(text), text).toBeUndefined();
    for (const text of ['0.0.0.0:0', '10.0.100.1:5', '255.255.255.255:65535']) {
      const a = parseAddress(text)!;
      expect(addressToKey(a)).toBe(text);
      const t = readPrivateToken(writePrivateToken({
        clientId: 1n, timeoutSeconds: 1, serverAddresses: [a], clientToServerKey: new Uint8Array(32), serverToClientKey: new Uint8Array(32),
        userData: new Uint8Array(256),
      }))!;
      expect(addressToKey(t.serverAddresses[0]!)).toBe(text);
    }
  });
});
