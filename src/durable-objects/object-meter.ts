/**
 * What a Durable Object counts of itself for the usage ledger (`getUsage()`'s `durableObject`):
 * SQL rows written (workerd's own per-statement counter, the one Cloudflare bills), alarms set,
 * RPCs served, and the database's size. Counts accumulate in memory and are added to one stored
 * row at the end of each alarm pass (one row written per pass, which every admission and abort
 * wakes), so reads never become writes; an eviction loses at most what was counted since the
 * object's last alarm pass.
 */
import type { DurableObjectCounters } from '../runtime/common/types.ts';

const TABLE = 'flue_object_meter';

type Pending = Omit<DurableObjectCounters, 'bytesStored'>;

export class ObjectMeter {
  private readonly sql: SqlStorage;
  private pending: Pending = { rowsWritten: 0, alarmsSet: 0, rpcsServed: 0 };

  constructor(sql: SqlStorage) {
    this.sql = sql;
  }

  /** Creates the meter's table; after the store's migration, which expects to find an empty database or its own. */
  open(): void {
    this.exec(
      `CREATE TABLE IF NOT EXISTS ${TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), rows_written INTEGER NOT NULL, alarms_set INTEGER NOT NULL, rpcs_served INTEGER NOT NULL)`,
    );
  }

  /** A statement's rows written (the store's driver reports each). */
  rowsWritten(rows: number): void {
    this.pending.rowsWritten += rows;
  }

  alarmSet(): void {
    this.pending.alarmsSet++;
  }

  rpcServed(): void {
    this.pending.rpcsServed++;
  }

  /** What is stored plus what is pending, and the database's size now. */
  read(): DurableObjectCounters {
    const row = this.sql.exec(`SELECT rows_written, alarms_set, rpcs_served FROM ${TABLE} WHERE id = 1`).toArray()[0] as
      | { rows_written: number; alarms_set: number; rpcs_served: number }
      | undefined;
    return {
      rowsWritten: (row?.rows_written ?? 0) + this.pending.rowsWritten,
      alarmsSet: (row?.alarms_set ?? 0) + this.pending.alarmsSet,
      rpcsServed: (row?.rpcs_served ?? 0) + this.pending.rpcsServed,
      bytesStored: this.sql.databaseSize,
    };
  }

  /** Adds the pending counts to the stored row (its own row write is counted in the next flush). */
  flush(): void {
    const { rowsWritten, alarmsSet, rpcsServed } = this.pending;
    if (rowsWritten + alarmsSet + rpcsServed === 0) return;
    this.pending = { rowsWritten: 0, alarmsSet: 0, rpcsServed: 0 };
    this.exec(
      `INSERT INTO ${TABLE} (id, rows_written, alarms_set, rpcs_served) VALUES (1, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET rows_written = rows_written + excluded.rows_written,
         alarms_set = alarms_set + excluded.alarms_set, rpcs_served = rpcs_served + excluded.rpcs_served`,
      rowsWritten,
      alarmsSet,
      rpcsServed,
    );
  }

  private exec(query: string, ...params: number[]): void {
    const cursor = this.sql.exec(query, ...params);
    cursor.toArray();
    this.pending.rowsWritten += cursor.rowsWritten;
  }
}
