import type { Request, Response } from 'express';
import { digestSecret, safeEqual } from '../auth/secrets.js';
import type { Database } from '../db/database.js';
import { Sealer } from '../oauth-server/sealing.js';
import type { SsoProtocol } from './sso-configuration.entity.js';
import type { AssertedIdentity } from './sso.matching.js';
import { EXPIRED, Refusal, STRANGER } from './sso.refusals.js';

/** A round trip to the provider must come back within this; then its state is refused. */
export const ROUND_TRIP_SECONDS = 10 * 60;

/**
 * The cookie that binds a round trip to the browser that began it: random, HttpOnly, SameSite=Lax
 * (sent on the provider's top-level redirect back, never on another site's request), only its
 * digest stored with the round trip. A provider link carried to another browser arrives without it.
 */
const BROWSER_COOKIE = 'sso_browser';
const BROWSER_COOKIE_PATH = '/sso';

function browserCookieOf(req: Request): string | undefined {
  for (const pair of (req.headers.cookie ?? '').split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === BROWSER_COOKIE) return pair.slice(separator + 1).trim();
  }
  return undefined;
}

/** Gives the browser that begins a round trip the cookie whose digest the round trip keeps. */
export function setBrowserCookie(res: Response, browser: string, secure: boolean): void {
  res.cookie(BROWSER_COOKIE, browser, { httpOnly: true, sameSite: 'lax', secure, path: BROWSER_COOKIE_PATH, maxAge: ROUND_TRIP_SECONDS * 1000 });
}

/** A finished round trip needs its cookie no more. */
export function clearBrowserCookie(res: Response): void {
  res.clearCookie(BROWSER_COOKIE, { path: BROWSER_COOKIE_PATH });
}

/** A round trip as stored in `sso_round_trips`: secrets only as digests or sealed. */
export interface RoundTrip {
  state_digest: string;
  account_id: string;
  browser_digest: string | null;
  saml_identity_sealed: string | null;
  interaction_uid: string;
  oidc_nonce: string | null;
  oidc_code_verifier_sealed: string | null;
  saml_request_id: string | null;
}

/** A round trip about to begin: its state and browser cookie in plain (stored as digests), and what checks the answer. */
export interface NewRoundTrip {
  state: string;
  browser: string;
  accountId: string;
  interactionUid: string;
  protocol: SsoProtocol;
  oidc?: { nonce: string; codeVerifier: string };
  samlRequestId?: string;
}

const TRIP_COLUMNS = 'state_digest, account_id, browser_digest, interaction_uid, oidc_nonce, oidc_code_verifier_sealed, saml_request_id, saml_identity_sealed';

function usableState(state: unknown): state is string {
  return typeof state === 'string' && state.length > 0 && state.length <= 200;
}

/**
 * The round trips in flight (`sso_round_trips`): each bound to one interaction and to the browser
 * that began it, usable once and for `ROUND_TRIP_SECONDS`. The PKCE verifier and a SAML answer's
 * identity are kept sealed, each with a key of its own.
 */
export class RoundTripStore {
  private readonly verifierSealer: Sealer;
  private readonly identitySealer: Sealer;

  constructor(private readonly database: Database, serverSecret: Buffer) {
    this.verifierSealer = new Sealer(serverSecret, 'sso-round-trips');
    this.identitySealer = new Sealer(serverSecret, 'sso-answers');
  }

  /** Stores a new round trip (and drops the expired ones, so abandoned round trips do not pile up). */
  async create(trip: NewRoundTrip): Promise<void> {
    const em = this.database.em();
    const codeVerifierSealed = trip.oidc ? this.verifierSealer.seal(trip.oidc.codeVerifier) : null;
    await this.database.transactions.run(em, async (tx) => {
      await tx.execute('delete from sso_round_trips where expires_at < now()');
      await tx.execute(
        `insert into sso_round_trips (state_digest, browser_digest, account_id, interaction_uid, protocol, oidc_nonce, oidc_code_verifier_sealed, saml_request_id, expires_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?))`,
        [digestSecret(trip.state), digestSecret(trip.browser), trip.accountId, trip.interactionUid, trip.protocol, trip.oidc?.nonce ?? null, codeVerifierSealed, trip.samlRequestId ?? null, ROUND_TRIP_SECONDS],
      );
    }, 'sso.begin');
  }

  /**
   * Marks the round trip used and returns it, or refuses: unknown, expired and replayed look alike.
   * It is used up even when the browser is not the one that began it: an answer that reached a
   * stranger's browser first can then not be finished by anyone (a forwarded link included).
   */
  async take(req: Request, state: unknown, protocol: 'oidc' | 'saml'): Promise<RoundTrip> {
    if (!usableState(state)) throw new Refusal(EXPIRED, 400, 'no state');
    const em = this.database.em();
    const [trip] = await this.database.transactions.run(em, (tx) => tx.execute<RoundTrip[]>(
      `update sso_round_trips set used_at = now()
        where state_digest = ? and protocol = ? and used_at is null and expires_at > now()
          and (protocol <> 'saml' or answered_at is not null)
        returning ${TRIP_COLUMNS}`,
      [digestSecret(state), protocol],
    ), 'sso.take-round-trip');
    if (!trip) throw new Refusal(EXPIRED, 400, 'unknown, expired or already used state');
    const cookie = browserCookieOf(req);
    if (!trip.browser_digest || !cookie || !safeEqual(Buffer.from(digestSecret(cookie)), Buffer.from(trip.browser_digest))) {
      throw Object.assign(new Refusal(STRANGER, 403, 'the answer came back to another browser than the one that began the round trip'), { trip });
    }
    return trip;
  }

  /** The SAML answer, posted once per round trip: claims it (a replay finds nothing) and returns it. */
  async claimSamlAnswer(state: unknown): Promise<RoundTrip> {
    if (!usableState(state)) throw new Refusal(EXPIRED, 400, 'no RelayState');
    const em = this.database.em();
    const [trip] = await this.database.transactions.run(em, (tx) => tx.execute<RoundTrip[]>(
      `update sso_round_trips set answered_at = now()
        where state_digest = ? and protocol = 'saml' and answered_at is null and used_at is null and expires_at > now()
        returning ${TRIP_COLUMNS}`,
      [digestSecret(state)],
    ), 'sso.claim-saml-answer');
    if (!trip) throw new Refusal(EXPIRED, 400, 'unknown, expired or already answered RelayState');
    return trip;
  }

  /** Keeps the identity a verified SAML answer asserted until the browser that began the round trip continues it. */
  async keepSamlIdentity(trip: RoundTrip, identity: AssertedIdentity): Promise<void> {
    await this.database.em().execute('update sso_round_trips set saml_identity_sealed = ? where state_digest = ?', [this.identitySealer.seal(JSON.stringify(identity)), trip.state_digest]);
  }

  /** The identity kept by `keepSamlIdentity`, if the answer was accepted. */
  samlIdentityOf(trip: RoundTrip): AssertedIdentity | undefined {
    return trip.saml_identity_sealed ? JSON.parse(this.identitySealer.unseal(trip.saml_identity_sealed)) as AssertedIdentity : undefined;
  }

  /** The PKCE verifier the round trip was begun with (sealed in `oidc_code_verifier_sealed`). */
  unsealCodeVerifier(sealed: string): string {
    return this.verifierSealer.unseal(sealed);
  }
}
