/**
 * Shell-style glob matching (`*`, `?`, `[...]`, `[!...]`, backslash escapes) for `find -name`,
 * `grep --include` and the virtual shell's pathname expansion. Matches one path segment.
 */
export function globToRegExp(pattern: string, flags = ''): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '\\' && i + 1 < pattern.length) {
      source += escapeRegExp(pattern[++i]!);
    } else if (ch === '*') {
      source += '[^/]*';
    } else if (ch === '?') {
      source += '[^/]';
    } else if (ch === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close === -1) {
        source += '\\[';
        continue;
      }
      let body = pattern.slice(i + 1, close);
      const negate = body.startsWith('!') || body.startsWith('^');
      if (negate) body = body.slice(1);
      source += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, '\\$&')}]`;
      i = close;
    } else {
      source += escapeRegExp(ch);
    }
  }
  return new RegExp(`^${source}$`, flags);
}

/** True when the pattern has an unescaped glob metacharacter. */
export function hasGlob(pattern: string): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') i++;
    else if (ch === '*' || ch === '?' || ch === '[') return true;
  }
  return false;
}

export function unescapeGlob(pattern: string): string {
  return pattern.replace(/\\(.)/g, '$1');
}

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
