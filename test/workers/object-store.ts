import { runInDurableObject } from 'cloudflare:test';
import { durableObjectSqlDriver } from '../../src/durable-objects/sql-driver.ts';
import { lazyRows, schemaObjects } from '../../src/runtime/store/schema.ts';
import { SqlStore } from '../../src/runtime/store/sql-store.ts';
import { isAdmissionRecord } from '../../src/runtime/store/records.ts';

/** Whether the object's database holds the store: a new object makes it at its first call. */
export function objectHasStore(stub: DurableObjectStub): Promise<boolean> {
  return runInDurableObject(stub, (_instance, state) => schemaObjects(durableObjectSqlDriver(state.storage)).size > 0);
}

/** The rows of a query on the object's database: none from a table its store has not made yet (the ledger, until its first row). */
export function objectRows(stub: DurableObjectStub, sql: string): Promise<Record<string, unknown>[]> {
  return runInDurableObject(stub, (_instance, state) => lazyRows(durableObjectSqlDriver(state.storage), sql));
}

/** A submission as the object's store holds it: its ledger row, or its admission and settlement in the log. */
export interface StoredSubmission {
  id: string;
  stream: string;
  status: string;
  outcome: string | null;
  attemptCount: number;
  /** Admitted in the log and never given a ledger row. */
  inLog: boolean;
}

/**
 * Every submission of the object, in admission order as far as the log tells it: the ledger's rows,
 * and the ones admitted in the log (docs/design/submission-rows.md) that have none — settled by
 * their log record, else still running.
 */
export function objectSubmissions(stub: DurableObjectStub): Promise<StoredSubmission[]> {
  return runInDurableObject(stub, (_instance, state) => {
    const store = new SqlStore(durableObjectSqlDriver(state.storage), { admitsInLog: true });
    const rows = store.listSubmissions();
    const found: StoredSubmission[] = rows.map((row) => ({
      id: row.id,
      stream: row.conversation,
      status: row.status,
      outcome: row.outcome,
      attemptCount: row.attemptCount,
      inLog: false,
    }));
    const ledger = new Set(rows.map((row) => row.id));
    for (const key of store.conversationKeys()) {
      for (const { records } of store.readBatches(key, -1)) {
        for (const record of records) {
          if (isAdmissionRecord(record) && !ledger.has(record.submissionId)) {
            found.push({ id: record.submissionId, stream: key, status: 'running', outcome: null, attemptCount: 1, inLog: true });
          }
          if (record.type !== 'submission_settled') continue;
          const logged = found.find((entry) => entry.inLog && entry.id === record.submissionId);
          if (logged !== undefined) Object.assign(logged, { status: 'settled', outcome: record.outcome });
        }
      }
    }
    return found;
  });
}
