import { afterEach, describe, expect, it } from 'vitest';
import { setHostKind } from '../common/host-kind.ts';
import {
  AGENT_IDENTITY_PATTERN,
  AgentRegistry,
  __flueBindAgentModule,
  resolveAgentIdentity,
  type Agent,
  type AgentProps,
} from './identity.ts';

/** Fresh function values per test: bindings are process-wide (WeakMap keyed by function). */
function named(name: string): Agent {
  const holder = { [name]: (() => 'instructions') as Agent };
  return holder[name]!;
}

function anonymous(): Agent {
  // Property-less arrow in an array: no name is inferred.
  return [() => undefined][0]! as Agent;
}

describe('AGENT_IDENTITY_PATTERN', () => {
  it.each(['IssueTriage', 'issue-triage', 'A', 'a1', 'Agent2-v3'])('accepts %j', (name) => {
    expect(AGENT_IDENTITY_PATTERN.test(name)).toBe(true);
  });

  it.each(['1x', 'a:b', '-a', 'a--b', 'a-', '', 'a b', 'a_b', 'a.b'])('rejects %j', (name) => {
    expect(AGENT_IDENTITY_PATTERN.test(name)).toBe(false);
  });
});

describe('Agent type', () => {
  it('accepts zero-arg and props agents and statics', () => {
    const Zero: Agent = () => 'x';
    const WithProps: Agent = (props: AgentProps) => `for ${props.id}`;
    function Nothing(): void {}
    const AsAgent: Agent = Nothing;
    AsAgent.agentName = 'nothing';
    AsAgent.durability = { maxAttempts: 2 };
    expect([Zero, WithProps, AsAgent].every((fn) => typeof fn === 'function')).toBe(true);
  });
});

describe('resolveAgentIdentity', () => {
  it('uses fn.name when nothing else is set', () => {
    function IssueTriage() {
      return 'x';
    }
    expect(resolveAgentIdentity(IssueTriage)).toBe('IssueTriage');
  });

  it('prefers agentName over fn.name', () => {
    const fn = named('IssueTriage');
    fn.agentName = 'issue-triage';
    expect(resolveAgentIdentity(fn)).toBe('issue-triage');
  });

  it('prefers the build binding over agentName', () => {
    const fn = named('Minified');
    fn.agentName = 'from-static';
    __flueBindAgentModule(fn, { identity: 'FromBuild' });
    expect(resolveAgentIdentity(fn)).toBe('FromBuild');
  });

  it('prefers the explicit entry name over everything', () => {
    const fn = named('Fn');
    fn.agentName = 'from-static';
    __flueBindAgentModule(fn, { identity: 'FromBuild' });
    expect(resolveAgentIdentity(fn, 'explicit-name')).toBe('explicit-name');
  });

  it('throws for an anonymous function, naming the three fixes', () => {
    const fn = anonymous();
    expect(fn.name).toBe('');
    expect(() => resolveAgentIdentity(fn)).toThrowError(/^\[flue\] .*anonymous/);
    let message = '';
    try {
      resolveAgentIdentity(fn);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('agentName');
    expect(message).toContain('{ agent, name }');
    expect(message).toContain('named function');
  });

  it('treats an anonymous default export ("default") as anonymous', () => {
    const fn = named('default');
    expect(() => resolveAgentIdentity(fn)).toThrowError(/anonymous/);
  });

  it('resolves an anonymous function through agentName or an explicit name', () => {
    const fn = anonymous();
    expect(resolveAgentIdentity(fn, 'given')).toBe('given');
    fn.agentName = 'static-name';
    expect(resolveAgentIdentity(fn)).toBe('static-name');
  });

  it('rejects an invalid agentName, naming the value and the pattern', () => {
    const fn = named('Fine');
    fn.agentName = 'bad:name';
    expect(() => resolveAgentIdentity(fn)).toThrowError(/^\[flue\] Invalid agent identity "bad:name"/);
    expect(() => resolveAgentIdentity(fn)).toThrowError(AGENT_IDENTITY_PATTERN.toString());
    fn.agentName = '' as string;
    expect(() => resolveAgentIdentity(fn)).toThrowError(/Invalid agent identity ""/);
  });

  it('rejects a non-string agentName', () => {
    const fn = named('Fine');
    (fn as { agentName?: unknown }).agentName = 42;
    expect(() => resolveAgentIdentity(fn)).toThrowError(/Invalid agent identity 42/);
  });

  it('rejects an invalid explicit name or function name', () => {
    expect(() => resolveAgentIdentity(named('Fine'), '1x')).toThrowError(/Invalid agent identity "1x"/);
    expect(() => resolveAgentIdentity(named('bad_name'))).toThrowError(/Invalid agent identity "bad_name"/);
    // Bound functions are named "bound X", which is not a valid identity.
    function Original() {}
    expect(() => resolveAgentIdentity(Original.bind(null))).toThrowError(/"bound Original"/);
  });

  it('rejects a non-function', () => {
    expect(() => resolveAgentIdentity({} as unknown as Agent)).toThrowError(/^\[flue\] An agent must be a function/);
  });
});

describe('__flueBindAgentModule', () => {
  it('is idempotent for the same pair', () => {
    const fn = named('Bound');
    __flueBindAgentModule(fn, { identity: 'Bound' });
    expect(() => __flueBindAgentModule(fn, { identity: 'Bound' })).not.toThrow();
    expect(resolveAgentIdentity(fn)).toBe('Bound');
  });

  it('throws when rebinding to a different identity', () => {
    const fn = named('Bound');
    __flueBindAgentModule(fn, { identity: 'First' });
    expect(() => __flueBindAgentModule(fn, { identity: 'Second' })).toThrowError(/^\[flue\] .*already bound to identity "First".*"Second"/);
    expect(resolveAgentIdentity(fn)).toBe('First');
  });

  it('rejects an invalid stamped identity', () => {
    expect(() => __flueBindAgentModule(named('X'), { identity: 'a:b' })).toThrowError(/Invalid agent identity "a:b"/);
  });
});

describe('AgentRegistry', () => {
  it('registers, looks up and lists in registration order', () => {
    const registry = new AgentRegistry();
    const a = named('Alpha');
    const b = named('Beta');
    expect(registry.register(a)).toBe('Alpha');
    expect(registry.register(b, 'beta-agent')).toBe('beta-agent');
    expect(registry.identityOf(a)).toBe('Alpha');
    expect(registry.identityOf(b)).toBe('beta-agent');
    expect(registry.get('beta-agent')).toBe(b);
    expect(registry.get('Beta')).toBeUndefined();
    expect(registry.has(a)).toBe(true);
    expect(registry.list()).toEqual([
      { identity: 'Alpha', agent: a },
      { identity: 'beta-agent', agent: b },
    ]);
  });

  it('rejects two functions under one identity', () => {
    const registry = new AgentRegistry();
    registry.register(named('Same'));
    expect(() => registry.register(named('Same'))).toThrowError(/^\[flue\] Duplicate agent identity "Same"/);
    const other = named('Other');
    expect(() => registry.register(other, 'Same')).toThrowError(/Duplicate agent identity "Same"/);
    expect(registry.has(other)).toBe(false);
  });

  it('rejects one function under two identities', () => {
    const registry = new AgentRegistry();
    const fn = named('Twice');
    registry.register(fn);
    expect(() => registry.register(fn, 'twice-again')).toThrowError(
      /^\[flue\] The same agent function is registered under two identities: "Twice" and "twice-again"/,
    );
    expect(registry.get('twice-again')).toBeUndefined();
  });

  it('treats re-registering the same pair as a no-op', () => {
    const registry = new AgentRegistry();
    const fn = named('Again');
    registry.register(fn);
    expect(registry.register(fn)).toBe('Again');
    expect(registry.list()).toHaveLength(1);
  });

  it('an alias resolves an earlier identity to a registered agent, and nothing else changes', () => {
    const registry = new AgentRegistry();
    const renamed = named('Renamed');
    const other = named('Other');
    registry.register(renamed);
    registry.register(other);
    registry.alias('Earlier', renamed);
    expect(registry.get('Earlier')).toBe(renamed);
    expect(registry.identityOf(renamed)).toBe('Renamed');
    expect(registry.list().map((entry) => entry.identity)).toEqual(['Renamed', 'Other']);
    expect(() => registry.alias('Other', renamed)).toThrowError('[flue] Cannot alias "Other": another agent holds that identity.');
    expect(() => registry.alias('Stranger', named('Unregistered'))).toThrowError(/not registered/);
    // An alias never takes an identity from a later registration either.
    expect(() => registry.register(named('Earlier'))).toThrowError(/Duplicate agent identity "Earlier"/);
  });

  it('propagates resolution errors', () => {
    const registry = new AgentRegistry();
    expect(() => registry.register(anonymous())).toThrowError(/anonymous/);
    expect(() => registry.register(named('Ok'), 'a--b')).toThrowError(/Invalid agent identity "a--b"/);
    expect(registry.list()).toEqual([]);
  });

  it('identityOf throws a plain [flue] Error for an unregistered function', () => {
    const registry = new AgentRegistry();
    const fn = named('Stranger');
    let thrown: unknown;
    try {
      registry.identityOf(fn);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Error);
    expect((thrown as Error).constructor).toBe(Error);
    expect((thrown as Error).message).toMatch(/^\[flue\] Agent function "Stranger" is not registered/);
    expect((thrown as Error).message).toContain('start({ agents })');
    expect((thrown as Error).message).toContain("'use agent' module");
  });
});

describe('messages name the host the user is on', () => {
  afterEach(() => setHostKind(undefined));

  it('an anonymous agent: start() only where there is one', () => {
    const anonymous = (
      () => () =>
        undefined
    )() as unknown as Agent;
    setHostKind('node');
    expect(() => resolveAgentIdentity(anonymous)).toThrow('register it as { agent, name } in start()');
    setHostKind('cloudflare');
    expect(() => resolveAgentIdentity(anonymous)).toThrow(
      "[flue] Cannot resolve the identity of an anonymous agent function. Give it a name: set the agentName static (Fn.agentName = 'my-agent'), or declare it as a named function (function MyAgent() { … }).",
    );
  });

  it('an unregistered agent: a Worker is told to export it from a use agent module', () => {
    const registry = new AgentRegistry();
    function Stray() {}
    setHostKind('cloudflare');
    expect(() => registry.identityOf(Stray as unknown as Agent)).toThrow(
      /not registered in this app\. Export it from a 'use agent' module under src\/agents\//,
    );
    setHostKind('node');
    expect(() => registry.identityOf(Stray as unknown as Agent)).toThrow(/Register it via start\(\{ agents \}\)/);
  });
});
