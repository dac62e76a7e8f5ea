/** What every process of the fleet agrees on: the game's protocol id and, from the environment, the key. */
export const FLEET_PROTOCOL_ID = 0x666c656574n; // "fleet"

/** The 32-byte private key shared by the matchmaker and the game servers, from GAMEWIRE_KEY (64 hex digits). */
export function keyFromEnv(): Uint8Array {
  const hex = process.env.GAMEWIRE_KEY ?? '';
  if (!/^[0-9a-f]{64}$/i.test(hex)) throw new Error('GAMEWIRE_KEY must be 64 hex digits (the fleet\'s private key)');
  return Uint8Array.from(hex.match(/../g)!.map((h) => Number.parseInt(h, 16)));
}
