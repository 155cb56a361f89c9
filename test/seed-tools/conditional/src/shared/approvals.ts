/** Test double for the operator approval-code check; records every code it was asked about. */
const valid = new Set<string>();
const calls: string[] = [];

export const approvals = {
  calls,
  allow(code: string): void {
    valid.add(code);
  },
  reset(): void {
    valid.clear();
    calls.length = 0;
  },
  async verify(code: string): Promise<boolean> {
    calls.push(code);
    return valid.has(code);
  },
};
