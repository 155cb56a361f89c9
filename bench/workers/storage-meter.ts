/**
 * Counts what a Durable Object writes, by wrapping its storage API (not by estimating).
 *
 * `meterStorage(ctx)` must run before the object's base constructor reads `ctx.storage`: a
 * subclass constructor may run statements before `super()` as long as they do not touch `this`.
 * It shadows the `storage` accessor of that one `DurableObjectState` with a proxy, so every later
 * `ctx.storage` / `this.ctx.storage` in the base (the SQL driver, alarms, the Cloudflare context
 * handed to tools) goes through the meter. Nothing else in the isolate is touched.
 *
 * SQL: every `sql.exec()` cursor is kept as it is returned, and its `rowsWritten` / `rowsRead` are
 * read when the meter is read: those are workerd's own per-statement counters, the ones Cloudflare
 * bills (index entries included), and they hold what the statement did by then, however far its
 * rows were consumed. Nothing wraps the cursor: the meter's own CPU per statement is one push,
 * so a side that runs more statements is not charged for the meter (the CPU benchmarks meter every
 * statement). Alarm and KV calls are counted per call: Cloudflare bills "each setAlarm()" as one
 * row written (Durable Objects pricing page).
 * Storage is read from `sql.databaseSize`, the size Cloudflare bills stored data on. Requests are
 * counted by `meterRequests`, on the class's entry points rather than through `ctx`.
 */

export interface WriteRecord {
  /** The statement, whitespace-collapsed and cut to 80 characters. */
  sql: string;
  rowsWritten: number;
  /** For `INSERT INTO flue_batches`: the record types of the appended batch. */
  recordTypes?: string[];
}

export interface MeterSnapshot {
  sqlStatements: number;
  sqlRowsWritten: number;
  sqlRowsRead: number;
  setAlarm: number;
  deleteAlarm: number;
  kvWrites: number;
  /** The database's size now (`ctx.storage.sql.databaseSize`). */
  bytesStored: number;
  /** Every statement that wrote at least one row, in order. */
  writes: WriteRecord[];
}

export interface StorageMeter {
  snapshot(): MeterSnapshot;
  reset(): void;
}

const KV_WRITES = new Set(['put', 'delete', 'deleteAll']);
/** Statements that may change the database's size. */
const WRITES = /^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b/i;

/** Every meter made in this isolate, for `isolateWrites()`. */
const meters: StorageMeter[] = [];

/** What an isolate's objects wrote, summed over every meter made in it. */
export interface IsolateWrites {
  objects: number;
  sqlRowsWritten: number;
  setAlarm: number;
  kvWrites: number;
  /** SQL rows + `setAlarm` calls + KV writes: rows as billed. */
  billed: number;
  /** SQL rows read (workerd's per-statement counter; KV reads are not counted). */
  sqlRowsRead: number;
  /** Bytes the objects' SQLite databases hold now (`ctx.storage.sql.databaseSize`, what storage is billed on). */
  bytesStored: number;
  /** Calls of the objects' request entry points (`meterRequests`): what Cloudflare bills as requests. */
  requests: number;
}

let requests = 0;

/**
 * Counts every call of the request entry points of a Durable Object class: its RPC methods and
 * `alarm`, the calls Cloudflare bills as one request each ("Every RPC method call on a Durable
 * Objects stub is its own RPC session"; alarm invocations count too). Each method of the chain
 * above `prototype` that `isEntry` names is redefined on `prototype` to count, then run as before.
 */
export function meterRequests(prototype: object, isEntry: (name: string) => boolean): void {
  const names = new Set<string>();
  for (let at: object | null = prototype; at !== null && at !== Object.prototype; at = Object.getPrototypeOf(at)) {
    for (const name of Object.getOwnPropertyNames(at)) if (name !== 'constructor' && isEntry(name)) names.add(name);
  }
  for (const name of names) {
    const original = (prototype as Record<string, unknown>)[name];
    if (typeof original !== 'function') continue;
    Object.defineProperty(prototype, name, {
      configurable: true,
      writable: true,
      value(this: unknown, ...args: unknown[]) {
        requests++;
        return original.apply(this, args);
      },
    });
  }
}

/**
 * The sum over every metered object in this isolate (`wrangler dev` runs a Worker and its objects
 * in one isolate), read from the Worker's own fetch handler.
 */
export function isolateWrites(): IsolateWrites {
  const total: IsolateWrites = {
    objects: meters.length,
    sqlRowsWritten: 0,
    setAlarm: 0,
    kvWrites: 0,
    billed: 0,
    sqlRowsRead: 0,
    bytesStored: 0,
    requests,
  };
  for (const meter of meters) {
    const { sqlRowsWritten, setAlarm, kvWrites, sqlRowsRead, bytesStored } = meter.snapshot();
    total.sqlRowsWritten += sqlRowsWritten;
    total.setAlarm += setAlarm;
    total.kvWrites += kvWrites;
    total.sqlRowsRead += sqlRowsRead;
    total.bytesStored += bytesStored;
  }
  total.billed = total.sqlRowsWritten + total.setAlarm + total.kvWrites;
  return total;
}

/**
 * The routes of the `wrangler dev` baselines (bench/node/wrangler-cpu.ts): `POST /turn/:id` answers
 * `{ reply }` from `turn(id, text)`, and `GET /meter` answers `isolateWrites()`.
 */
export async function benchRoutes(request: Request, turn: (id: string, text: string) => Promise<string>): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === '/meter') return Response.json(isolateWrites());
  const match = /^\/turn\/([^/]+)$/.exec(url.pathname);
  if (request.method !== 'POST' || match === null) return new Response('not found', { status: 404 });
  return Response.json({ reply: await turn(match[1]!, await request.text()) });
}

export function meterStorage(ctx: DurableObjectState): StorageMeter {
  const storage = ctx.storage;
  const sql = storage.sql;
  let state = fresh();
  // Read inside the object after its writes: `databaseSize` is storage I/O, which the Worker's
  // `/meter` handler may not do on the object's behalf. Once per task, however many statements it
  // wrote (a microtask still runs in the object, before anything else can read the meter): a read
  // per statement was CPU charged to whichever side writes more statements.
  let bytesStored = sql.databaseSize;
  let sizeStale = false;
  const noteSize = () => {
    if (sizeStale) return;
    sizeStale = true;
    queueMicrotask(() => {
      sizeStale = false;
      bytesStored = sql.databaseSize;
    });
  };

  function fresh() {
    return { setAlarm: 0, deleteAlarm: 0, kvWrites: 0 };
  }
  /** Every statement run since the last reset, with its cursor, in order. */
  let statements: { cursor: SqlStorageCursor<Record<string, SqlStorageValue>>; query: string; records?: unknown }[] = [];

  const exec = (query: string, ...bindings: unknown[]) => {
    const cursor = sql.exec(query, ...bindings);
    // A batch's records are kept for `recordTypes`, parsed only when that is read.
    statements.push(query.startsWith('INSERT INTO flue_batches') ? { cursor, query, records: bindings[2] } : { cursor, query });
    if (WRITES.test(query)) noteSize();
    return cursor;
  };

  /** The SQL figures of the statements run so far, from their cursors' counters now. */
  const sqlFigures = () => {
    let sqlRowsWritten = 0;
    let sqlRowsRead = 0;
    const writes: WriteRecord[] = [];
    for (const { cursor, query, records } of statements) {
      sqlRowsRead += cursor.rowsRead;
      const written = cursor.rowsWritten;
      if (written === 0) continue;
      sqlRowsWritten += written;
      const record: WriteRecord = { sql: query.replace(/\s+/g, ' ').trim().slice(0, 80), rowsWritten: written };
      if (typeof records === 'string') {
        Object.defineProperty(record, 'recordTypes', {
          enumerable: true,
          get: () => (JSON.parse(records) as { type: string }[]).map((r) => r.type),
        });
      }
      writes.push(record);
    }
    return { sqlStatements: statements.length, sqlRowsWritten, sqlRowsRead, writes };
  };

  const meteredSql = new Proxy(sql, {
    get(target, key) {
      if (key === 'exec') return exec;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });

  // The synchronous KV API (`ctx.storage.kv`) writes rows too.
  const meteredKv = (kv: object) =>
    new Proxy(kv, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        if (key === 'put' || key === 'delete') {
          return (...args: unknown[]) => {
            state.kvWrites++;
            const result = value.apply(target, args);
            noteSize();
            return result;
          };
        }
        return value.bind(target);
      },
    });

  const meteredStorage = new Proxy(storage, {
    get(target, key) {
      if (key === 'sql') return meteredSql;
      const value = Reflect.get(target, key, target);
      if (key === 'kv' && typeof value === 'object' && value !== null) return meteredKv(value);
      if (typeof value !== 'function') return value;
      if (key === 'setAlarm') return (...args: unknown[]) => (state.setAlarm++, value.apply(target, args));
      if (key === 'deleteAlarm') return (...args: unknown[]) => (state.deleteAlarm++, value.apply(target, args));
      if (typeof key === 'string' && KV_WRITES.has(key)) {
        return async (...args: unknown[]) => {
          state.kvWrites++;
          const result = await value.apply(target, args);
          noteSize();
          return result;
        };
      }
      return value.bind(target);
    },
  });

  Object.defineProperty(ctx, 'storage', { value: meteredStorage, configurable: true, enumerable: true });
  if (ctx.storage !== meteredStorage) throw new Error('bench: could not shadow ctx.storage');

  const meter: StorageMeter = {
    snapshot: () => ({ ...state, ...sqlFigures(), bytesStored }),
    reset: () => {
      state = fresh();
      statements = [];
    },
  };
  meters.push(meter);
  return meter;
}
