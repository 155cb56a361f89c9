/**
 * `work()`'s promise, or a rejection with what it throws before it returns one. A function that
 * chains its promises instead of being `async` (so a call that waits holds no suspended frame)
 * answers through this, and still never throws synchronously.
 */
export function promised<T>(work: () => Promise<T>): Promise<T> {
  try {
    return work();
  } catch (error) {
    return Promise.reject(error);
  }
}
