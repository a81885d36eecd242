import { afterAll, beforeAll } from '@jest/globals';
import { issueDelegation } from '../../src/oauth-delegations/oauth-delegation.service.js';
import { metricsRegistry } from '../../src/observability/metrics.js';
import type { Harness } from './harness.js';
import { startTwoInstances, type TwoInstances } from './two-instances.js';

/** Tight bounds, so the bounds' tests reach them quickly. */
export const LIVE_TEST_LIMITS = { maxConnectionsPerCredential: 3, maxSubscriptionsPerConnection: 60, maxBufferedBytes: 16_384, keepAliveMs: 60_000 };
export const V2 = { Accept: 'application/vnd.pagerduty+json;version=2' };
export const VIEWER_REVOKED = 'subscription { viewerAccessRevoked { reason occurredAt } }';
export const USER_CHANGED = 'subscription ($id: ID!) { userChanged(id: $id) { kind userId changedFields user { id name jobTitle } } }';

/** Two instances on one database for the file's tests, started before them and closed after. */
export function useTwoLiveInstances(started: (instances: TwoInstances) => void): void {
  let instances: TwoInstances;
  beforeAll(async () => {
    instances = await startTwoInstances(LIVE_TEST_LIMITS);
    started(instances);
  });
  afterAll(async () => instances.close());
}

/** A delegation's access token for the user, as an `Authorization` value. */
export async function bearerOn(harness: Harness, userId: string, type: 'web' | 'mobile', scopes = 'users.read', expiresInSeconds?: number): Promise<string> {
  const { accessToken } = await harness.database.transactions.run(harness.database.em(), (tx) => issueDelegation(tx, { userId, type, scopes, expiresInSeconds }));
  return `Bearer ${accessToken}`;
}

/** The sum of a metric's values whose labels include `labels`. */
export const gauge = async (name: string, labels: Record<string, string> = {}) =>
  (await metricsRegistry.getSingleMetric(name)!.get()).values
    .filter((value) => Object.entries(labels).every(([label, wanted]) => value.labels[label] === wanted))
    .reduce((sum, value) => sum + value.value, 0);
