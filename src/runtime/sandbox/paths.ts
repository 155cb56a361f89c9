/** POSIX path helpers, lexical only (no I/O) so they behave identically on Node and workerd. */

/** Normalizes `.`/`..`/empty segments; never climbs above `/`; absolute `p` is not re-rooted. */
export function resolvePath(cwd: string, p: string): string {
  const input = p.startsWith('/') ? p : `${cwd}/${p}`;
  const out: string[] = [];
  for (const segment of input.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') out.pop();
    else out.push(segment);
  }
  return `/${out.join('/')}`;
}

export function dirname(p: string): string {
  const abs = resolvePath('/', p);
  const i = abs.lastIndexOf('/');
  return i <= 0 ? '/' : abs.slice(0, i);
}

export function basename(p: string): string {
  const trimmed = p.replace(/\/+$/, '');
  if (trimmed === '') return p.startsWith('/') ? '/' : '';
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}

/** Joins a display prefix and a name without doubling slashes (`.` + `a` → `./a`, `/` + `a` → `/a`). */
export function joinDisplay(prefix: string, name: string): string {
  return prefix.endsWith('/') ? `${prefix}${name}` : `${prefix}/${name}`;
}
