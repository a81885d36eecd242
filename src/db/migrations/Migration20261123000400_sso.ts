import { Migration } from '@mikro-orm/migrations';

/**
 * Single sign-on (src/sso): one identity provider per account (OIDC or SAML 2.0; the OIDC client
 * secret sealed), and the round trips in flight to a provider, each bound to one sign-in
 * interaction and usable once (keyed by a digest of the state / RelayState the browser carries).
 */
export class Migration20261123000400_sso extends Migration {
  override name = 'Migration20261123000400_sso';

  override up(): void {
    this.addSql(`create table sso_configurations (
      account_id varchar(7) primary key references accounts (id),
      protocol varchar(8) not null check (protocol in ('oidc','saml')),
      display_name varchar(100) not null,
      require_sso boolean not null default false,
      jit boolean not null default false,
      oidc_issuer varchar(2048) null,
      oidc_client_id varchar(255) null,
      oidc_client_secret_sealed text null,
      saml_idp_entity_id varchar(2048) null,
      saml_sso_url varchar(2048) null,
      saml_idp_certificates jsonb null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      constraint sso_configurations_oidc_complete check (protocol <> 'oidc' or (oidc_issuer is not null and oidc_client_id is not null)),
      constraint sso_configurations_saml_complete check (protocol <> 'saml' or (saml_idp_entity_id is not null and saml_sso_url is not null and saml_idp_certificates is not null))
    );`);
    this.addSql(`create table sso_round_trips (
      state_digest varchar(64) primary key,
      account_id varchar(7) not null references accounts (id),
      interaction_uid varchar(64) not null,
      protocol varchar(8) not null check (protocol in ('oidc','saml')),
      oidc_nonce varchar(64) null,
      oidc_code_verifier_sealed text null,
      saml_request_id varchar(128) null,
      expires_at timestamptz not null,
      used_at timestamptz null
    );`);
    this.addSql('create index sso_round_trips_expires_idx on sso_round_trips (expires_at);');
  }

  override down(): void {
    this.addSql('drop table sso_round_trips;');
    this.addSql('drop table sso_configurations;');
  }
}
