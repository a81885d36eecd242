import { createRoot } from 'react-dom/client';
import { ApolloProvider } from '@apollo/client/react';
import { App, SignedOut } from './App';
import { createApolloClient } from './apollo/client';
import { AuthSession } from './auth/session';
import { SignInFlow } from './auth/sign-in';
import { loadConfig } from './config';

/**
 * Start: read the config, discover the authorization server, and, back from the sign-in page on
 * /callback, redeem the code and return to the page the sign-in started from.
 */
async function start() {
  const config = await loadConfig();
  const session = new AuthSession(await SignInFlow.discover(config));
  let notice: string | undefined;
  if (window.location.pathname === '/callback') {
    const { tokens, returnTo } = await session.flow.finish(new URL(window.location.href));
    const confirmed = session.signedIn;
    session.store(tokens);
    window.history.replaceState(null, '', returnTo);
    notice = confirmed ? 'Sign-in confirmed. You can manage your API keys now.' : undefined;
  }
  const root = createRoot(document.getElementById('root')!);
  if (!session.signedIn) {
    root.render(<SignedOut session={session} />);
    return;
  }
  root.render(
    <ApolloProvider client={createApolloClient(config.apiUrl, session)}>
      <App session={session} notice={notice} />
    </ApolloProvider>,
  );
}

start().catch((error: unknown) => {
  document.getElementById('root')!.textContent = `The app could not start: ${error instanceof Error ? error.message : String(error)}`;
});
