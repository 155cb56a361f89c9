/**
 * Where a Workers AI provider built without `binding` finds it: the env the Flue Worker was
 * configured with. Kept apart from the provider so that a Worker whose agents name no
 * `cloudflare/` model configures itself without bundling the provider.
 */
let bindingSource: (name: string) => unknown = () => undefined;

export function setWorkersAIBindingSource(source: (name: string) => unknown): void {
  bindingSource = source;
}

export function workersAIBinding(name: string): unknown {
  return bindingSource(name);
}
