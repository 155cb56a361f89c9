import { describe, expect, it } from 'vitest';
import { basename, dirname, resolvePath } from './paths.ts';

describe('resolvePath', () => {
  it('resolves relative paths against cwd and normalizes lexically', () => {
    expect(resolvePath('/workspace', 'a/b.txt')).toBe('/workspace/a/b.txt');
    expect(resolvePath('/workspace', './a//b/../c')).toBe('/workspace/a/c');
    expect(resolvePath('/workspace', '.')).toBe('/workspace');
    expect(resolvePath('/workspace', '')).toBe('/workspace');
  });
  it('never climbs above / and never re-roots absolute paths', () => {
    expect(resolvePath('/workspace', '../../../etc/passwd')).toBe('/etc/passwd');
    expect(resolvePath('/', '..')).toBe('/');
    expect(resolvePath('/workspace', '/tmp/x/')).toBe('/tmp/x');
    expect(resolvePath('/workspace', '/a/./b/../../..')).toBe('/');
  });
  it('gives two spellings of one file the same string', () => {
    expect(resolvePath('/w', 'src/x.ts')).toBe(resolvePath('/w/src', '../src/./x.ts'));
  });
  it('dirname/basename', () => {
    expect(dirname('/a/b/c')).toBe('/a/b');
    expect(dirname('/a')).toBe('/');
    expect(basename('/a/b/')).toBe('b');
  });
});
