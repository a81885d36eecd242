import type { Feature } from '../app/feature.js';
import { liveUpdatesCommitHook } from './live-updates.commit-hook.js';
import { ViewerAccessResolver } from './viewer-access.resolver.js';

/** GraphQL subscriptions over WebSocket: the fan-out of committed changes. */
export const liveUpdatesFeature: Feature = {
  name: 'live-updates',
  entities: [],
  resolvers: [ViewerAccessResolver],
  routes: [],
  commitHooks: [liveUpdatesCommitHook],
};
