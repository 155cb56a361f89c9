/**
 * The agent identity pattern: PascalCase names or
 * kebab-case overrides; no `:`, no leading digit, no empty segments. The build checks scanned
 * identities against it and the runtime checks registered ones, so both import it from here.
 */
export const AGENT_IDENTITY_PATTERN = /^[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*$/;
