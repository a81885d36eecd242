import { useQuery } from '@apollo/client/react';
import { VIEWER } from './apollo/operations';
import type { AuthSession } from './auth/session';
import { LiveActivityProvider } from './components/LiveActivity';
import { PAGES, useCurrentPath } from './components/router';
import { StepUpPrompt } from './components/StepUpPrompt';
import { ApiKeysPage } from './pages/ApiKeysPage';
import { AuditPage } from './pages/AuditPage';
import { SessionsPage } from './pages/SessionsPage';
import { UsersPage } from './pages/UsersPage';

const PAGE_COMPONENTS: Record<string, () => JSX.Element> = {
  '/users': UsersPage,
  '/sessions': SessionsPage,
  '/api-keys': ApiKeysPage,
  '/audit': AuditPage,
};

export function App({ session, notice }: { session: AuthSession; notice?: string }) {
  const [path, navigate] = useCurrentPath();
  const { data } = useQuery(VIEWER);
  const Page = PAGE_COMPONENTS[path]!;
  return (
    <LiveActivityProvider>
      <header>
        <strong>Account settings</strong>
        <nav>
          {PAGES.map((page) => (
            <a key={page.path} href={page.path} aria-current={page.path === path ? 'page' : undefined}
              onClick={(event) => { event.preventDefault(); navigate(page.path); }}>{page.title}</a>
          ))}
        </nav>
        <span data-testid="viewer">{data ? `Signed in as ${data.viewer.name}` : ''}</span>
      </header>
      <main>
        {notice && <p className="notice" role="status">{notice}</p>}
        <StepUpPrompt session={session} />
        <Page />
      </main>
    </LiveActivityProvider>
  );
}

export function SignedOut({ session }: { session: AuthSession }) {
  return (
    <main>
      <h1>Account settings</h1>
      <button type="button" onClick={() => void session.flow.begin(window.location.pathname)}>Sign in</button>
    </main>
  );
}
