import { useSyncExternalStore } from 'react';
import type { AuthSession } from '../auth/session';

/**
 * Shown when the API answered a step-up challenge (managing keys needs a recent sign-in): the user
 * confirms with their password on the sign-in page and comes back to this page.
 */
export function StepUpPrompt({ session }: { session: AuthSession }) {
  const request = useSyncExternalStore(session.subscribe, session.stepUpRequest);
  if (!request) return null;
  return (
    <div className="notice" role="dialog" aria-label="Confirm it's you">
      <p>For your security, managing API keys needs a sign-in from the last {request.maxAge} seconds. Enter your password again to continue.</p>
      <button type="button" onClick={() => void session.confirmSignIn()}>Confirm it's you</button>
    </div>
  );
}
