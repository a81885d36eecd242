import { useMutation, useQuery } from '@apollo/client/react';
import type { ApolloCache, Reference } from '@apollo/client';
import { REVOKE_SESSIONS, SESSIONS } from '../apollo/operations';

/**
 * Removes the ended sessions from the cached list, from the mutation's answer (their ids): the
 * page updates without asking the server for the list again.
 */
function forgetSessions(cache: ApolloCache, userId: string, endedIds: readonly string[]): void {
  const ended = new Set(endedIds);
  cache.modify<{ signInSessions: Reference[] | null }>({
    id: cache.identify({ __typename: 'User', id: userId }),
    fields: {
      signInSessions: (sessions, { readField }) => sessions?.filter((session) => !ended.has(readField<string>('id', session) ?? '')) ?? null,
    },
  });
  for (const id of ended) cache.evict({ id: cache.identify({ __typename: 'SignInSession', id }) });
  cache.gc();
}

/** The browsers signed in as the viewer; "this device" is the session behind this tab's token. */
export function SessionsPage() {
  const { data, error } = useQuery(SESSIONS);
  const [revoke, { loading, error: revokeError }] = useMutation(REVOKE_SESSIONS);
  const viewer = data?.viewer;

  function end(input: { ids?: string[]; allButCurrent?: boolean }) {
    if (!viewer) return;
    void revoke({
      variables: { input: { userId: viewer.id, ...input } },
      update: (cache, { data: answer }) => forgetSessions(cache, viewer.id, answer?.revokeSignInSessions.revokedSessionIds ?? []),
    }).catch(() => undefined);
  }

  return (
    <section>
      <h2>Where you're signed in</h2>
      {(error ?? revokeError) && <p role="alert">{(error ?? revokeError)!.message}</p>}
      <ul aria-label="Sign-in sessions">
        {viewer?.signInSessions?.map((session) => (
          <li key={session.id} data-session-id={session.id}>
            {session.current ? <strong>This device</strong> : 'Another device'}
            {' · '}{session.userAgent ?? 'unknown browser'} · signed in {new Date(session.createdAt).toLocaleString()}
            {!session.current && <button type="button" disabled={loading} onClick={() => end({ ids: [session.id] })}>End session</button>}
          </li>
        ))}
      </ul>
      <button type="button" disabled={loading} onClick={() => end({ allButCurrent: true })}>Sign out everywhere else</button>
    </section>
  );
}
