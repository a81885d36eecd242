import { gql, type TypedDocumentNode } from '@apollo/client';

export interface UserSummary { id: string; name: string; email: string; jobTitle: string | null; description: string | null }
export interface SignInSession { id: string; createdAt: string; lastActiveAt: string; method: string; userAgent: string | null; current: boolean }
export interface ApiKey { id: string; description: string | null; status: string; truncatedToken: string | null; createdAt: string }
interface AuditReference { type: string; summary: string | null }
export interface AuditRecord { id: string; action: string; executionTime: string; rootResource: AuditReference; details: { resource: AuditReference } }

export const VIEWER: TypedDocumentNode<{ viewer: { id: string; name: string; email: string } }> = gql`
  query Viewer { viewer { id name email } }
`;

export const USERS: TypedDocumentNode<
  { users: { edges: { cursor: string; node: UserSummary }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } },
  { query?: string; first: number; after?: string | null }
> = gql`
  query Users($query: String, $first: Int!, $after: String) {
    users(query: $query, first: $first, after: $after) {
      edges { cursor node { id name email jobTitle description } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

export const UPDATE_USER: TypedDocumentNode<{ updateUser: { user: UserSummary } }, { input: Record<string, unknown> }> = gql`
  mutation UpdateUser($input: UpdateUserInput!) {
    updateUser(input: $input) { user { id name email jobTitle description } }
  }
`;

export const SESSIONS: TypedDocumentNode<{ viewer: { id: string; signInSessions: SignInSession[] | null } }> = gql`
  query Sessions { viewer { id signInSessions { id createdAt lastActiveAt method userAgent current } } }
`;

export const REVOKE_SESSIONS: TypedDocumentNode<
  { revokeSignInSessions: { revokedCount: number; revokedSessionIds: string[] } },
  { input: { userId: string; ids?: string[]; allButCurrent?: boolean } }
> = gql`
  mutation RevokeSignInSessions($input: RevokeSignInSessionsInput!) {
    revokeSignInSessions(input: $input) { revokedCount revokedSessionIds }
  }
`;

const API_KEY_FIELDS = gql`
  fragment ApiKeyFields on ApiKey { id description status truncatedToken createdAt }
`;

export const API_KEYS: TypedDocumentNode<{ viewer: { id: string; apiKeys: { nodes: ApiKey[] } | null } }> = gql`
  query ApiKeys { viewer { id apiKeys(first: 50) { nodes { ...ApiKeyFields } } } }
  ${API_KEY_FIELDS}
`;

export const CREATE_API_KEY: TypedDocumentNode<{ createApiKey: { secret: string; apiKey: ApiKey } }, { input: { kind: 'USER'; userId: string; description: string } }> = gql`
  mutation CreateApiKey($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret apiKey { ...ApiKeyFields } } }
  ${API_KEY_FIELDS}
`;

export const ROLL_API_KEY: TypedDocumentNode<{ rollApiKey: { secret: string; apiKey: ApiKey; previous: ApiKey } }, { input: { id: string; previousExpiresIn: number } }> = gql`
  mutation RollApiKey($input: RollApiKeyInput!) { rollApiKey(input: $input) { secret apiKey { ...ApiKeyFields } previous { ...ApiKeyFields } } }
  ${API_KEY_FIELDS}
`;

export const REVOKE_API_KEY: TypedDocumentNode<{ revokeApiKey: { apiKey: ApiKey } }, { input: { id: string } }> = gql`
  mutation RevokeApiKey($input: RevokeApiKeyInput!) { revokeApiKey(input: $input) { apiKey { ...ApiKeyFields } } }
  ${API_KEY_FIELDS}
`;

export const AUDIT_RECORD_ADDED: TypedDocumentNode<{ auditRecordAdded: { kind: 'ADDED' | 'RESYNC'; record: AuditRecord | null } }> = gql`
  subscription AuditRecordAdded {
    auditRecordAdded { kind record { id action executionTime rootResource { type summary } details { resource { type summary } } } }
  }
`;
