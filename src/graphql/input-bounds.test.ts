import 'reflect-metadata';
import { appSchema } from '../app/features.js';
import { parse } from 'graphql';
import { assertOperationInputsAcceptable, operationInputProblems } from './input-bounds.js';
import type { InvalidInputError } from '../errors/domain-errors.js';

// The bounds walk checks each input position with what was computed for it once; the names and
// messages are those of the value's place in the arguments.
test('problems of a bulk input name the element and field; literals and variables alike', async () => {
  const schema = await appSchema();
  const document = parse('mutation($input: UpdateUsersInput!) { updateUsers(input: $input) { users { id } } }');
  const users = Array.from({ length: 100 }, (_, index) => ({ id: `P${String(index).padStart(6, '0')}`, jobTitle: `Title ${index}` }));
  expect(operationInputProblems(schema, document, undefined, { input: { users } })).toEqual([]);
  users[3] = { ...users[3]!, jobTitle: 'x'.repeat(101) };
  users[97] = { ...users[97]!, jobTitle: 'bad\u0000', ...{ name: '\ud800' } };
  expect(operationInputProblems(schema, document, undefined, { input: { users } })).toEqual([
    'input.users[3].jobTitle must be at most 100 characters (got 101)',
    'input.users[97].name contains an unpaired UTF-16 surrogate',
    'input.users[97].jobTitle contains a NUL character (U+0000)',
  ]);
  const literal = parse('mutation { updateUser(input: { id: "P000001", description: "a\\u0000" }) { user { id } } }');
  expect(operationInputProblems(schema, literal, undefined, {})).toEqual(['input.description contains a NUL character (U+0000)']);
  const search = parse('{ users(query: "q") { totalCount } }');
  expect(operationInputProblems(schema, search, undefined, {})).toEqual([]);
  const long = parse(`{ users(query: "${'q'.repeat(101)}") { totalCount } }`);
  expect(operationInputProblems(schema, long, undefined, {})).toEqual(['query must be at most 100 characters (got 101)']);
});

// A feature's own checks joining the answer follow the deployment's rules: in production an app
// may not send users to a loopback host, elsewhere it may.
test('the features\' checks that join a refusal apply production\'s rules in production only', async () => {
  const schema = await appSchema();
  const document = parse('mutation($input: RegisterOAuthAppInput!) { registerOAuthApp(input: $input) { clientSecret } }');
  const input = { name: ' ', kind: 'THIRD_PARTY', redirectUris: ['http://127.0.0.1:8080/cb', `https://partner.example.com/${'x'.repeat(2000)}`], scopes: ['openid'] };
  const pathsIn = (production: boolean) => {
    try {
      assertOperationInputsAcceptable(schema, document, undefined, { input }, { production });
    } catch (error) {
      return (error as InvalidInputError).fields.map((field) => `${field.path.join('.')} ${field.code}`);
    }
    throw new Error('the input was accepted');
  };
  expect(pathsIn(false)).toEqual(['input.redirectUris.1 TOO_LONG', 'input.name INVALID']);
  expect(pathsIn(true)).toEqual(['input.redirectUris.1 TOO_LONG', 'input.name INVALID', 'input.redirectUris.0 INVALID']);
});
