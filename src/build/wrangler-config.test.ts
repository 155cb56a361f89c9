import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { removeDir, tempProject, wranglerJsonc } from './test-project.ts';
import {
  type GeneratedAgent,
  type RawWranglerConfig,
  checkMigrations,
  mergeWranglerConfig,
  nextMigrationTag,
  readWranglerConfig,
  serializeWranglerConfig,
  validateWranglerConfig,
} from './wrangler-config.ts';

const HELLO: GeneratedAgent = { identity: 'Hello', className: 'FlueHelloAgent', bindingName: 'FLUE_HELLO_AGENT' };
const SUPPORT: GeneratedAgent = { identity: 'SupportChat', className: 'FlueSupportChatAgent', bindingName: 'FLUE_SUPPORT_CHAT_AGENT' };

function base(extra: RawWranglerConfig = {}): RawWranglerConfig {
  return {
    name: 'app',
    compatibility_date: '2026-08-01',
    compatibility_flags: ['nodejs_compat'],
    migrations: [{ tag: 'v1', new_sqlite_classes: ['FlueHelloAgent'] }],
    ...extra,
  };
}

const validate =
  (raw: RawWranglerConfig, agents = [HELLO]) =>
  () =>
    validateWranglerConfig(raw, 'wrangler.jsonc', agents);

describe('validateWranglerConfig', () => {
  it('accepts a complete config', () => {
    expect(validate(base())).not.toThrow();
  });

  it('requires name', () => {
    const { name: _, ...raw } = base();
    expect(validate(raw)).toThrow('[flue] wrangler.jsonc must set "name" (the Worker name).');
    expect(validate(base({ name: '  ' }))).toThrow('must set "name"');
  });

  it('requires compatibility_date >= 2026-04-01 in YYYY-MM-DD form', () => {
    const { compatibility_date: _, ...raw } = base();
    expect(validate(raw)).toThrow('[flue] wrangler.jsonc must set "compatibility_date" to "2026-04-01" or later.');
    expect(validate(base({ compatibility_date: '2026/08/01' }))).toThrow(
      '"compatibility_date" must be a "YYYY-MM-DD" string; got "2026/08/01"',
    );
    expect(validate(base({ compatibility_date: '2026-03-31' }))).toThrow(
      '[flue] wrangler.jsonc "compatibility_date" is "2026-03-31"; Flue needs "2026-04-01" or later',
    );
    expect(validate(base({ compatibility_date: '2026-04-01' }))).not.toThrow();
  });

  it('requires the nodejs_compat flag, also where an env overrides the flags', () => {
    expect(validate(base({ compatibility_flags: [] }))).toThrow(
      '[flue] wrangler.jsonc "compatibility_flags" must include "nodejs_compat".',
    );
    const { compatibility_flags: _, ...raw } = base();
    expect(validate(raw)).toThrow('must include "nodejs_compat"');
    expect(validate(base({ env: { staging: { compatibility_flags: ['streams_enable_constructors'] } } }))).toThrow(
      '[flue] wrangler.jsonc env "staging" overrides "compatibility_flags" without "nodejs_compat"; include it.',
    );
    expect(validate(base({ env: { staging: { compatibility_date: '2025-01-01' } } }))).toThrow(
      'env "staging" "compatibility_date" is "2025-01-01"',
    );
  });

  it('rejects keys that only make sense when wrangler bundles, naming them', () => {
    expect(validate(base({ main: 'src/index.ts' }))).toThrow(
      '[flue] wrangler.jsonc must not set "main": flue build bundles the Worker itself',
    );
    expect(validate(base({ no_bundle: true, rules: [], base_dir: 'src' }))).toThrow('must not set "no_bundle", "rules", "base_dir"');
    expect(validate(base({ find_additional_modules: true }))).toThrow('"find_additional_modules"');
    expect(validate(base({ env: { production: { main: 'x.js' } } }))).toThrow('[flue] wrangler.jsonc env "production" must not set "main"');
  });

  it('reserves FLUE_* bindings and generated class names, top level and in every env', () => {
    const binding = (b: object) => ({ durable_objects: { bindings: [b] } });
    expect(validate(base(binding({ name: 'FLUE_HELLO_AGENT', class_name: 'FlueHelloAgent' })))).toThrow(
      '[flue] wrangler config durable object binding "FLUE_HELLO_AGENT" is reserved by Flue.',
    );
    expect(validate(base(binding({ name: 'FLUE_ANYTHING', class_name: 'Mine' })))).toThrow('binding "FLUE_ANYTHING" is reserved by Flue.');
    expect(validate(base(binding({ name: 'HELLO', class_name: 'FlueHelloAgent' })))).toThrow('binding "HELLO" is reserved by Flue.');
    expect(validate(base({ env: { staging: binding({ name: 'FLUE_X_AGENT', class_name: 'X' }) } }))).toThrow(
      'binding "FLUE_X_AGENT" is reserved by Flue.',
    );
    // A user DO with its own name and class is fine.
    expect(validate(base(binding({ name: 'COUNTER', class_name: 'Counter' })))).not.toThrow();
  });

  it('requires migrations, offering a starting entry', () => {
    const { migrations: _, ...raw } = base();
    expect(validate(raw)).toThrow(
      '[flue] wrangler.jsonc must declare "migrations", the append-only history of your Durable Object classes. Start with:\n' +
        '  "migrations": [{ "tag": "v1", "new_sqlite_classes": ["FlueHelloAgent"] }]',
    );
  });

  it('rejects malformed env and durable_objects blocks', () => {
    expect(validate(base({ env: [] }))).toThrow('"env" must be an object of named environments.');
    expect(validate(base({ durable_objects: { bindings: {} } }))).toThrow('"durable_objects.bindings" must be an array.');
  });
});

describe('readWranglerConfig', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach(removeDir));
  const project = (files: Record<string, string>) => {
    const dir = tempProject('wrangler-read', files);
    dirs.push(dir);
    return dir;
  };

  it('reads JSONC (comments, trailing commas), preferring wrangler.jsonc over wrangler.json', async () => {
    const dir = project({ 'wrangler.jsonc': wranglerJsonc(['FlueHelloAgent']), 'wrangler.json': '{"name": "other"}' });
    const config = await readWranglerConfig(dir);
    expect(config.label).toBe('wrangler.jsonc');
    expect(config.raw['name']).toBe('test-app');
  });

  it('falls back to wrangler.json', async () => {
    const dir = project({ 'wrangler.json': '{"name": "json-app"}' });
    expect((await readWranglerConfig(dir)).raw['name']).toBe('json-app');
  });

  it('rejects wrangler.toml alone, and no config at all', async () => {
    await expect(readWranglerConfig(project({ 'wrangler.toml': 'name = "x"' }))).rejects.toThrow(
      '[flue] wrangler.toml is not supported; use wrangler.jsonc.',
    );
    await expect(readWranglerConfig(project({}))).rejects.toThrow('[flue] No wrangler config found in');
  });

  it('reports parse errors with their position, and non-object files', async () => {
    const dir = project({ 'wrangler.jsonc': '{\n  "name": \n}' });
    await expect(readWranglerConfig(dir)).rejects.toThrow(/\[flue\] Could not parse wrangler\.jsonc: .*line 3/);
    const arr = project({});
    writeFileSync(path.join(arr, 'wrangler.json'), '[1]');
    await expect(readWranglerConfig(arr)).rejects.toThrow('[flue] wrangler.json must contain a JSON object.');
  });

  it('reads the user file even when the deploy redirect exists', async () => {
    const dir = project({
      'wrangler.jsonc': wranglerJsonc([]),
      '.flue.wrangler.json': '{"name": "generated"}',
      '.wrangler/deploy/config.json': '{"configPath": "../../.flue.wrangler.json"}',
    });
    expect((await readWranglerConfig(dir)).raw['name']).toBe('test-app');
  });
});

describe('checkMigrations', () => {
  const check = (migrations: unknown[], agents = [HELLO], extra: RawWranglerConfig = {}) =>
    checkMigrations(base({ migrations, ...extra }), 'wrangler.jsonc', agents);

  it('passes when every generated class is introduced as SQLite', () => {
    expect(check([{ tag: 'v1', new_sqlite_classes: ['FlueHelloAgent'] }])).toEqual([]);
  });

  it('accepts a rename target', () => {
    const migrations = [
      { tag: 'v1', new_sqlite_classes: ['FlueGreeterAgent'] },
      { tag: 'v2', renamed_classes: [{ from: 'FlueGreeterAgent', to: 'FlueHelloAgent' }] },
    ];
    expect(check(migrations)).toEqual([]);
  });

  it('errors with a paste-ready snippet when a generated class is missing', () => {
    expect(() => check([{ tag: 'v1', new_sqlite_classes: ['FlueHelloAgent'] }], [HELLO, SUPPORT])).toThrow(
      '[flue] Durable Object class "FlueSupportChatAgent" (agent "SupportChat") is not introduced by the migrations in wrangler.jsonc. ' +
        'Append this entry to "migrations":\n  { "tag": "v2", "new_sqlite_classes": ["FlueSupportChatAgent"] }',
    );
    expect(() => check([], [HELLO, SUPPORT])).toThrow('{ "tag": "v1", "new_sqlite_classes": ["FlueHelloAgent", "FlueSupportChatAgent"] }');
  });

  it('suggests a rename when exactly one stale class and one missing class exist', () => {
    const migrations = [{ tag: 'v1', new_sqlite_classes: ['FlueGreeterAgent'] }];
    expect(() => check(migrations)).toThrow(
      'If agent "Hello" is FlueGreeterAgent renamed, keep its data without a migration by giving it the old identity ' +
        '(its agentName static set to the old identity, e.g. "Greeter"), or with this entry instead:\n' +
        '  { "tag": "v2", "renamed_classes": [{ "from": "FlueGreeterAgent", "to": "FlueHelloAgent" }] }',
    );
  });

  it('treats a deleted class as missing and says so', () => {
    const migrations = [
      { tag: 'v1', new_sqlite_classes: ['FlueHelloAgent'] },
      { tag: 'v2', deleted_classes: ['FlueHelloAgent'] },
    ];
    expect(() => check(migrations)).toThrow('(FlueHelloAgent was deleted by migration "v2"; re-adding it starts with empty storage.)');
  });

  it('errors when a generated class is a legacy new_classes (KV) class', () => {
    expect(() => check([{ tag: 'v1', new_classes: ['FlueHelloAgent'] }])).toThrow(
      '[flue] "FlueHelloAgent" is declared under "new_classes" in the wrangler.jsonc migrations, but Flue agents need SQLite-backed Durable Objects',
    );
    const renamedKv = [
      { tag: 'v1', new_classes: ['FlueOldAgent'] },
      { tag: 'v2', renamed_classes: [{ from: 'FlueOldAgent', to: 'FlueHelloAgent' }] },
    ];
    expect(() => check(renamedKv)).toThrow('declared under "new_classes"');
  });

  it('fails on a stale Flue*Agent class: causes first, renaming keeps data, deleting is last and says what it destroys', () => {
    // Typically a module lost its 'use agent' directive: building on would deploy a class with no code.
    expect(() => check([{ tag: 'v1', new_sqlite_classes: ['FlueHelloAgent', 'FlueSupportChatAgent', 'Counter'] }])).toThrow(
      '[flue] wrangler.jsonc migrations declare the Durable Object class "FlueSupportChatAgent" (agent "SupportChat"), but no agent ' +
        "generates it any more, so that agent's stored conversations would have no code to run.\n" +
        "- If the agent still exists, check its module: 'use agent' must be the very first statement, and the agent an exported " +
        'function with a capitalized name.\n' +
        "- If you renamed the function, keep its data by giving it the old identity: NewName.agentName = 'SupportChat' " +
        "(or 'support-chat', whichever spelling the agent had). Nothing is migrated and every conversation stays.\n" +
        '- Only if the agent is gone for good, append { "tag": "v2", "deleted_classes": ["FlueSupportChatAgent"] } to "migrations". ' +
        'This permanently destroys every stored conversation of that agent; it cannot be undone.',
    );
    expect(() => check([{ tag: 'v1', new_sqlite_classes: ['FlueHelloAgent', 'FlueOldAgent', 'FlueGoneAgent'] }])).toThrow(
      /declare the Durable Object classes "FlueGoneAgent" \(agent "Gone"\), "FlueOldAgent" \(agent "Old"\).*"deleted_classes": \["FlueGoneAgent", "FlueOldAgent"\]/s,
    );
    // Deleted, or bound by the user's own binding: no error.
    expect(
      check([
        { tag: 'v1', new_sqlite_classes: ['FlueHelloAgent', 'FlueOldAgent'] },
        { tag: 'v2', deleted_classes: ['FlueOldAgent'] },
      ]),
    ).toEqual([]);
    expect(
      check([{ tag: 'v1', new_sqlite_classes: ['FlueHelloAgent', 'FlueRouterAgent'] }], [HELLO], {
        durable_objects: { bindings: [{ name: 'ROUTER', class_name: 'FlueRouterAgent' }] },
      }),
    ).toEqual([]);
  });

  it('numbers the next tag after the user tags', () => {
    expect(nextMigrationTag([])).toBe('v1');
    expect(nextMigrationTag(['v1', 'v2', 'v7'])).toBe('v8');
    expect(nextMigrationTag(['initial', 'second'])).toBe('v3');
    expect(nextMigrationTag(['initial', 'v3'])).toBe('v4');
  });
});

describe('mergeWranglerConfig', () => {
  it('adds main, no_bundle and the generated bindings after the user bindings, sorted by identity', () => {
    const raw = base({
      $schema: 'node_modules/wrangler/config-schema.json',
      durable_objects: { bindings: [{ name: 'COUNTER', class_name: 'Counter' }] },
      migrations: [{ tag: 'v1', new_sqlite_classes: ['FlueHelloAgent', 'FlueSupportChatAgent', 'Counter'] }],
    });
    const merged = mergeWranglerConfig(raw, [SUPPORT, HELLO]);
    expect(merged['$schema']).toBeUndefined();
    expect(merged['main']).toBe('dist/worker.js');
    expect(merged['no_bundle']).toBe(true);
    expect(merged['durable_objects']).toEqual({
      bindings: [
        { name: 'COUNTER', class_name: 'Counter' },
        { name: 'FLUE_HELLO_AGENT', class_name: 'FlueHelloAgent' },
        { name: 'FLUE_SUPPORT_CHAT_AGENT', class_name: 'FlueSupportChatAgent' },
      ],
    });
    expect(merged['migrations']).toEqual(raw['migrations']);
    // The input is not modified.
    expect(raw['$schema']).toBeDefined();
    expect((raw['durable_objects'] as { bindings: unknown[] }).bindings).toHaveLength(1);
  });

  it('repeats the generated bindings in every env, after that env’s own', () => {
    const raw = base({
      env: {
        staging: { vars: { A: '1' } },
        production: { durable_objects: { bindings: [{ name: 'PROD_DO', class_name: 'ProdDo' }] } },
      },
    });
    const merged = mergeWranglerConfig(raw, [HELLO]);
    const env = merged['env'] as Record<string, Record<string, unknown>>;
    expect(env['staging']).toEqual({
      vars: { A: '1' },
      durable_objects: { bindings: [{ name: 'FLUE_HELLO_AGENT', class_name: 'FlueHelloAgent' }] },
    });
    expect(env['production']!['durable_objects']).toEqual({
      bindings: [
        { name: 'PROD_DO', class_name: 'ProdDo' },
        { name: 'FLUE_HELLO_AGENT', class_name: 'FlueHelloAgent' },
      ],
    });
    expect(env['production']!['migrations']).toBeUndefined();
  });

  it('is deterministic: the same input gives the same bytes, whatever the agent order', () => {
    const raw = base({ vars: { B: '2', A: '1' } });
    const a = serializeWranglerConfig(mergeWranglerConfig(raw, [HELLO, SUPPORT]));
    const b = serializeWranglerConfig(mergeWranglerConfig(structuredClone(raw), [SUPPORT, HELLO]));
    expect(a).toBe(b);
    expect(a.endsWith('}\n')).toBe(true);
    expect(Object.keys(JSON.parse(a))).toEqual([
      'name',
      'compatibility_date',
      'compatibility_flags',
      'migrations',
      'vars',
      'main',
      'no_bundle',
      'find_additional_modules',
      'rules',
      'durable_objects',
    ]);
  });

  it('adds no durable_objects block when there are no agents', () => {
    expect(mergeWranglerConfig(base(), [])['durable_objects']).toBeUndefined();
  });
});
