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
 * read when the meter is read or when a few hundred cursors wait: those are workerd's own
 * per-statement counters, the ones Cloudflare bills (index entries included), and by then the store
 * has consumed each statement's rows (it does so before its next statement). Nothing wraps the
 * cursor: the meter's own CPU per statement is one push. Alarm and KV calls are counted per call:
 * Cloudflare bills "each setAlarm()" as one row written (Durable Objects pricing page).
 * Storage is read from `sql.databaseSize`, the size Cloudflare bills stored data on. Requests are
 * counted by `meterRequests`, on the class's entry points rather than through `ctx`.
 *
 * What an object counted is kept in a tally of plain numbers that holds nothing of the object, so
 * an isolate that has served thousands of objects keeps no cursor, storage or context of theirs.
 * `pauseMeters(true)` (`POST /meter/pause`) lets statements go straight through: the CPU
 * benchmarks that read no meter (200 conversations at once, 250 sends) run without any meter.
 */

export interface WriteRecord {
  /** The statement, whitespace-collapsed and cut to 80 characters. */
  sql: string;
  rowsWritten: number;
  /** For `INSERT INTO flue_log`: the record types of the appended batch. */
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

/** The counts a meter starts from, and returns to at `reset()` (the database's size is not a count). */
type Counts = Omit<MeterSnapshot, 'bytesStored' | 'writes'>;

function zeroCounts(): Counts {
  return { sqlStatements: 0, sqlRowsWritten: 0, sqlRowsRead: 0, setAlarm: 0, deleteAlarm: 0, kvWrites: 0 };
}

/** What one object's meter has counted: numbers, and the cursors not yet read (a few hundred at most). */
interface Tally extends Counts {
  bytesStored: number;
  pending: { cursor: SqlStorageCursor<Record<string, SqlStorageValue>>; query: string; records?: unknown }[];
  /** Every statement that wrote, when the meter was asked to keep them (`meterStorage(ctx, { writes: true })`). */
  writes: WriteRecord[] | undefined;
}

/** Every meter's tally in this isolate, for `isolateWrites()`. */
const tallies: Tally[] = [];

/** Cursors read into the tally once this many wait. */
const PENDING_CURSORS = 256;

let paused = false;

/** Stops (or restarts) every meter of this isolate counting: while paused, statements go straight to SQLite. */
export function pauseMeters(pause: boolean): void {
  paused = pause;
}

/** Reads the waiting cursors' counters into the tally. */
function settle(tally: Tally): void {
  for (const { cursor, query, records } of tally.pending) {
    tally.sqlRowsRead += cursor.rowsRead;
    const written = cursor.rowsWritten;
    if (written === 0) continue;
    tally.sqlRowsWritten += written;
    if (tally.writes === undefined) continue;
    const record: WriteRecord = { sql: query.replace(/\s+/g, ' ').trim().slice(0, 80), rowsWritten: written };
    if (typeof records === 'string') {
      Object.defineProperty(record, 'recordTypes', {
        enumerable: true,
        get: () => (JSON.parse(records) as { type: string }[]).map((r) => r.type),
      });
    }
    tally.writes.push(record);
  }
  tally.pending = [];
}

function snapshotOf(tally: Tally): MeterSnapshot {
  settle(tally);
  const { pending: _, writes, ...figures } = tally;
  return { ...figures, writes: writes === undefined ? [] : [...writes] };
}

function resetTally(tally: Tally): void {
  settle(tally);
  Object.assign(tally, zeroCounts());
  if (tally.writes !== undefined) tally.writes = [];
}

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
    objects: tallies.length,
    sqlRowsWritten: 0,
    setAlarm: 0,
    kvWrites: 0,
    billed: 0,
    sqlRowsRead: 0,
    bytesStored: 0,
    requests,
  };
  for (const tally of tallies) {
    settle(tally);
    const { sqlRowsWritten, setAlarm, kvWrites, sqlRowsRead, bytesStored } = tally;
    total.sqlRowsWritten += sqlRowsWritten;
    total.setAlarm += setAlarm;
    total.kvWrites += kvWrites;
    total.sqlRowsRead += sqlRowsRead;
    total.bytesStored += bytesStored;
  }
  total.billed = total.sqlRowsWritten + total.setAlarm + total.kvWrites;
  return total;
}

/** A baseline's way of answering one message to conversation `id` with its reply. */
type Exchange = (id: string, text: string) => Promise<string>;

/**
 * The routes of the `wrangler dev` baselines (bench/node/wrangler-cpu.ts): `POST /turn/:id` answers
 * `{ reply }` from `turn(id, text)` (and `POST /receipt/:id` from `receipt`, when the baseline has
 * one), `GET /meter` answers `isolateWrites()`, and `POST /meter/pause` / `POST /meter/resume` call
 * `pauseMeters()`.
 */
export async function benchRoutes(request: Request, exchanges: { turn: Exchange; receipt?: Exchange }): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === '/meter') return Response.json(isolateWrites());
  if (url.pathname === '/meter/pause' || url.pathname === '/meter/resume') {
    pauseMeters(url.pathname === '/meter/pause');
    return new Response(null, { status: 204 });
  }
  const match = /^\/(turn|receipt)\/([^/]+)$/.exec(url.pathname);
  const exchange = match === null ? undefined : exchanges[match[1] as 'turn' | 'receipt'];
  if (request.method !== 'POST' || exchange === undefined) return new Response('not found', { status: 404 });
  return Response.json({ reply: await exchange(match![2]!, await request.text()) });
}

export function meterStorage(ctx: DurableObjectState, options: { writes?: boolean } = {}): StorageMeter {
  const storage = ctx.storage;
  const sql = storage.sql;
  const tally: Tally = {
    ...zeroCounts(),
    bytesStored: paused ? 0 : sql.databaseSize,
    pending: [],
    writes: options.writes === true ? [] : undefined,
  };
  tallies.push(tally);
  // Read inside the object after its writes: `databaseSize` is storage I/O, which the Worker's
  // `/meter` handler may not do on the object's behalf. Once per task, however many statements it
  // wrote (a microtask still runs in the object, before anything else can read the meter): a read
  // per statement was CPU charged to whichever side writes more statements.
  let sizeStale = false;
  const noteSize = () => {
    if (sizeStale || paused) return;
    sizeStale = true;
    queueMicrotask(() => {
      sizeStale = false;
      tally.bytesStored = sql.databaseSize;
    });
  };

  const exec = (query: string, ...bindings: unknown[]) => {
    if (paused) return sql.exec(query, ...bindings);
    // The cursors before this one are consumed (the store reads a statement's rows before its next).
    if (tally.pending.length >= PENDING_CURSORS) settle(tally);
    const cursor = sql.exec(query, ...bindings);
    tally.sqlStatements++;
    // A batch's records are kept for `recordTypes`, parsed only when that is read.
    tally.pending.push(
      tally.writes !== undefined && query.startsWith('INSERT INTO flue_log') ? { cursor, query, records: bindings[2] } : { cursor, query },
    );
    if (WRITES.test(query)) noteSize();
    return cursor;
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
            if (!paused) tally.kvWrites++;
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
      if (key === 'setAlarm') return (...args: unknown[]) => (paused || tally.setAlarm++, value.apply(target, args));
      if (key === 'deleteAlarm') return (...args: unknown[]) => (paused || tally.deleteAlarm++, value.apply(target, args));
      if (typeof key === 'string' && KV_WRITES.has(key)) {
        return async (...args: unknown[]) => {
          if (!paused) tally.kvWrites++;
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

  return { snapshot: () => snapshotOf(tally), reset: () => resetTally(tally) };
}
