import { Migration } from '@mikro-orm/migrations';

/**
 * A browser's sign-in session remembers the grants it made (one per app it signed in to), so ending
 * one of those delegations signs out that browser only: the others keep their sessions. Sessions
 * saved before this column existed carry none until their next save.
 */
export class Migration20261128200000_sign_in_session_grants extends Migration {
  override name = 'Migration20261128200000_sign_in_session_grants';

  override up(): void {
    this.addSql("alter table sign_in_sessions add column grant_ids text[] not null default '{}'");
  }

  override down(): void {
    this.addSql('alter table sign_in_sessions drop column grant_ids');
  }
}
