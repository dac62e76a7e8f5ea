import { createCipheriv, createDecipheriv } from 'node:crypto';
import { nobleCrypto } from '../../crypto/noble.js';
import { type CryptoProvider, TAG_BYTES } from '../../crypto/provider.js';

/**
 * A `CryptoProvider` for Node: ChaCha20-Poly1305-IETF (every packet) from node:crypto (OpenSSL),
 * XChaCha20-Poly1305 (connect tokens only) from `@noble/ciphers`, which node:crypto lacks.
 */
export const nodeCrypto: CryptoProvider = {
  name: 'node',
  seal(key, nonce, ad, plaintext, out, o) {
    const c = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: TAG_BYTES });
    c.setAAD(ad, { plaintextLength: plaintext.length });
    const a = c.update(plaintext);
    out.set(a, o);
    const b = c.final();
    out.set(b, o + a.length);
    out.set(c.getAuthTag(), o + plaintext.length);
    return plaintext.length + TAG_BYTES;
  },
  open(key, nonce, ad, sealed, out, o) {
    if (sealed.length < TAG_BYTES) return -1;
    const n = sealed.length - TAG_BYTES;
    try {
      const d = createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: TAG_BYTES });
      d.setAAD(ad, { plaintextLength: n });
      d.setAuthTag(sealed.subarray(n));
      const a = d.update(sealed.subarray(0, n));
      const b = d.final();
      out.set(a, o);
      out.set(b, o + a.length);
    } catch {
      return -1;
    }
    return n;
  },
  xseal: nobleCrypto.xseal,
  xopen: nobleCrypto.xopen,
};
