import { describe, expect, it } from 'vitest';
import { AgentIdentifierCollisionError, DuplicateAgentIdentityError, FlueBuildError } from './build-errors.ts';
import { AGENT_IDENTITY_PATTERN } from '../shared/identity.ts';
import { bindingName, checkIdentityCollisions, className } from './names.ts';

describe('className / bindingName (cloudflare.md §2 table)', () => {
  const table: [identity: string, cls: string, binding: string][] = [
    ['SupportChat', 'FlueSupportChatAgent', 'FLUE_SUPPORT_CHAT_AGENT'],
    ['support-chat', 'FlueSupportChatAgent', 'FLUE_SUPPORT_CHAT_AGENT'],
    ['IssueTriage', 'FlueIssueTriageAgent', 'FLUE_ISSUE_TRIAGE_AGENT'],
    ['Translator', 'FlueTranslatorAgent', 'FLUE_TRANSLATOR_AGENT'],
    ['HTTPProxy', 'FlueHTTPProxyAgent', 'FLUE_HTTPPROXY_AGENT'],
    ['Agent2Go', 'FlueAgent2GoAgent', 'FLUE_AGENT2_GO_AGENT'],
  ];

  it.each(table)('%s → %s / %s', (identity, cls, binding) => {
    expect(className(identity)).toBe(cls);
    expect(bindingName(identity)).toBe(binding);
  });

  it.each([
    ['issue-triage', 'IssueTriage'],
    ['translator', 'Translator'],
    ['agent2-go', 'Agent2Go'],
  ])('kebab %s produces the same pair as its PascalCase twin %s', (kebab, pascal) => {
    expect(className(kebab)).toBe(className(pascal));
    expect(bindingName(kebab)).toBe(bindingName(pascal));
  });

  it('never merges camel words in the binding', () => {
    expect(bindingName('SupportChat')).not.toBe('FLUE_SUPPORTCHAT_AGENT');
  });

  it('splits kebab segments with mixed case on both sides', () => {
    expect(className('my-HTTP-proxy')).toBe('FlueMyHTTPProxyAgent');
    expect(bindingName('my-HTTP-proxy')).toBe('FLUE_MY_HTTP_PROXY_AGENT');
  });
});

describe('AGENT_IDENTITY_PATTERN (shared by the build and the runtime)', () => {
  it('is the pattern of build-and-cli.md §1.3', () => {
    expect(AGENT_IDENTITY_PATTERN.source).toBe('^[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*$');
    expect(AGENT_IDENTITY_PATTERN.flags).toBe('');
  });

  it.each(['Triage', 'issue-triage', 'HTTPProxy', 'a', 'Agent2Go', 'v2-api'])('accepts %s', (identity) => {
    expect(AGENT_IDENTITY_PATTERN.test(identity)).toBe(true);
  });

  it.each(['', '2fast', '-a', 'a-', 'a--b', 'snake_case', 'has space', 'a:b', '$x', 'Ünicode'])('rejects %j', (identity) => {
    expect(AGENT_IDENTITY_PATTERN.test(identity)).toBe(false);
  });
});

describe('checkIdentityCollisions', () => {
  it('accepts distinct identities with distinct names', () => {
    expect(() => checkIdentityCollisions(['SupportChat', 'IssueTriage', 'HTTPProxy', 'Agent2Go'])).not.toThrow();
    expect(() => checkIdentityCollisions([])).not.toThrow();
  });

  it('rejects a repeated identity with DuplicateAgentIdentityError naming both places', () => {
    const run = () =>
      checkIdentityCollisions([
        { identity: 'Triage', file: '/app/src/a.ts', exportName: 'Triage' },
        { identity: 'Triage', file: '/app/src/b.ts', exportName: 'default' },
      ]);
    expect(run).toThrow(DuplicateAgentIdentityError);
    expect(run).toThrow(
      '[flue] Two agents share the identity "Triage": export Triage in /app/src/a.ts and export default in /app/src/b.ts.',
    );
  });

  it('reports duplicates before collisions', () => {
    expect(() => checkIdentityCollisions(['support-chat', 'SupportChat', 'SupportChat'])).toThrow(DuplicateAgentIdentityError);
  });

  it('rejects kebab/Pascal twins (same class and binding)', () => {
    const run = () =>
      checkIdentityCollisions([
        { identity: 'SupportChat', file: '/app/src/a.ts', exportName: 'SupportChat' },
        { identity: 'support-chat', file: '/app/src/b.ts', exportName: 'Chat' },
      ]);
    expect(run).toThrow(AgentIdentifierCollisionError);
    expect(run).toThrow(/"SupportChat" \(export SupportChat in \/app\/src\/a\.ts\) and "support-chat"/);
    expect(run).toThrow(/FlueSupportChatAgent/);
  });

  it('checks binding names independently of class names (AB / Ab)', () => {
    expect(className('AB')).not.toBe(className('Ab'));
    let caught: unknown;
    try {
      checkIdentityCollisions(['AB', 'Ab']);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AgentIdentifierCollisionError);
    expect((caught as AgentIdentifierCollisionError).generatedName).toBe('FLUE_AB_AGENT');
    expect((caught as Error).message).toMatch(/binding name FLUE_AB_AGENT/);
  });

  it('throws stackless-friendly FlueBuildErrors', () => {
    let caught: unknown;
    try {
      checkIdentityCollisions(['A', 'A']);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(FlueBuildError);
    const error = caught as Error;
    expect(error.name).toBe('DuplicateAgentIdentityError');
    expect(error.message.startsWith('[flue] ')).toBe(true);
    expect(error.stack).toBe(`DuplicateAgentIdentityError: ${error.message}`);
  });
});
