import { Migration } from '@mikro-orm/migrations';

/**
 * Who saved the single sign-on configuration, and who last set each user's email (SPEC section
 * 17: no sequence of API calls lets an admin sign in through single sign-on as the owner or
 * another admin). Single sign-on signs in an owner or admin only through a configuration saved
 * with owner rights or by that very user, and an email links an owner or admin only when it was
 * set with owner rights or by that user. Nobody knows who saved what before this migration: rows
 * that exist get no owner rights and no author, so the owner re-saves the configuration (and
 * owners and admins not yet linked have their email saved by the owner or themselves).
 *
 * A subject link made while its user was a member (`privileged` false) is checked like an email
 * link once that user is an owner or admin: an admin cannot set a member's email to an address of
 * their own, sign in as the member, promote them and keep signing in as that admin. Links that exist
 * keep counting for the users who are owners or admins now.
 */
export class Migration20261126020000_sso_privileged_sign_in extends Migration {
  override name = 'Migration20261126020000_sso_privileged_sign_in';

  override up(): void {
    this.addSql(`alter table sso_configurations
      add column saved_by_user_id varchar(7) null,
      add column saved_with_owner_rights boolean not null default false;`);
    this.addSql(`alter table users
      add column email_set_by_user_id varchar(7) null,
      add column email_set_with_owner_rights boolean not null default false;`);
    this.addSql('alter table sso_subject_links add column privileged boolean not null default false;');
    this.addSql(`update sso_subject_links l set privileged = true from users u where u.id = l.user_id and u.role in ('owner', 'admin');`);
  }

  override down(): void {
    this.addSql('alter table sso_subject_links drop column privileged;');
    this.addSql('alter table users drop column email_set_by_user_id, drop column email_set_with_owner_rights;');
    this.addSql('alter table sso_configurations drop column saved_by_user_id, drop column saved_with_owner_rights;');
  }
}
