/**
 * Where a driver reports what it has no one else to hand to: an exception thrown by the
 * application's own event handler when no error handler was given. `console` is one; a pino or
 * winston logger fits behind a one-line adapter. The drivers never write anywhere else.
 */
export interface Logger {
  /** Report `error` (whatever was thrown) with a one-line `message` saying what happened and what goes on. */
  error(message: string, error: unknown): void;
}

/** True if `v` can serve as a `Logger`. */
export function isLogger(v: unknown): v is Logger {
  return typeof v === 'object' && v !== null && typeof (v as { error?: unknown }).error === 'function';
}
