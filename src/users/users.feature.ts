import type { Feature } from '../app/feature.js';
import { User } from './user.entity.js';
import { UserResolver } from './user.resolver.js';
import { UserChangedResolver } from './user-changed.resolver.js';
import { userRoutes } from './user.rest.js';
import { userSchemas } from './user.openapi.js';

export const usersFeature: Feature = {
  name: 'users',
  entities: [User],
  resolvers: [UserResolver, UserChangedResolver],
  routes: userRoutes,
  schemas: userSchemas,
};
