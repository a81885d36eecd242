import 'reflect-metadata';
import { getVariableValues } from 'graphql';
import { features, appSchema } from '../../app/features.js';
import { scimUserRoutes } from '../../scim/scim.user-routes.js';
import { prepareRoutes } from './executor.js';

// The input bounds take graphql-jit's coercion of a row's variables where it accepts them, and
// graphql-js's otherwise: both must give the same values for what graphql-js accepts.
test('the compiled coercion of every row gives what graphql-js gives, or refuses and leaves it to graphql-js', async () => {
  const schema = await appSchema();
  const prepared = [...prepareRoutes(schema, features.flatMap((feature) => feature.routes)), ...prepareRoutes(schema, scimUserRoutes)];
  const user = { id: 'PUSER01', name: 'Ada', email: 'ada@example.com', timeZone: 'Europe/Paris', color: null, role: 'ADMIN', description: null, jobTitle: 'SRE' };
  const samples: Record<string, unknown>[] = [
    {},
    { input: null },
    { input: {} },
    { input: { users: [user, { id: 'PUSER02', active: false }] } },
    { input: { users: user } },
    { input: { ...user, expectedVersion: null } },
    { input: { ...user, role: 'admin' } },
    { input: { ...user, timeZone: 'Not/AZone' } },
    { input: { ...user, email: 'not an email' } },
    { input: { id: 'PUSER01', unknown: 1 } },
    { input: { userId: 'PUSER01', types: ['WEB', 'MOBILE'] } },
    { input: { userId: 'PUSER01', subscribables: [{ subscribableType: 'INCIDENT', subscribableId: 'PINC' }] } },
    { id: 'PUSER01', first: 10, after: null },
    { first: 2.5 },
    { query: 'ada', first: 25 },
  ];
  let accepted = 0;
  for (const route of prepared) {
    for (const raw of samples) {
      const compiled = route.coerce(raw);
      const reference = getVariableValues(schema, route.definition.variableDefinitions ?? [], raw);
      if (compiled === undefined) continue;
      accepted++;
      expect({ route: route.route.path, raw, coerced: compiled }).toEqual({ route: route.route.path, raw, coerced: reference.coerced });
    }
  }
  expect(accepted).toBeGreaterThan(prepared.length);
});
