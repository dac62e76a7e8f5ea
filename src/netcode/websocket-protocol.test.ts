// The WebSocket subprotocols that carry a connect token, a resumption or a block lane's transport:
// what a client offers reads back as what it meant, and anything ambiguous or malformed reads as nothing.
import { describe, expect, it } from 'vitest';
import { bulkProtocols, readWebSocketProtocols, resumeProtocols, webSocketProtocols } from './websocket-protocol.js';
import { CONNECT_TOKEN_BYTES } from './wire.js';

const header = (ps: readonly string[]): string => ps.join(', ');

describe('WebSocket subprotocols', () => {
  it('a token, a resumption and a block lane\'s transport read back as offered', () => {
    const token = Uint8Array.from({ length: CONNECT_TOKEN_BYTES }, (_, i) => (i * 37) & 255);
    expect(readWebSocketProtocols(header(webSocketProtocols(token)))).toEqual({ token });
    expect(readWebSocketProtocols(header(resumeProtocols(0)))).toEqual({ resume: 0 });
    expect(readWebSocketProtocols(header(bulkProtocols(2 ** 31 - 1)))).toEqual({ bulk: 2 ** 31 - 1 });
    expect(bulkProtocols(7)).toEqual(['gamewire', 'gamewire.bulk.7']);
  });

  it('refuses what is not exactly one well-formed request under the gamewire protocol', () => {
    const token = webSocketProtocols(new Uint8Array(CONNECT_TOKEN_BYTES))[1];
    for (const h of [
      undefined, '', 'gamewire', 'gamewire.bulk.1', 'chat, gamewire.bulk.1',
      'gamewire, gamewire.bulk.1, gamewire.resume.1', `gamewire, gamewire.bulk.1, ${token}`, 'gamewire, gamewire.bulk.1, gamewire.bulk.2',
      'gamewire, gamewire.bulk.', 'gamewire, gamewire.bulk.01', 'gamewire, gamewire.bulk.-1', 'gamewire, gamewire.bulk.2147483648',
      'gamewire, gamewire.bulk.1x', 'gamewire, gamewire.token.AAAA',
    ]) expect(readWebSocketProtocols(h)).toBeUndefined();
  });
});
