/**
 * The rebuild loop both `flue dev` targets share: watch `src/` and a few root files, debounce a
 * burst of file events into one rebuild, and never run two rebuilds at once (a change that
 * arrives during one runs it again once it ends).
 *
 * `src/` is watched one directory at a time (non-recursive `fs.watch`), never file by file. A
 * directory watch reports every entry by name, so it survives the saves that replace a file's
 * inode: rename-over (write a temporary file, rename it onto the original, as editors and
 * `sed -i` do) and delete-and-recreate. Node's recursive watcher on Linux watches each file's
 * inode instead and goes deaf to a file once it has been renamed over. New, removed and replaced
 * directories are picked up by re-walking the tree whenever an entry appears or disappears.
 */
import { type FSWatcher, existsSync, readdirSync, watch } from 'node:fs';
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

  const onError = (error: Error) => options.stderr(`[flue] watcher: ${error.message}\n`);
  const src = path.join(options.root, 'src');
  const tree = new DirectoryWatches(src, schedule, onError);
  tree.sync();
  const rootWatcher = watch(options.root, (_event, filename) => {
    const name = filename === null ? undefined : String(filename);
    if (name === 'src') {
      // src/ itself was created, removed or replaced: its watches point at the old directory.
      tree.replaced(src);
      schedule();
    } else if (name !== undefined && options.rootFiles.has(name)) schedule();
  });
  rootWatcher.on('error', onError);

  return {
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      rootWatcher.close();
      tree.close();
    },
  };
}

/** Directories under `src/` the build never reads (as the agent scan skips them). */
function ignoredDirectory(name: string): boolean {
  return name === 'node_modules' || name === 'dist' || name.startsWith('.');
}

/**
 * One non-recursive watcher per directory of a tree, kept in step with the tree by `sync()`. When
 * an entry of a directory is renamed, created or removed, whatever was watched at that path and
 * below is dropped and watched afresh: a directory deleted and created again under the same name
 * needs a new watcher, and the file system may even give it the old inode number.
 */
class DirectoryWatches {
  private readonly watched = new Map<string, FSWatcher>();
  private closed = false;
  private readonly top: string;
  private readonly onChange: () => void;
  private readonly onError: (error: Error) => void;

  constructor(top: string, onChange: () => void, onError: (error: Error) => void) {
    this.top = top;
    this.onChange = onChange;
    this.onError = onError;
  }

  /** Forgets the watches of `target` and below, then re-walks the tree. */
  replaced(target: string): void {
    const prefix = `${target}${path.sep}`;
    for (const [dir, watcher] of this.watched) {
      if (dir !== target && !dir.startsWith(prefix)) continue;
      watcher.close();
      this.watched.delete(dir);
    }
    this.sync();
  }

  sync(): void {
    if (this.closed) return;
    const present = new Set<string>();
    const visit = (dir: string) => {
      let entries;
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch {
        return; // removed while walking: the event that follows settles it
      }
      present.add(dir);
      for (const entry of entries) if (entry.isDirectory() && !ignoredDirectory(entry.name)) visit(path.join(dir, entry.name));
    };
    visit(this.top);
    for (const [dir, watcher] of this.watched) {
      if (present.has(dir)) continue;
      watcher.close();
      this.watched.delete(dir);
    }
    for (const dir of present) {
      if (this.watched.has(dir)) continue;
      let watcher: FSWatcher;
      try {
        watcher = watch(dir, (event, filename) => {
          // `rename`: an entry appeared or went; if it is (or was) a directory, its watches are stale.
          if (event === 'rename') {
            if (filename === null) this.sync();
            else this.replaced(path.join(dir, String(filename)));
          }
          this.onChange();
        });
      } catch {
        continue; // removed between the walk and the watch
      }
      watcher.on('error', (error) => {
        // A watched directory that is deleted can report an error as it goes; its parent's event re-arms.
        if (existsSync(dir)) this.onError(error);
        this.replaced(dir);
        this.onChange();
      });
      this.watched.set(dir, watcher);
    }
  }

  close(): void {
    this.closed = true;
    for (const watcher of this.watched.values()) watcher.close();
    this.watched.clear();
  }
}
