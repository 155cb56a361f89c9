/**
 * Every SQL statement the engine issues while a conversation lives (admission, attempts, tool
 * batches, persistent state, attachments, joins, settlement, reads from an offset) reaches its
 * rows through an index. A full table scan costs rows read in proportion to the whole store —
 * every submission and batch the Durable Object ever held — on each call.
 */
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { defineTool, init, useModel, usePersistentState, useSandbox, useTool, virtualSandbox } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import type { PersistenceAdapter } from '../src/node/sqlite.ts';
import type { SqlDriver } from '../src/runtime/store/sql-store.ts';
import { createEveryTable } from '../src/runtime/store/schema.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

/** sqlite() whose driver remembers every statement it ran. */
function recordingSqlite(): { adapter: PersistenceAdapter; statements: Set<string>; driver(): SqlDriver } {
  const base = sqlite();
  const statements = new Set<string>();
  let connected: SqlDriver | undefined;
  const adapter: PersistenceAdapter = {
    migrate: () => base.migrate(),
    async connect() {
      const inner = await base.connect();
      connected = inner;
      return {
        query: (sql, ...params) => (statements.add(sql), inner.query(sql, ...params)),
        run: (sql, ...params) => (statements.add(sql), inner.run(sql, ...params)),
        transaction: (fn) => inner.transaction(fn),
      };
    },
    close: () => base.close(),
  };
  return { adapter, statements, driver: () => connected! };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a key up.',
  input: v.object({ key: v.string() }),
  async run({ data }) {
    return { output: { value: `value-of-${data.key}` } };
  },
});

function Indexed() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(lookup);
  useSandbox(virtualSandbox());
  const [count, setCount] = usePersistentState('count', 0);
  void setCount;
  return `Count is ${count}.`;
}

const ctx = useScriptedRuntime();

describe('query plans', () => {
  it('no statement of a conversation lifecycle scans a whole table', async () => {
    const recorded = recordingSqlite();
    await ctx.start([Indexed], { db: recorded.adapter });
    const agent = init(Indexed, { id: 'plans' });
    ctx.server.script(
      {
        toolCalls: [
          { name: 'lookup', arguments: { key: 'a' } },
          { name: 'write', arguments: { path: 'notes.txt', content: 'hi' } },
        ],
      },
      { text: 'first answer' },
      { toolCalls: [{ name: 'read', arguments: { path: 'notes.txt' } }] },
      { text: 'second answer' },
    );
    await agent.read(await agent.dispatch('first'));
    await agent.read(await agent.dispatch('second'));

    // Tables this conversation never wrote (timers) are made on first write: make them to plan against.
    createEveryTable(recorded.driver());
    const scans: string[] = [];
    for (const sql of recorded.statements) {
      if (!/^\s*(SELECT|UPDATE|DELETE|INSERT)/i.test(sql)) continue;
      const params = Array.from(sql.matchAll(/\?/g), () => null);
      const plan = recorded.driver().query(`EXPLAIN QUERY PLAN ${sql}`, ...params);
      for (const step of plan) {
        const detail = String(step.detail);
        if (/^SCAN \w+$/.test(detail) && !/^SCAN (CONSTANT ROW|sqlite_master)/.test(detail))
          scans.push(`${detail}  ←  ${sql.replace(/\s+/g, ' ').trim()}`);
      }
    }
    expect(recorded.statements.size).toBeGreaterThan(10);
    expect(scans).toEqual([]);
  });
});
