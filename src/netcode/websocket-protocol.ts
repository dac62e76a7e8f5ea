import { CONNECT_TOKEN_BYTES } from './wire.js';

/**
 * The WebSocket subprotocol gamewire speaks (each binary message one netcode packet), and the one the
 * server selects. The client offers it beside either `gamewire.token.<token>` (a new connection: the
 * connect token in base64url without padding, so the server can check it before the upgrade completes;
 * a browser cannot set other headers on a WebSocket, and a URL would put the token in every access log)
 * or `gamewire.resume.<client index>` (a connected client moving to this WebSocket: its first packet
 * on it proves it, sealed with its key), or `gamewire.bulk.<client index>` (a connected client's
 * second WebSocket, for its block lane: proven the same way).
 */
export const WEBSOCKET_PROTOCOL = 'gamewire';
const TOKEN_PREFIX = 'gamewire.token.';
const RESUME_PREFIX = 'gamewire.resume.';
const BULK_PREFIX = 'gamewire.bulk.';
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The subprotocols a client offers for `token`: `[WEBSOCKET_PROTOCOL, 'gamewire.token.<base64url>']`. */
export function webSocketProtocols(token: Uint8Array): [string, string] {
  let s = '';
  for (let i = 0; i < token.length; i += 3) {
    const n = (token[i]! << 16) | ((token[i + 1] ?? 0) << 8) | (token[i + 2] ?? 0);
    const left = token.length - i;
    s += B64URL[(n >> 18) & 63]! + B64URL[(n >> 12) & 63]!;
    if (left > 1) s += B64URL[(n >> 6) & 63]!;
    if (left > 2) s += B64URL[n & 63]!;
  }
  return [WEBSOCKET_PROTOCOL, TOKEN_PREFIX + s];
}

/** The subprotocols a connected client offers to move to a WebSocket: `[WEBSOCKET_PROTOCOL, 'gamewire.resume.<clientIndex>']`. */
export function resumeProtocols(clientIndex: number): [string, string] {
  return [WEBSOCKET_PROTOCOL, RESUME_PREFIX + String(clientIndex)];
}

/** The subprotocols a connected client offers for the WebSocket of its block lane: `[WEBSOCKET_PROTOCOL, 'gamewire.bulk.<clientIndex>']`. */
export function bulkProtocols(clientIndex: number): [string, string] {
  return [WEBSOCKET_PROTOCOL, BULK_PREFIX + String(clientIndex)];
}

/**
 * What a `Sec-WebSocket-Protocol` header asks for: a new connection with its connect token, a
 * connected client's resumption or block-lane transport (its index, < 2^31), or undefined unless it
 * offers `WEBSOCKET_PROTOCOL` and exactly one well-formed token (`CONNECT_TOKEN_BYTES` bytes) or index.
 */
export function readWebSocketProtocols(header: string | undefined): { token: Uint8Array } | { resume: number } | { bulk: number } | undefined {
  if (typeof header !== 'string') return undefined;
  const offered = header.split(',').map((p) => p.trim());
  if (!offered.includes(WEBSOCKET_PROTOCOL)) return undefined;
  const tokens = offered.filter((p) => p.startsWith(TOKEN_PREFIX));
  const indexes = offered.filter((p) => p.startsWith(RESUME_PREFIX) || p.startsWith(BULK_PREFIX));
  if (tokens.length + indexes.length !== 1) return undefined;
  if (indexes.length === 1) {
    const bulk = indexes[0]!.startsWith(BULK_PREFIX);
    const digits = indexes[0]!.slice((bulk ? BULK_PREFIX : RESUME_PREFIX).length);
    if (!/^(0|[1-9][0-9]{0,9})$/.test(digits) || Number(digits) >= 2 ** 31) return undefined;
    return bulk ? { bulk: Number(digits) } : { resume: Number(digits) };
  }
  const token = readToken(tokens[0]!.slice(TOKEN_PREFIX.length));
  return token === undefined ? undefined : { token };
}

/** A base64url connect token (no padding), or undefined. */
function readToken(text: string): Uint8Array | undefined {
  if (text.length !== Math.ceil((CONNECT_TOKEN_BYTES * 4) / 3)) return undefined;
  const out = new Uint8Array(CONNECT_TOKEN_BYTES);
  let bits = 0;
  let acc = 0;
  let j = 0;
  for (let i = 0; i < text.length; i++) {
    const v = B64URL.indexOf(text[i]!);
    if (v < 0) return undefined;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (j < out.length) out[j++] = (acc >> bits) & 0xff;
    }
  }
  return j === CONNECT_TOKEN_BYTES ? out : undefined;
}
