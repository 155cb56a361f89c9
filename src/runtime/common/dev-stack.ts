/**
 * Dev-mode descriptions of the user's own errors: the message, the first stack frame in the
 * project's `src/` (`src/agents/x.ts:12:5`), and the stack with bundle frames mapped back to the
 * sources. On Node the server runs with `--enable-source-maps`, so frames only need to be made
 * relative to the project; a Worker's frames point into `dist/worker.js` until the host installs
 * the bundle's source map (`setDevSourceMap`, only under `flue dev`).
 */
import type { DecodedSourceMap, SourcePosition } from './source-map.ts';

export interface DevSourceMap {
  /** The bundle's file name as frames print it (`worker.js`); frames of other files are left alone. */
  bundle: string;
  map: DecodedSourceMap;
}

// A global symbol, so two copies of this module in one isolate agree.
const SLOT = Symbol.for('flue.devSourceMap');
type Slot = { [SLOT]?: DevSourceMap };

export function setDevSourceMap(installed: DevSourceMap | undefined): void {
  if (installed === undefined) delete (globalThis as Slot)[SLOT];
  else (globalThis as Slot)[SLOT] = installed;
}

/** `    at fn (file:12:5)`, `    at file:12:5`; the file itself may contain colons (`file:///…`). */
const FRAME = /^(\s*at (?:.+? \()?)(.+):(\d+):(\d+)(\)?)$/;

/** Message and stack of a thrown value, the head line naming its `src/` location when known. */
export function describeForDeveloper(error: unknown): string {
  if (!(error instanceof Error)) {
    try {
      return `Thrown value: ${typeof error === 'string' ? error : JSON.stringify(error)}`;
    } catch {
      return `Thrown value: ${String(error)}`;
    }
  }
  const head = `${error.name}: ${error.message}`;
  if (error.stack === undefined) return head;
  // V8 stacks start with the same head line; other hosts may omit it.
  const frames = mapFrames(error.stack.startsWith(head) ? error.stack.slice(head.length) : `\n${error.stack}`);
  return `${head}${frames.location === undefined ? '' : ` (at ${frames.location})`}${frames.text}`;
}

/** Rewrites every frame line it recognizes; `location` is the first frame in the project's src/. */
export function mapFrames(stack: string): { text: string; location?: string } {
  let location: string | undefined;
  const text = stack
    .split('\n')
    .map((line) => {
      const match = FRAME.exec(line);
      if (match === null) return line;
      const position = rewrite(match[2]!, Number(match[3]), Number(match[4]));
      const shown = `${position.file}:${position.line}:${position.column}`;
      if (location === undefined && position.file.startsWith('src/')) location = shown;
      return `${match[1]}${shown}${match[5]}`;
    })
    .join('\n');
  return location === undefined ? { text } : { text, location };
}

function rewrite(file: string, line: number, column: number): SourcePosition {
  const installed = (globalThis as Slot)[SLOT];
  if (installed !== undefined && baseName(file) === installed.bundle) {
    const mapped = installed.map.lookup(line, column);
    if (mapped !== undefined) return mapped;
  }
  return { file: projectRelative(file.startsWith('file://') ? decodeURI(file.slice('file://'.length)) : file), line, column };
}

/** Relative to the working directory (the project, under `flue dev`), where there is one. */
function projectRelative(file: string): string {
  let cwd: string | undefined;
  try {
    cwd = (globalThis as { process?: { cwd?: () => string } }).process?.cwd?.();
  } catch {
    cwd = undefined;
  }
  if (cwd === undefined || cwd === '/' || cwd === '') return file;
  const prefix = cwd.endsWith('/') ? cwd : `${cwd}/`;
  return file.startsWith(prefix) ? file.slice(prefix.length) : file;
}

function baseName(file: string): string {
  return file.slice(file.lastIndexOf('/') + 1);
}
