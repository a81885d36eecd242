import { Migration } from '@mikro-orm/migrations';

/**
 * Apps managed through the API (SPEC sections 18 and 20): an app can be disabled (its tokens are
 * refused and its flows fail until it is enabled again), its client secret rotated with the old
 * one kept for a grace period (sealed like the current one), and a browser app registers as `spa`.
 */
export class Migration20261125030000_app_credentials extends Migration {
  override name = 'Migration20261125030000_app_credentials';

  override up(): void {
    this.addSql('alter table oauth_apps add column disabled_at timestamptz(3) null;');
    this.addSql('alter table oauth_apps add column previous_client_secret_sealed text null;');
    this.addSql('alter table oauth_apps add column previous_secret_expires_at timestamptz(3) null;');
    this.addSql('alter table oauth_apps drop constraint oauth_apps_kind_check;');
    this.addSql(`alter table oauth_apps add constraint oauth_apps_kind_check check (kind in ('mobile','web','integration','third_party','spa'));`);
  }

  override down(): void {
    this.addSql('alter table oauth_apps drop constraint oauth_apps_kind_check;');
    this.addSql(`alter table oauth_apps add constraint oauth_apps_kind_check check (kind in ('mobile','web','integration','third_party'));`);
    this.addSql('alter table oauth_apps drop column previous_secret_expires_at;');
    this.addSql('alter table oauth_apps drop column previous_client_secret_sealed;');
    this.addSql('alter table oauth_apps drop column disabled_at;');
  }
}
