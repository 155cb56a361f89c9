/**
 * The rebuild loop both `flue dev` targets share: watch `src/` and a few root files, debounce a
 * burst of file events into one rebuild, and never run two rebuilds at once (a change that
 * arrives during one runs it again once it ends).
 */
import { type FSWatcher, watch } from 'node:fs';
import path from 'node:path';

const DEBOUNCE_MS = 120;

export interface SourceWatch {
  close(): void;
}

export function watchSources(options: {
  root: string;
  /** File names directly under the root whose change also triggers a rebuild. */
  rootFiles: ReadonlySet<string>;
  /** One rebuild; it reports its own failures. */
  rebuild(): Promise<void>;
  stderr(text: string): void;
}): SourceWatch {
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let rebuilding = false;
  let pending = false;

  const run = async () => {
    if (rebuilding) {
      pending = true;
      return;
    }
    rebuilding = true;
    try {
      do {
        pending = false;
        await options.rebuild();
      } while (pending && !closed);
    } finally {
      rebuilding = false;
    }
  };

  const schedule = () => {
    if (closed) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void run();
    }, DEBOUNCE_MS);
  };

  const watchers: FSWatcher[] = [
    watch(path.join(options.root, 'src'), { recursive: true }, schedule),
    watch(options.root, (_event, filename) => {
      if (filename !== null && options.rootFiles.has(String(filename))) schedule();
    }),
  ];
  for (const watcher of watchers) watcher.on('error', (error) => options.stderr(`[flue] watcher: ${error.message}\n`));

  return {
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}
