import { randomUUID } from 'node:crypto';
import type { Change, WriteOrigin } from '../db/change-journal.js';

export const METHOD_TYPES = ['browser', 'oauth', 'api_token', 'identity_provider', 'other'] as const;
export type MethodType = (typeof METHOD_TYPES)[number];

/** The types of reference a record's actors have (`actorsOf`). */
export const ACTOR_TYPES = ['user_reference', 'api_key_reference', 'app_reference', 'oauth_delegation_reference', 'provisioning_token_reference'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/** `{id, type: "<type>_reference", summary}` as stored; `self`/`html_url` are added when presented. */
export interface StoredReference {
  id: string;
  type: string;
  summary?: string | null;
}

/** What a record says beyond its indexed columns, stored as written (jsonb) and covered by the chain. */
export interface AuditRecordBody {
  executionContext: { requestId: string | null; remoteAddress: string | null };
  actors: StoredReference[];
  method: { type: MethodType; truncatedToken: string | null; description: string | null };
  rootResource: StoredReference;
  details: {
    resource: StoredReference;
    fields: Array<{ name: string; value: string | null; beforeValue: string | null }>;
    references: Array<{ name: string; added: StoredReference[] | null; removed: StoredReference[] | null }>;
  };
}

/** The body with its keys in the one order the chain hashes it in (the order `draftRecord` writes). */
/** A stored body as the driver hands it over: parsed jsonb, or its text (some drivers and casts). */
export function auditBodyOf(body: AuditRecordBody | string): AuditRecordBody {
  return typeof body === 'string' ? (JSON.parse(body) as AuditRecordBody) : body;
}

export function orderedBody(body: AuditRecordBody): AuditRecordBody {
  const ref = (item: StoredReference): StoredReference => (item.summary ? { id: item.id, type: item.type, summary: item.summary } : { id: item.id, type: item.type });
  return {
    executionContext: { requestId: body.executionContext.requestId, remoteAddress: body.executionContext.remoteAddress },
    actors: body.actors.map(ref),
    method: { type: body.method.type, truncatedToken: body.method.truncatedToken, description: body.method.description },
    rootResource: ref(body.rootResource),
    details: {
      resource: ref(body.details.resource),
      fields: body.details.fields.map((field) => ({ name: field.name, value: field.value, beforeValue: field.beforeValue })),
      references: body.details.references.map((group) => ({ name: group.name, added: group.added?.map(ref) ?? null, removed: group.removed?.map(ref) ?? null })),
    },
  };
}

/** What every record of one write shares: who acted, how and from where; stored once per batch. */
export type DraftContext = Pick<AuditRecordBody, 'executionContext' | 'actors' | 'method'>;

/** One record about to be chained: its own part, without its place in the chain. */
export interface DraftRecord {
  id: string;
  action: string;
  rootResourceType: string;
  rootResourceId: string;
  rootResource: StoredReference;
  details: AuditRecordBody['details'];
}

/** The records of one write of one account, about to be chained as one batch. */
export interface DraftBatch {
  context: DraftContext;
  records: DraftRecord[];
}

/**
 * How a write was made, from who made it. The one mapping from credentials to the public API's
 * method types: a new kind of credential (a provisioning token) is one more case here.
 */
export function methodTypeOf(origin: WriteOrigin): MethodType {
  if (origin.face === 'cli') return 'other';
  switch (origin.principal?.kind as string | undefined) {
    case 'user_key':
    case 'account_key':
      return 'api_token';
    case 'oauth':
    case 'oauth_app':
      return 'oauth';
    case 'provisioning_token':
      return 'identity_provider';
  }
  if (origin.face === 'scim') return 'identity_provider';
  if (origin.face === 'oauth') return 'browser';
  return 'other';
}

const reference = (type: string, id: string, summary?: string | null): StoredReference => ({ id, type: `${type}_reference`, ...(summary ? { summary } : {}) });

/**
 * Who acted, each named by its summary: the user and the credential they used (a key, a
 * provisioning token), and for a token an app was issued the app itself (`app_reference` by its
 * client id) before the delegation, so an app's changes are found by its client id.
 */
export function actorsOf(origin: WriteOrigin): StoredReference[] {
  const principal = origin.principal;
  if (!principal) return origin.actor ? [reference(origin.actor.type, origin.actor.id)] : [];
  const kind = principal.kind as string;
  const summaries = principal.summaries ?? {};
  const user = 'userId' in principal && typeof principal.userId === 'string' ? [reference('user', principal.userId, summaries.user)] : [];
  const app = 'clientId' in principal && typeof principal.clientId === 'string' ? [reference('app', principal.clientId, summaries.app)] : [];
  if (kind === 'user_key' || kind === 'account_key') return [...user, reference('api_key', principal.credentialId, summaries.credential)];
  if (kind === 'oauth' || kind === 'oauth_app') return [...user, ...app, reference('oauth_delegation', principal.credentialId)];
  return [...user, reference(kind, principal.credentialId, summaries.credential)];
}

/** A field value as the public API shows it: a string, or null. */
function shown(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const TAKES_AWAY = /^(delete|revoke|remove|purge)/;

/** Who acted, how and from where: the same for every change a write makes. */
function draftContext(origin: WriteOrigin): DraftContext {
  const methodType = methodTypeOf(origin);
  // The reference: browser sessions and identity providers carry no token value.
  const truncatedToken = methodType === 'browser' || methodType === 'identity_provider' ? null : (origin.principal?.credentialTail ?? null);
  return {
    executionContext: { requestId: origin.requestId ?? null, remoteAddress: origin.remoteAddress ?? null },
    actors: actorsOf(origin),
    method: { type: methodType, truncatedToken, description: origin.description ?? null },
  };
}

/**
 * The record of one change: about the user it concerns (so `GET /users/{id}/audit/records` lists
 * everything done to that user, their keys, delegations and subscriptions included), else about
 * the changed resource itself.
 */
function draftRecord(change: Change): DraftRecord {
  const resource = reference(change.resource.type, change.resource.id, change.resource.summary);
  const root = change.userId && !(change.resource.type === 'user' && change.resource.id === change.userId)
    ? reference('user', change.userId)
    : resource;
  const references: AuditRecordBody['details']['references'] = [];
  if (change.references?.length) {
    const removing = TAKES_AWAY.test(change.action);
    const groups = new Map<string, StoredReference[]>();
    for (const item of change.references) {
      const name = `${item.type}s`;
      const group = groups.get(name);
      if (group) group.push(reference(item.type, item.id));
      else groups.set(name, [reference(item.type, item.id)]);
    }
    for (const [name, items] of groups) references.push({ name, added: removing ? null : items, removed: removing ? items : null });
  }
  return {
    id: randomUUID(),
    action: change.action,
    rootResourceType: change.userId ? 'user' : change.resource.type,
    rootResourceId: change.userId ?? change.resource.id,
    rootResource: root,
    details: {
      resource,
      fields: change.fields?.map((field) => ({ name: field.name, value: shown(field.value), beforeValue: shown(field.beforeValue) })) ?? [],
      references,
    },
  };
}

/** The records of `changes` (all of one account) as one write of `origin`'s. */
export function draftBatch(changes: readonly Change[], origin: WriteOrigin): DraftBatch {
  return { context: draftContext(origin), records: changes.map(draftRecord) };
}
