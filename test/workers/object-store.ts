import { runInDurableObject } from 'cloudflare:test';
import { durableObjectSqlDriver } from '../../src/durable-objects/sql-driver.ts';
import { storeExists } from '../../src/runtime/store/schema.ts';

/** Whether the object's database holds the store: a new object makes it at its first call. */
export function objectHasStore(stub: DurableObjectStub): Promise<boolean> {
  return runInDurableObject(stub, (_instance, state) => storeExists(durableObjectSqlDriver(state.storage)));
}
