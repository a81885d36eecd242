import { useState, type FormEvent } from 'react';
import { useQuery } from '@apollo/client/react';
import { USERS, type UserSummary } from '../apollo/operations';
import { EditUserForm } from './EditUserForm';

const PAGE_SIZE = 10;

/** The account's users, a search, "Load more" through the connection's cursor, and an edit form. */
export function UsersPage() {
  const [draft, setDraft] = useState('');
  const [query, setQuery] = useState<string | undefined>(undefined);
  const [editing, setEditing] = useState<UserSummary | null>(null);
  const { data, error, loading, fetchMore } = useQuery(USERS, { variables: { query, first: PAGE_SIZE } });
  const connection = data?.users;

  function search(event: FormEvent) {
    event.preventDefault();
    setQuery(draft.trim() || undefined);
  }

  return (
    <section>
      <h2>Users</h2>
      <form role="search" onSubmit={search}>
        <label>Search users <input name="query" value={draft} onChange={(event) => setDraft(event.target.value)} /></label>
        <button type="submit">Search</button>
      </form>
      {error && <p role="alert">{error.message}</p>}
      {loading && !connection && <p>Loading…</p>}
      <table aria-label="Users">
        <tbody>
          {connection?.edges.map(({ node }) => (
            <tr key={node.id} data-user-id={node.id}>
              <td>{node.name}</td>
              <td>{node.email}</td>
              <td>{node.jobTitle}</td>
              <td><button type="button" onClick={() => setEditing(node)}>Edit</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {connection?.pageInfo.hasNextPage && (
        <button type="button" onClick={() => void fetchMore({ variables: { after: connection.pageInfo.endCursor } })}>Load more</button>
      )}
      {editing && <EditUserForm key={editing.id} user={editing} onDone={() => setEditing(null)} />}
    </section>
  );
}
