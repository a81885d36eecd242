import type { EntityManager } from '@mikro-orm/sql';
import { authenticate, type CredentialResolver } from './authenticate.js';
import type { Principal } from './principal.js';

function recording(name: string, calls: string[], options: { prefix?: string; answers?: boolean } = {}): CredentialResolver {
  return {
    scheme: 'bearer',
    ...(options.prefix ? { prefix: options.prefix } : {}),
    async resolve() {
      calls.push(name);
      return options.answers ? ({ kind: 'account_key', accountId: 'PACCT01', credentialId: name, readOnly: false, rateLimitKey: name } as Principal) : undefined;
    },
  };
}

const em = {} as EntityManager;

test('a resolver with a prefix is asked first for tokens that carry it, and never for the others', async () => {
  const calls: string[] = [];
  const resolvers = [recording('delegations', calls), recording('flows', calls), recording('provisioning', calls, { prefix: 'scim_', answers: true })];
  const prefixed = await authenticate(em, 'Bearer scim_abcdefghijklmnop', resolvers, 'scim');
  expect(prefixed).toMatchObject({ status: 'authenticated', principal: { credentialId: 'provisioning' } });
  expect(calls).toEqual(['provisioning']);

  calls.length = 0;
  expect(await authenticate(em, 'Bearer abcdefghijklmnopqrst', resolvers, 'rest')).toMatchObject({ status: 'rejected' });
  expect(calls).toEqual(['delegations', 'flows']);
});

test('a prefixed token its resolver does not know is still offered to the others', async () => {
  const calls: string[] = [];
  const resolvers = [recording('delegations', calls, { answers: true }), recording('provisioning', calls, { prefix: 'scim_' })];
  expect(await authenticate(em, 'Bearer scim_looks_like_one_but_is_not', resolvers, 'rest')).toMatchObject({ status: 'authenticated', principal: { credentialId: 'delegations' } });
  expect(calls).toEqual(['provisioning', 'delegations']);
});

test('a credential confined to one face is refused on every other, as a wrong face (not an unknown credential)', async () => {
  const confined: CredentialResolver = { scheme: 'bearer', async resolve() { return { kind: 'provisioning_token', confinedTo: 'scim', accountId: 'PACCT01', credentialId: 'p', scopes: new Set(), rateLimitKey: 'p', ownerRights: false } as Principal; } };
  expect(await authenticate(em, 'Bearer scim_abcdefghijklmnop', [confined], 'scim')).toMatchObject({ status: 'authenticated' });
  for (const face of ['rest', 'graphql', 'websocket'] as const) {
    expect(await authenticate(em, 'Bearer scim_abcdefghijklmnop', [confined], face)).toMatchObject({ status: 'rejected', wrongFace: true });
  }
});
