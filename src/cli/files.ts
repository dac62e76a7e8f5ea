import { readFile, writeFile } from 'node:fs/promises';
import { dirname, resolve as resolvePath } from 'node:path';

/**
 * Why a file operation on `path` failed, for a person: the errno turned into words, naming the
 * directory when that is what is missing (Node's own messages leave the path out for some calls).
 */
export function fileErrorText(err: unknown, path: string, op: 'read' | 'write'): string {
  const e = err as NodeJS.ErrnoException;
  switch (e.code) {
    case 'ENOENT':
      return op === 'read' ? 'no such file' : `directory ${dirname(resolvePath(path))} does not exist`;
    case 'EISDIR':
      return 'it is a directory';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EROFS':
      return 'read-only file system';
    case 'ENOSPC':
      return 'no space left on the device';
    default:
      return e.code !== undefined ? `${e.code}` : String((err as Error)?.message ?? err);
  }
}

/** A file the user named could not be read or written; the CLI prints the message and exits 1. */
export class FileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FileError';
  }
}

/** Read `path` whole; rejects with a {@link FileError} naming `what` (e.g. `--token`) and the path. */
export async function readInput(path: string, what: string): Promise<Uint8Array> {
  try {
    const b = await readFile(path);
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  } catch (err) {
    throw new FileError(`cannot read ${what} ${path}: ${fileErrorText(err, path, 'read')}`);
  }
}

/** Write `data` to `path` (created or replaced); rejects with a {@link FileError} naming `what` and the path. */
export async function writeOutput(path: string, data: Uint8Array, what: string): Promise<void> {
  try {
    await writeFile(path, data);
  } catch (err) {
    throw new FileError(`cannot write ${what} ${path}: ${fileErrorText(err, path, 'write')}`);
  }
}
