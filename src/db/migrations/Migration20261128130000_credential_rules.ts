import { Migration } from '@mikro-orm/migrations';

/**
 * A rolled key lives out its grace period marked: it still works for what it did, but manages no
 * credential (creates, rolls or revokes none) and cannot be rolled again. Keys rolled before this
 * column existed carry no mark; their grace periods are at most a week and end on their own.
 *
 * An app remembers who registered it: its consent page names them to every user it asks. Apps
 * registered before carry none, and their page says so.
 */
export class Migration20261128130000_credential_rules extends Migration {
  override name = 'Migration20261128130000_credential_rules';

  override up(): void {
    this.addSql('alter table api_keys add column superseded_at timestamptz null');
    this.addSql('alter table oauth_apps add column registered_by_user_id varchar(7) null');
  }

  override down(): void {
    this.addSql('alter table api_keys drop column superseded_at');
    this.addSql('alter table oauth_apps drop column registered_by_user_id');
  }
}
