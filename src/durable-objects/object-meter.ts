/**
 * What a Durable Object counts of itself for the usage ledger: SQL rows written (workerd's own
 * per-statement counter, the one Cloudflare bills), alarms set and RPCs served. The counts are
 * kept in memory and handed to the engine at each settlement, which records them in the
 * settlement's ledger entry: keeping them costs no row of its own. An eviction loses what was
 * counted since the object's last settlement.
 */
import type { DurableObjectActivity } from '../runtime/common/types.ts';

export class ObjectMeter {
  private pending: DurableObjectActivity = { rowsWritten: 0, alarmsSet: 0, rpcsServed: 0 };

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

  /** What was counted since the last settlement, not yet recorded. */
  peek(): DurableObjectActivity {
    return { ...this.pending };
  }

  /** Hands the counts to a settlement and starts again from zero. */
  take(): DurableObjectActivity {
    const taken = this.pending;
    this.pending = { rowsWritten: 0, alarmsSet: 0, rpcsServed: 0 };
    return taken;
  }
}
