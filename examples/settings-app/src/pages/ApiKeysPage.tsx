import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from '@apollo/client/react';
import type { ApolloCache, Reference } from '@apollo/client';
import { API_KEYS, CREATE_API_KEY, REVOKE_API_KEY, ROLL_API_KEY, type ApiKey } from '../apollo/operations';

/** A new key goes to the top of the cached list; changed keys update themselves (normalized by id). */
function addKey(cache: ApolloCache, viewerId: string, key: ApiKey): void {
  cache.modify({
    id: cache.identify({ __typename: 'User', id: viewerId }),
    fields: {
      apiKeys: (list, { toReference }) => {
        const page = list as { nodes: Reference[] } | null;
        const added = toReference({ __typename: 'ApiKey', id: key.id });
        return page && added ? { ...page, nodes: [added, ...page.nodes] } : list;
      },
    },
  });
}

/** The viewer's own API keys: create, roll (the old one ends at once) and revoke; a secret is shown once. */
export function ApiKeysPage() {
  const { data, error } = useQuery(API_KEYS);
  const viewerId = data?.viewer.id;
  const [description, setDescription] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [create] = useMutation(CREATE_API_KEY);
  const [roll] = useMutation(ROLL_API_KEY);
  const [revoke] = useMutation(REVOKE_API_KEY);

  async function run(action: () => Promise<string | null>) {
    setFailure(null);
    try {
      setSecret(await action());
    } catch (caught) {
      setFailure(caught instanceof Error ? caught.message : String(caught));
    }
  }

  function submit(event: FormEvent) {
    event.preventDefault();
    if (!viewerId) return;
    void run(async () => (await create({
      variables: { input: { kind: 'USER', userId: viewerId, description } },
      update: (cache, { data: answer }) => answer && addKey(cache, viewerId, answer.createApiKey.apiKey),
    })).data!.createApiKey.secret);
  }

  const rollKey = (id: string) => run(async () => (await roll({
    variables: { input: { id, previousExpiresIn: 0 } },
    update: (cache, { data: answer }) => answer && viewerId && addKey(cache, viewerId, answer.rollApiKey.apiKey),
  })).data!.rollApiKey.secret);
  const revokeKey = (id: string) => run(async () => { await revoke({ variables: { input: { id } } }); return null; });

  return (
    <section>
      <h2>API keys</h2>
      {(error || failure) && <p role="alert">{error?.message ?? failure}</p>}
      <form onSubmit={submit}>
        <label>Description <input name="description" value={description} onChange={(event) => setDescription(event.target.value)} /></label>
        <button type="submit">Create key</button>
      </form>
      {secret && <p className="notice">Copy your new key now, it is not shown again: <span className="secret" data-testid="secret">{secret}</span></p>}
      <table aria-label="API keys">
        <tbody>
          {data?.viewer.apiKeys?.nodes.map((key) => (
            <tr key={key.id} data-key-id={key.id} data-status={key.status}>
              <td>{key.description ?? '(no description)'}</td>
              <td>…{key.truncatedToken}</td>
              <td>{key.status}</td>
              <td>{key.status === 'ACTIVE' && <>
                <button type="button" onClick={() => void rollKey(key.id)}>Roll</button>
                <button type="button" onClick={() => void revokeKey(key.id)}>Revoke</button>
              </>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
