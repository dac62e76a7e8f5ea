/** Stable codes of errors thrown for caller misuse. Never renamed; new codes may be added. */
export type GamewireErrorCode =
  | 'invalid-config'
  | 'invalid-argument'
  | 'message-too-large'
  | 'block-too-large'
  | 'queue-full'
  | 'closed'
  | 'buffer-too-small'
  | 'invalid-state';

/**
 * Thrown at the API boundary when the caller misuses gamewire (bad config, oversize payload, use
 * after close). Bad bytes from the network never throw: they are dropped and counted.
 */
export class GamewireError extends Error {
  /** Stable, machine-readable reason. */
  readonly code: GamewireErrorCode;

  constructor(code: GamewireErrorCode, message: string) {
    super(`${code}: ${message}`);
    this.name = 'GamewireError';
    this.code = code;
  }
}

/** Throw `invalid-config` unless `ok`. */
export function checkConfig(ok: boolean, message: string): void {
  if (!ok) throw new GamewireError('invalid-config', message);
}

/** Throw `invalid-argument` unless `ok`. */
export function checkArg(ok: boolean, message: string): void {
  if (!ok) throw new GamewireError('invalid-argument', message);
}
