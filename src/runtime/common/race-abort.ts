/**
 * Settles like `promise`, or rejects with the signal's reason as soon as it aborts. The promise is
 * not cancelled (it may hold work another party owns, such as an RPC); the caller just stops
 * waiting for it.
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
