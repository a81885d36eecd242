import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness, type TestAccount } from './support/harness.js';
import { USER_COLORS } from '../src/users/user.validation.js';

/**
 * A form hears of every bad field at once: the input's scalars, its length bounds and the service's
 * own checks (the schedule colors among them) answer together, each problem at its field's path;
 * a taken email names its field too.
 */
let h: Harness;
let account: TestAccount;

beforeAll(async () => {
  h = await startHarness();
  account = await h.createAccount();
});
afterAll(async () => h.close());

type Field = { path: Array<string | number>; code: string; message: string };
const fieldsOf = (result: { errors?: Array<{ extensions?: { code?: string; fields?: Field[] } }> }) => {
  expect(result.errors).toHaveLength(1);
  expect(result.errors![0]!.extensions!.code).toBe('BAD_USER_INPUT');
  return result.errors![0]!.extensions!.fields!.map((field) => [field.path.join('.'), field.code]).sort();
};

const UPDATE = 'mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }';
const CREATE = 'mutation($input: CreateUserInput!) { createUser(input: $input) { user { id } } }';
const BAD = { email: 'not-an-email', jobTitle: 'j'.repeat(101), name: ' ', color: 'no-such-colour' };

describe('every problem of an input in one answer', () => {
  test('updateUser: a bad email (scalar), a too long job title (bound), an empty name (service) and an unknown color, all four at once', async () => {
    const user = await h.createUser(account);
    const result = await h.graphql(UPDATE, { input: { id: user.id, ...BAD } }, account.key);
    expect(fieldsOf(result)).toEqual([['input.color', 'INVALID'], ['input.email', 'INVALID'], ['input.jobTitle', 'TOO_LONG'], ['input.name', 'REQUIRED']]);
    const color = result.errors![0]!.extensions!.fields!.find((field: Field) => field.path.join('.') === 'input.color')!;
    // The unknown color is refused with the allowed values.
    for (const allowed of USER_COLORS.slice(0, 5)) expect(color.message).toContain(allowed);
  });

  test('createUser and updateUsers likewise, each element\'s problems at its own path', async () => {
    expect(fieldsOf(await h.graphql(CREATE, { input: { ...BAD, timeZone: 'Mars/Olympus' } }, account.key))).toEqual([
      ['input.color', 'INVALID'], ['input.email', 'INVALID'], ['input.jobTitle', 'TOO_LONG'], ['input.name', 'REQUIRED'], ['input.timeZone', 'INVALID'],
    ]);
    const [first, second] = [await h.createUser(account), await h.createUser(account)];
    const bulk = await h.graphql('mutation($input: UpdateUsersInput!) { updateUsers(input: $input) { users { id } } }', {
      input: { users: [{ id: first.id, email: 'nope' }, { id: second.id, color: 'no-such-colour', name: ' ' }] },
    }, account.key);
    expect(fieldsOf(bulk)).toEqual([['input.users.0.email', 'INVALID'], ['input.users.1.color', 'INVALID'], ['input.users.1.name', 'REQUIRED']]);
  });

  test('an unknown color alone is refused with the allowed values; one the user already has may be saved again', async () => {
    const user = await h.createUser(account);
    const alone = await h.graphql(UPDATE, { input: { id: user.id, color: 'no-such-colour' } }, account.key);
    expect(fieldsOf(alone)).toEqual([['input.color', 'INVALID']]);
    expect((await h.graphql(UPDATE, { input: { id: user.id, color: 'steel-blue' } }, account.key)).errors).toBeUndefined();
    // A color stored before the list was enforced keeps working: saved unchanged, it is accepted.
    await h.database.em().execute('update users set color = ? where id = ?', ['legacy-beige', user.id]);
    expect((await h.graphql(UPDATE, { input: { id: user.id, color: 'legacy-beige', name: 'Still Here' } }, account.key)).errors).toBeUndefined();
  });

  test('the schema names the schedule colors where a color is given', async () => {
    for (const input of ['CreateUserInput', 'UpdateUserInput']) {
      const described = await h.graphql(`{ __type(name: "${input}") { inputFields { name description } } }`, {}, account.key);
      const color = described.data.__type.inputFields.find((field: { name: string }) => field.name === 'color');
      for (const allowed of USER_COLORS) expect([input, color.description]).toEqual([input, expect.stringContaining(allowed)]);
    }
  });

  test('a taken email is DUPLICATE at its field, on create and on update', async () => {
    const holder = await h.createUser(account);
    const created = await h.graphql(CREATE, { input: { name: 'Copy Cat', email: holder.email } }, account.key);
    expect(created.errors![0]!.extensions!.fields).toEqual([{ path: ['input', 'email'], code: 'DUPLICATE', message: 'email has already been taken' }]);
    const other = await h.createUser(account);
    const updated = await h.graphql(UPDATE, { input: { id: other.id, email: holder.email.toUpperCase() } }, account.key);
    expect(updated.errors![0]!.extensions!.fields).toEqual([{ path: ['input', 'email'], code: 'DUPLICATE', message: 'email has already been taken' }]);
  });

  test('a taken email joins the service\'s other checks in the same answer, on create and on a bulk update, each at its element', async () => {
    const [holder, another] = [await h.createUser(account), await h.createUser(account)];
    expect(fieldsOf(await h.graphql(CREATE, { input: { name: ' ', email: holder.email } }, account.key))).toEqual([['input.email', 'DUPLICATE'], ['input.name', 'REQUIRED']]);
    const [first, second] = [await h.createUser(account), await h.createUser(account)];
    const bulk = await h.graphql('mutation($input: UpdateUsersInput!) { updateUsers(input: $input) { users { id } } }', {
      input: { users: [{ id: first.id, email: holder.email }, { id: second.id, email: another.email, color: 'no-such-colour' }] },
    }, account.key);
    expect(fieldsOf(bulk)).toEqual([['input.users.0.email', 'DUPLICATE'], ['input.users.1.color', 'INVALID'], ['input.users.1.email', 'DUPLICATE']]);
    // Alone, two taken emails are both named too.
    const taken = await h.graphql('mutation($input: UpdateUsersInput!) { updateUsers(input: $input) { users { id } } }', {
      input: { users: [{ id: first.id, email: holder.email }, { id: second.id, email: another.email }] },
    }, account.key);
    expect(fieldsOf(taken)).toEqual([['input.users.0.email', 'DUPLICATE'], ['input.users.1.email', 'DUPLICATE']]);
  });

  test('REST: PUT /users/{id} answers every problem in one v2 error envelope', async () => {
    const user = await h.createUser(account);
    const response = await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { email: 'not-an-email', name: ' ', color: 'no-such-colour', job_title: 'j'.repeat(101) } } });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe(2001);
    const errors = response.body.error.errors as string[];
    // REST names the fields as its body does.
    expect(errors).toHaveLength(4);
    expect(errors).toContain('user.job_title must be at most 100 characters');
    expect(errors).toContain('user.email is not a valid email address');
    expect(errors).toContain('user.name must not be empty');
    expect(errors.some((message) => message.startsWith('user.color must be one of purple, red, green'))).toBe(true);
  });
});
