/**
 * What the `'use agent'` scan yields (build-and-cli.md §1). Consumed by entry generation, the
 * wrangler config merge and `flue run`.
 */
export interface ScannedAgent {
  /** The name it is exported under (`default` for a default export). */
  exportName: string;
  /** Durable identity: the literal `agentName` static, else the function's own name. */
  identity: string;
  /** `Flue<Pascal>Agent` (cloudflare.md §2). */
  className: string;
  /** `FLUE_<UPPER_SNAKE>_AGENT` (cloudflare.md §2). */
  bindingName: string;
}

export interface ScannedModule {
  /** Absolute path of the agent module. */
  file: string;
  agents: ScannedAgent[];
}

export interface ScanResult {
  /** Sorted by file path, then source order. */
  modules: ScannedModule[];
}
