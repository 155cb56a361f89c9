/**
 * runFlueServer() in process (what the generated dist/server.mjs calls): startup validation
 * happens before anything listens or stays configured, FLUE_DB / db.ts choose the store, and the
 * returned handle disposes like start()'s. Built-server behaviour over a real process is in
 * test/e2e/node-server.test.ts.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidCronExpressionError } from './cron.ts';
import { runFlueServer } from './server.ts';
import { sqlite } from './sqlite.ts';
import { start } from './start.ts';

function Plain() {
  return 'Plain.';
}
const app = { fetch: () => new Response('ok') };
const dir = mkdtempSync(path.join(tmpdir(), 'flue-server-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const quiet = () => {};

describe('runFlueServer', () => {
  it('serves the app on PORT with FLUE_DB as the store; disposing stops serving and frees the runtime', async () => {
    const db = path.join(dir, 'nested', 'flue.db');
    const env = { PORT: '0', HOST: '127.0.0.1', FLUE_DB: db };
    {
      await using server = await runFlueServer({ app, agents: [Plain], providers: [], env, handleSignals: false, log: quiet });
      expect(await (await fetch(server.url)).text()).toBe('ok');
      expect(existsSync(db)).toBe(true);
    }
    const flue = await start({ agents: [Plain], providers: [], env: {} }); // the runtime was released
    await flue.stop();
  });

  it('uses the db.ts adapter when given, whatever FLUE_DB says', async () => {
    const file = path.join(dir, 'from-db-ts.db');
    const server = await runFlueServer({
      app,
      agents: [Plain],
      db: sqlite(file),
      providers: [],
      env: { PORT: '0', HOST: '127.0.0.1', FLUE_DB: path.join(dir, 'ignored.db') },
      handleSignals: false,
      log: quiet,
    });
    await server.stop();
    expect(existsSync(file)).toBe(true);
    expect(existsSync(path.join(dir, 'ignored.db'))).toBe(false);
  });

  it("arms the wrangler crons for app.ts's scheduled() and says so; without crons it notes that the handler never runs", async () => {
    const env = { PORT: '0', HOST: '127.0.0.1', FLUE_DB: ':memory:' };
    const cronApp = { ...app, scheduled: () => {} };
    for (const [crons, expected] of [
      [['0 9 * * *', '*/5 * * * *'], ['2 crons for app.ts scheduled()']],
      [[], ['[flue] Note: app.ts has a scheduled() handler but no crons are declared, so it never runs.']],
    ] as const) {
      const lines: string[] = [];
      const server = await runFlueServer({
        app: cronApp,
        agents: [Plain],
        providers: [],
        crons,
        env,
        handleSignals: false,
        log: (line) => lines.push(line),
      });
      await server.stop();
      for (const text of expected) expect(lines.join('\n')).toContain(text);
    }
    // An app without scheduled() ignores the crons: they are cloudflare.ts's on the Worker.
    const lines: string[] = [];
    const server = await runFlueServer({
      app,
      agents: [Plain],
      providers: [],
      crons: ['0 9 * * *'],
      env,
      handleSignals: false,
      log: (line) => lines.push(line),
    });
    await server.stop();
    expect(lines).toEqual([expect.stringMatching(/^\[flue\] Listening on http:\/\/127\.0\.0\.1:\d+ \(db: :memory:\)$/)]);
  });

  it('rejects a bad app, db.ts, schedules or PORT before configuring anything', async () => {
    const base = { agents: [Plain], providers: [], handleSignals: false, log: quiet, env: { PORT: '0', FLUE_DB: ':memory:' } };
    await expect(runFlueServer({ ...base, app: {} })).rejects.toThrow(
      '[flue] app.ts default export must be a Hono app or an object with a fetch(request, env, ctx) method.',
    );
    await expect(runFlueServer({ ...base, app, db: { migrate() {} } })).rejects.toThrow(
      '[flue] db.ts must default-export a persistence adapter',
    );
    await expect(runFlueServer({ ...base, app, schedules: { '61 * * * *': () => {} } })).rejects.toBeInstanceOf(InvalidCronExpressionError);
    const cronApp = { ...app, scheduled: () => {} };
    await expect(runFlueServer({ ...base, app: cronApp, crons: ['every day'] })).rejects.toThrow(
      '[flue] Invalid cron expression "every day"',
    );
    await expect(runFlueServer({ ...base, app, env: { PORT: 'eighty' } })).rejects.toThrow(
      '[flue] PORT must be a port number (0-65535); got "eighty".',
    );
    const flue = await start({ agents: [Plain], providers: [], env: {} });
    await flue.stop();
  });
});
