import { Migration } from '@mikro-orm/migrations';

/**
 * Single sign-on bound to the browser and to the person (SPEC section 17):
 * - a round trip remembers the digest of the random cookie set in the browser that began it
 *   (the provider's answer is refused without it), and a SAML answer, posted cross-site by the
 *   identity provider, waits on the round trip (sealed) until that browser comes back for it;
 * - a user is linked to the provider's stable subject on the first single sign-on and found by
 *   that link from then on. No user is linked by this migration: each links at their next sign-in.
 */
export class Migration20261125010000_sso_browser_binding extends Migration {
  override name = 'Migration20261125010000_sso_browser_binding';

  override up(): void {
    this.addSql(`alter table sso_round_trips
      add column browser_digest varchar(64) null,
      add column answered_at timestamptz null,
      add column saml_identity_sealed text null;`);
    this.addSql(`create table sso_subject_links (
      account_id varchar(7) not null references accounts (id),
      issuer varchar(2048) not null,
      subject varchar(1024) not null,
      user_id varchar(7) not null references users (id),
      created_at timestamptz not null default now(),
      primary key (account_id, issuer, subject)
    );`);
    this.addSql('create unique index sso_subject_links_user_idx on sso_subject_links (user_id);');
  }

  override down(): void {
    this.addSql('drop table sso_subject_links;');
    this.addSql('alter table sso_round_trips drop column browser_digest, drop column answered_at, drop column saml_identity_sealed;');
  }
}
