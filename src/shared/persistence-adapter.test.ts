import { describe, expect, it } from 'vitest';
import { hasAdapterVerbs, notAnAdapterMessage } from './persistence-adapter.ts';

describe('hasAdapterVerbs', () => {
  it('accepts an object with migrate, connect and close, a class instance included', () => {
    expect(hasAdapterVerbs({ migrate() {}, connect() {}, close() {} })).toBe(true);
    class Adapter {
      migrate() {}
      connect() {}
      close() {}
    }
    expect(hasAdapterVerbs(new Adapter())).toBe(true);
  });

  it('rejects anything missing a verb, or not an object', () => {
    expect(hasAdapterVerbs({ migrate() {}, connect() {} })).toBe(false);
    expect(hasAdapterVerbs({ migrate() {}, connect: 'x', close() {} })).toBe(false);
    expect(hasAdapterVerbs(null)).toBe(false);
    expect(hasAdapterVerbs(undefined)).toBe(false);
    expect(hasAdapterVerbs(() => {})).toBe(false);
  });

  it('names the file and the fix', () => {
    expect(notAnAdapterMessage('src/db.ts')).toBe(
      "src/db.ts must default-export a persistence adapter, e.g. `export default sqlite('./data/flue.db')`.",
    );
  });
});
