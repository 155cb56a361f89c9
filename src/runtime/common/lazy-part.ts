/**
 * Code the runtime loads on its first use rather than at start: a module reached only through a
 * dynamic `import()` handed to `lazyPart`. On Node each such module is a file of the built package
 * loaded by the first use; in a Worker built by `flue build` it is a chunk workerd compiles then.
 * A module imported so must stay imported only so: a static import from anywhere else brings it
 * back into every start (test/node-start-load.test.ts pins the parts a start must not load). The
 * first use awaits the load; a load that fails rejects that use with an error naming the part, and
 * the next use tries again.
 */
import { FlueError } from './errors.ts';

/** `load` once, shared by concurrent first uses; a failure is not cached. */
export function lazyPart<T>(name: string, load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((cause: unknown) => {
      loading = undefined;
      throw new FlueError('internal_error', {
        message: `The runtime could not load its ${name} code.`,
        dev: cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause),
        cause,
      });
    }));
}
