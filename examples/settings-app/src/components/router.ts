import { useEffect, useState } from 'react';

export const PAGES = [
  { path: '/users', title: 'Users' },
  { path: '/sessions', title: 'Sessions' },
  { path: '/api-keys', title: 'API keys' },
  { path: '/audit', title: 'Audit' },
] as const;

/** The page is the path (so a sign-in can come back to it); links change it without a reload. */
export function useCurrentPath(): [string, (path: string) => void] {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const onPop = () => setPath(window.location.pathname);
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);
  const navigate = (next: string) => {
    window.history.pushState(null, '', next);
    setPath(next);
  };
  return [PAGES.some((page) => page.path === path) ? path : PAGES[0].path, navigate];
}
