import { useState, type FormEvent } from 'react';
import { useMutation } from '@apollo/client/react';
import { UPDATE_USER, type UserSummary } from '../apollo/operations';
import { fieldErrorsOf } from '../apollo/field-errors';

const FIELDS = [
  { name: 'name', label: 'Name' },
  { name: 'email', label: 'Email' },
  { name: 'jobTitle', label: 'Job title' },
  { name: 'description', label: 'About' },
] as const;
type FieldName = (typeof FIELDS)[number]['name'];

/** Sends only what changed; every problem the server reports is shown next to its input. */
export function EditUserForm({ user, onDone }: { user: UserSummary; onDone: () => void }) {
  const [values, setValues] = useState<Record<FieldName, string>>({
    name: user.name, email: user.email, jobTitle: user.jobTitle ?? '', description: user.description ?? '',
  });
  const [errors, setErrors] = useState<{ byField: Record<string, string>; other?: string }>({ byField: {} });
  const [updateUser, { loading }] = useMutation(UPDATE_USER);

  async function save(event: FormEvent) {
    event.preventDefault();
    const changed = FIELDS.filter(({ name }) => values[name] !== (user[name] ?? '')).map(({ name }) => [name, values[name]]);
    try {
      await updateUser({ variables: { input: { id: user.id, ...Object.fromEntries(changed) } } });
      setErrors({ byField: {} });
      onDone();
    } catch (error) {
      setErrors(fieldErrorsOf(error));
    }
  }

  return (
    <form aria-label={`Edit ${user.name}`} onSubmit={save}>
      <h3>Edit {user.name}</h3>
      {FIELDS.map(({ name, label }) => (
        <label key={name}>
          {label}
          <input name={name} value={values[name]} aria-invalid={Boolean(errors.byField[name])} aria-describedby={`${name}-error`}
            onChange={(event) => setValues({ ...values, [name]: event.target.value })} />
          {errors.byField[name] && <p className="field-error" id={`${name}-error`} data-field={name}>{errors.byField[name]}</p>}
        </label>
      ))}
      {errors.other && <p className="field-error" role="alert">{errors.other}</p>}
      <button type="submit" disabled={loading}>Save</button>
      <button type="button" onClick={onDone}>Cancel</button>
    </form>
  );
}
