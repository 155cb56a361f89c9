/**
 * The check of a user-supplied persistence adapter (`db.ts`'s default export), made by the Node
 * server and by `flue run` alike. The contract itself is `PersistenceAdapter`
 * (runtime/store/persistence.ts); what can be checked before calling it is that its verbs exist.
 */

/** The verbs of `PersistenceAdapter`, as far as their presence can be checked. */
export interface AdapterVerbs {
  migrate: Function;
  connect: Function;
  close: Function;
}

export function hasAdapterVerbs(value: unknown): value is AdapterVerbs {
  const adapter = value as Partial<AdapterVerbs> | null;
  return (
    typeof adapter === 'object' &&
    adapter !== null &&
    typeof adapter.migrate === 'function' &&
    typeof adapter.connect === 'function' &&
    typeof adapter.close === 'function'
  );
}

/** What a host says when `file`'s default export is not an adapter. */
export function notAnAdapterMessage(file: string): string {
  return `${file} must default-export a persistence adapter, e.g. \`export default sqlite('./data/flue.db')\`.`;
}
