import { accountsFeature } from '../accounts/accounts.feature.js';
import { auditFeature } from '../audit/audit.feature.js';
import { calendarFeedFeature } from '../calendar-feed/calendar-feed.feature.js';
import { usersFeature } from '../users/users.feature.js';
import { notificationSubscriptionsFeature } from '../notification-subscriptions/notification-subscriptions.feature.js';
import { oauthDelegationsFeature } from '../oauth-delegations/oauth-delegations.feature.js';
import { oauthServerFeature } from '../oauth-server/oauth-server.feature.js';
import { ssoFeature } from '../sso/sso.feature.js';
import { scimFeature } from '../scim/scim.feature.js';
import { liveUpdatesFeature } from '../live-updates/live-updates.feature.js';
import { credentialsFeature } from '../credentials/credentials.feature.js';
import type { GraphQLSchema } from 'graphql';
import { buildAppSchema } from '../graphql/schema.js';
import type { Feature } from './feature.js';

/** Every feature of the product, in one place: entities, schema, REST rows, credentials, deletion hooks. */
export const features: readonly Feature[] = [accountsFeature, usersFeature, oauthDelegationsFeature, calendarFeedFeature, notificationSubscriptionsFeature, oauthServerFeature, ssoFeature, scimFeature, auditFeature, liveUpdatesFeature, credentialsFeature];

export const allEntities = () => features.flatMap((feature) => feature.entities);

/** Every feature's commit hooks (the runner orders those holding a lock to the commit last). */
export const allCommitHooks = () => features.flatMap((feature) => feature.commitHooks ?? []);

export const allAppReadOnlyTables = () => features.flatMap((feature) => feature.appReadOnlyTables ?? []);

let schema: Promise<GraphQLSchema> | undefined;

/** The one schema of every feature's resolvers, built once per process; every face executes against it. */
export const appSchema = (): Promise<GraphQLSchema> => (schema ??= buildAppSchema(features.flatMap((feature) => feature.resolvers)));
