import type { Scope } from '../auth/scopes.js';
/** The sign-in and consent pages: plain HTML forms that work without JavaScript. */

/** Every scope an app may ask for, in the user's words: typed, so a new scope cannot ship undescribed. */
export const SCOPE_DESCRIPTIONS: Record<Scope | 'openid' | 'profile' | 'offline_access', string> = {
  openid: 'Know who you are (your user id)',
  profile: 'See your name, email address and time zone',
  offline_access: 'Stay signed in',
  'users.read': 'See the users of your account, including you',
  'users.write': 'Create, change and delete users, and regenerate calendar keys',
  'oauth_delegations.read': 'See which apps you signed in to',
  'oauth_delegations.write': 'Sign you out of apps',
  'subscribers.read': 'See your notification subscriptions',
  'subscribers.write': 'Subscribe you to notifications and unsubscribe you',
  'audit_records.read': 'See the audit trail: who changed what in your account, and when',
  'credentials.read': 'See your account\'s API keys, apps, provisioning tokens and single sign-on settings',
  'credentials.write': 'Create, rotate, disable and revoke your account\'s API keys, apps, provisioning tokens and single sign-on settings',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}label{display:block;margin:.75rem 0}input{display:block;width:100%;padding:.4rem;margin-top:.25rem}button{padding:.5rem 1rem;margin-right:.5rem}.error{color:#a00}</style>
</head>
<body>
${body}
</body>
</html>`;
}

export function signInPage(options: { action: string; csrf: string; appName: string; email?: string; error?: string; alternative?: { label: string; action: string; passwordAllowed: boolean; passwordForPrivileged?: boolean } }): string {
  const alternative = options.alternative;
  // Email first: the account's identity provider, then (unless it is required) the password form.
  const viaProvider = alternative ? `<form method="post" action="${escapeHtml(alternative.action)}">
<input type="hidden" name="csrf" value="${escapeHtml(options.csrf)}">
<label>Email <input type="email" name="email" autocomplete="username" maxlength="100" value="${escapeHtml(options.email ?? '')}"></label>
<button type="submit">Sign in with ${escapeHtml(alternative.label)}</button>
</form>
` : '';
  // Required single sign-on hides the password form, except for an owner or admin the provider may not sign in (see sign-in-method.ts).
  const passwordHeading = !alternative ? '' : alternative.passwordAllowed ? '<p>or with your password:</p>\n' : '<p><small>Owner or administrator? Sign in with your password:</small></p>\n';
  const withPassword = !alternative || alternative.passwordAllowed || alternative.passwordForPrivileged ? `${passwordHeading}<form method="post" action="${escapeHtml(options.action)}">
<input type="hidden" name="csrf" value="${escapeHtml(options.csrf)}">
<label>Email <input type="email" name="email" autocomplete="username" required maxlength="100" value="${escapeHtml(options.email ?? '')}"></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required maxlength="256"></label>
<button type="submit">Sign in</button>
</form>` : '';
  return layout(`Sign in to ${options.appName}`, `<h1>Sign in</h1>
<p>to continue to <strong>${escapeHtml(options.appName)}</strong></p>
${options.error ? `<p class="error" role="alert">${escapeHtml(options.error)}</p>` : ''}
${viaProvider}${withPassword}`);
}

/**
 * A consent app's page: its name, the host the answer is sent to, who registered it (the account's
 * operator when no user did), and what it will be able to do.
 */
export function consentPage(options: { action: string; csrf: string; appName: string; scopes: readonly string[]; redirectHost: string; registeredBy?: string }): string {
  const items = options.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code>: ${escapeHtml(SCOPE_DESCRIPTIONS[scope as keyof typeof SCOPE_DESCRIPTIONS] ?? scope)}</li>`).join('\n');
  return layout(`Allow ${options.appName}?`, `<h1>Allow ${escapeHtml(options.appName)}?</h1>
<p><strong>${escapeHtml(options.appName)}</strong> is asking to act for you. It will be able to:</p>
<ul>
${items}
</ul>
<p>If you allow it, you will be sent to <strong>${escapeHtml(options.redirectHost)}</strong>, which will hold this access.</p>
<p>This app was registered in your account by ${options.registeredBy ? `<strong>${escapeHtml(options.registeredBy)}</strong>` : 'the account\'s operator'}. Allow it only if you expected it.</p>
<form method="post" action="${escapeHtml(options.action)}">
<input type="hidden" name="csrf" value="${escapeHtml(options.csrf)}">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`);
}

export function problemPage(title: string, message: string): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>`);
}

/** A public client's authorization with an existing sign-in session: the user confirms it is theirs. */
export function continuePage(options: { action: string; csrf: string; appName: string; email: string }): string {
  return layout(`Continue to ${options.appName}?`, `<h1>Continue to ${escapeHtml(options.appName)}?</h1>
<p>You are signed in as <strong>${escapeHtml(options.email)}</strong>. Continue only if you just opened ${escapeHtml(options.appName)} yourself.</p>
<form method="post" action="${escapeHtml(options.action)}">
<input type="hidden" name="csrf" value="${escapeHtml(options.csrf)}">
<button type="submit" name="decision" value="approve">Continue</button>
<button type="submit" name="decision" value="deny">Cancel</button>
</form>`);
}
