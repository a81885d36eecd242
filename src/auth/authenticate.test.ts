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
  const prefixed = await authenticate(em, 'Bearer scim_abcdefghijklmnop', resolvers);
  expect(prefixed).toMatchObject({ status: 'authenticated', principal: { credentialId: 'provisioning' } });
  expect(calls).toEqual(['provisioning']);

  calls.length = 0;
  expect(await authenticate(em, 'Bearer abcdefghijklmnopqrst', resolvers)).toMatchObject({ status: 'rejected' });
  expect(calls).toEqual(['delegations', 'flows']);
});

test('a prefixed token its resolver does not know is still offered to the others', async () => {
  const calls: string[] = [];
  const resolvers = [recording('delegations', calls, { answers: true }), recording('provisioning', calls, { prefix: 'scim_' })];
  expect(await authenticate(em, 'Bearer scim_looks_like_one_but_is_not', resolvers)).toMatchObject({ status: 'authenticated', principal: { credentialId: 'delegations' } });
  expect(calls).toEqual(['provisioning', 'delegations']);
});
