import { expect } from '@jest/globals';
import fc from 'fast-check';
import type { Database } from '../../src/db/database.js';

/**
 * The steps of the privilege-escalation model (test/escalation.model.test.ts): what an admin and a
 * member of one account can try with what they hold, against the real server, and the invariant
 * checked after every step. Each step is a fast-check command; the model only counts steps, the
 * server's own answers and rows are the truth the invariant reads.
 */
export interface Attacker {
  name: 'admin' | 'member';
  id: string;
  email: string;
  role: 'admin' | 'user';
  /** `Authorization` values of every credential the attacker holds or obtained. */
  credentials: string[];
  /** Provisioning tokens the attacker obtained (SCIM only). */
  scimTokens: string[];
}

export interface Person {
  id: string;
  email: string;
  key: string;
}

export interface World {
  accountId: string;
  baseUrl: string;
  database: Database;
  owner: Person;
  /** An admin who is not attacking: nobody else may act as them either. */
  victim: Person;
  /** The account's own console (a web app), which the owner's browser is signed in to. */
  consoleClientId: string;
  attackers: [Attacker, Attacker];
  apps: string[];
  /** The owner's signed-in browser opens a link to the app's authorize endpoint: `callback` means the app received a code without asking. */
  openLink(clientId: string, redirectUri: string): Promise<'page' | 'callback'>;
  graphql(authorization: string, query: string, variables?: Record<string, unknown>): Promise<{ status: number; data?: any; errors?: any[] }>;
}

interface Model {
  steps: number;
}

type Target = 'owner' | 'victim' | 'other attacker' | 'self';
const TARGETS: Target[] = ['owner', 'victim', 'other attacker', 'self'];
const ATTACKER_REDIRECT = 'https://console-example.attacker.test/callback';
const MOBILE_ATTACKER_REDIRECT = 'com.attacker.console:/callback';

function targetId(world: World, attacker: Attacker, target: Target): string {
  if (target === 'owner') return world.owner.id;
  if (target === 'victim') return world.victim.id;
  if (target === 'self') return attacker.id;
  return world.attackers.find((other) => other !== attacker)!.id;
}

const pick = <T>(items: readonly T[], index: number): T => items[index % items.length]!;

/** What the attackers obtained over a run: a model whose steps never succeed would prove nothing. */
export const obtained = { keys: 0, provisioningTokens: 0, appsOpenedByOwner: 0 };

/** One attempt by one attacker with one of their credentials; what it obtained joins what they hold. */
abstract class Attempt implements fc.AsyncCommand<Model, World> {
  constructor(protected readonly who: number, protected readonly credential: number) {}

  check(): boolean {
    return true;
  }

  async run(model: Model, world: World): Promise<void> {
    model.steps += 1;
    const attacker = world.attackers[this.who % 2]!;
    await this.attempt(world, attacker, pick(attacker.credentials, this.credential));
    await assertNothingEscalated(world, this.toString());
  }

  protected abstract attempt(world: World, attacker: Attacker, authorization: string): Promise<void>;
  abstract toString(): string;
}

class MintKey extends Attempt {
  constructor(who: number, credential: number, private readonly kind: 'USER' | 'ACCOUNT_FULL_ACCESS' | 'ACCOUNT_READ_ONLY', private readonly target: Target) {
    super(who, credential);
  }

  protected async attempt(world: World, attacker: Attacker, authorization: string): Promise<void> {
    const input = { kind: this.kind, ...(this.kind === 'USER' ? { userId: targetId(world, attacker, this.target) } : {}) };
    const result = await world.graphql(authorization, 'mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret } }', { input });
    const secret = result.data?.createApiKey?.secret as string | undefined;
    if (secret) {
      attacker.credentials.push(`Token token=${secret}`);
      obtained.keys += 1;
    }
  }

  toString(): string {
    return `attacker ${this.who % 2} mints a ${this.kind} key${this.kind === 'USER' ? ` for ${this.target}` : ''} with credential ${this.credential}`;
  }
}

/** Acts on a key of someone's: rolls it (the new secret joins the attacker's) or revokes it. */
class KeyOfSomeone extends Attempt {
  constructor(who: number, credential: number, private readonly action: 'roll' | 'revoke', private readonly target: Target) {
    super(who, credential);
  }

  protected async attempt(world: World, attacker: Attacker, authorization: string): Promise<void> {
    const [key] = await world.database.em().execute<{ id: string }[]>(
      'select id from api_keys where user_id = ? and revoked_at is null order by created_at limit 1',
      [targetId(world, attacker, this.target)],
    );
    if (!key) return;
    if (this.action === 'revoke') {
      await world.graphql(authorization, 'mutation($input: RevokeApiKeyInput!) { revokeApiKey(input: $input) { apiKey { id } } }', { input: { id: key.id } });
      return;
    }
    const result = await world.graphql(authorization, 'mutation($input: RollApiKeyInput!) { rollApiKey(input: $input) { secret } }', { input: { id: key.id } });
    const secret = result.data?.rollApiKey?.secret as string | undefined;
    if (secret) {
      attacker.credentials.push(`Token token=${secret}`);
      obtained.keys += 1;
    }
  }

  toString(): string {
    return `attacker ${this.who % 2} tries to ${this.action} a key of ${this.target} with credential ${this.credential}`;
  }
}

class ChangeEmail extends Attempt {
  constructor(who: number, credential: number, private readonly target: Target) {
    super(who, credential);
  }

  protected async attempt(world: World, attacker: Attacker, authorization: string): Promise<void> {
    const id = targetId(world, attacker, this.target);
    const email = `taken-${id.toLowerCase()}-${Math.random().toString(36).slice(2, 8)}@attacker.test`;
    const result = await world.graphql(authorization, 'mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }', { input: { id, email } });
    // Their own email is theirs to change: the model keeps following them.
    if (!result.errors && id === attacker.id) attacker.email = email;
  }

  toString(): string {
    return `attacker ${this.who % 2} changes the email of ${this.target} with credential ${this.credential}`;
  }
}

/** Registers an app redirecting to the attacker (or adds that redirect to the account's console), then sends the owner its link. */
class LureOwner extends Attempt {
  constructor(who: number, credential: number, private readonly app: 'WEB' | 'SPA' | 'MOBILE' | 'THIRD_PARTY' | 'the console') {
    super(who, credential);
  }

  protected async attempt(world: World, _attacker: Attacker, authorization: string): Promise<void> {
    const redirect = this.app === 'MOBILE' ? MOBILE_ATTACKER_REDIRECT : ATTACKER_REDIRECT;
    let clientId: string | undefined;
    if (this.app === 'the console') {
      const result = await world.graphql(authorization, 'mutation($input: UpdateOAuthAppInput!) { updateOAuthApp(input: $input) { app { clientId } } }', {
        input: { clientId: world.consoleClientId, redirectUris: ['https://console.example.com/callback', redirect], disabled: false },
      });
      clientId = result.errors ? undefined : world.consoleClientId;
    } else {
      const result = await world.graphql(authorization, 'mutation($input: RegisterOAuthAppInput!) { registerOAuthApp(input: $input) { app { clientId } } }', {
        input: { name: 'Example Console', kind: this.app, redirectUris: [redirect], scopes: ['openid', 'users.read'] },
      });
      clientId = result.data?.registerOAuthApp?.app?.clientId;
    }
    if (!clientId) return;
    world.apps.push(clientId);
    obtained.appsOpenedByOwner += 1;
    const landed = await world.openLink(clientId, redirect);
    if (landed === 'callback') throw new Error(`${this}: the owner's browser handed the attacker's redirect a code without asking`);
  }

  toString(): string {
    return `attacker ${this.who % 2} lures the owner through ${this.app === 'the console' ? 'the console with a redirect of theirs' : `a ${this.app} app of theirs`} (credential ${this.credential})`;
  }
}

class MintProvisioningToken extends Attempt {
  protected async attempt(world: World, attacker: Attacker, authorization: string): Promise<void> {
    const result = await world.graphql(authorization, 'mutation($input: CreateProvisioningTokenInput!) { createProvisioningToken(input: $input) { token } }', { input: {} });
    const token = result.data?.createProvisioningToken?.token as string | undefined;
    if (token) {
      attacker.scimTokens.push(token);
      obtained.provisioningTokens += 1;
    }
  }

  toString(): string {
    return `attacker ${this.who % 2} mints a provisioning token with credential ${this.credential}`;
  }
}

/** With every provisioning token they hold, renames someone's sign-in email through SCIM. */
class ScimEmail extends Attempt {
  constructor(who: number, private readonly target: Target) {
    super(who, 0);
  }

  protected async attempt(world: World, attacker: Attacker): Promise<void> {
    for (const token of attacker.scimTokens) {
      await fetch(`${world.baseUrl}/scim/v2/Users/${targetId(world, attacker, this.target)}`, {
        method: 'PATCH',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/scim+json' },
        body: JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'userName', value: `scim-${Date.now()}@attacker.test` }] }),
      });
    }
  }

  toString(): string {
    return `attacker ${this.who % 2} renames ${this.target} through SCIM`;
  }
}

/**
 * After every step: the owner and the other admin still have their emails and their keys; every
 * credential an attacker holds acts as that attacker (or as the account, for an admin's account
 * key); the member holds nothing with an admin's reach and no provisioning token.
 */
async function assertNothingEscalated(world: World, step: string): Promise<void> {
  const people = await world.database.em().execute<{ id: string; email: string }[]>('select id, email from users where id in (?, ?)', [world.owner.id, world.victim.id]);
  for (const person of [world.owner, world.victim]) {
    expect([step, people.find((row) => row.id === person.id)?.email]).toEqual([step, person.email]);
  }
  const keys = await world.database.em().execute<{ user_id: string; revoked_at: unknown; superseded_at: unknown }[]>(
    'select user_id, revoked_at, superseded_at from api_keys where user_id in (?, ?)',
    [world.owner.id, world.victim.id],
  );
  expect([step, keys.filter((key) => key.revoked_at !== null || key.superseded_at !== null)]).toEqual([step, []]);
  for (const attacker of world.attackers) {
    for (const authorization of attacker.credentials) {
      const probe = await world.graphql(authorization, '{ viewer { id } auditRecords(first: 1) { edges { cursor } } }');
      const actsAs = probe.data?.viewer?.id as string | undefined;
      if (actsAs !== undefined) expect([step, attacker.name, actsAs]).toEqual([step, attacker.name, attacker.id]);
      if (attacker.role !== 'admin') expect([step, attacker.name, probe.data?.auditRecords ?? null]).toEqual([step, attacker.name, null]);
    }
  }
  expect([step, world.attackers[1].scimTokens]).toEqual([step, []]);
}

export function escalationCommands(): Array<fc.Arbitrary<fc.AsyncCommand<Model, World>>> {
  const who = fc.nat(1);
  const credential = fc.nat(11);
  const target = fc.constantFrom(...TARGETS);
  return [
    fc.tuple(who, credential, fc.constantFrom('USER' as const, 'ACCOUNT_FULL_ACCESS' as const, 'ACCOUNT_READ_ONLY' as const), target).map(([w, c, kind, t]) => new MintKey(w, c, kind, t)),
    fc.tuple(who, credential, fc.constantFrom('roll' as const, 'revoke' as const), target).map(([w, c, action, t]) => new KeyOfSomeone(w, c, action, t)),
    fc.tuple(who, credential, target).map(([w, c, t]) => new ChangeEmail(w, c, t)),
    fc.tuple(who, credential, fc.constantFrom('WEB' as const, 'SPA' as const, 'MOBILE' as const, 'THIRD_PARTY' as const, 'the console' as const)).map(([w, c, app]) => new LureOwner(w, c, app)),
    fc.tuple(who, credential).map(([w, c]) => new MintProvisioningToken(w, c)),
    fc.tuple(who, target).map(([w, t]) => new ScimEmail(w, t)),
  ];
}
