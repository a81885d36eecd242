import { Migration } from '@mikro-orm/migrations';

/**
 * A provisioning token acts with no more rights than whoever created it: one created with owner
 * rights (the owner's own credential, or the operator's command line) may change the emails of
 * admins and the owner, as the identity provider must; one an admin or an account key created may
 * not. Tokens created before this column existed are of the second kind until the owner issues a new one.
 */
export class Migration20261128210000_provisioning_token_rank extends Migration {
  override name = 'Migration20261128210000_provisioning_token_rank';

  override up(): void {
    this.addSql('alter table provisioning_tokens add column created_with_owner_rights boolean not null default false');
  }

  override down(): void {
    this.addSql('alter table provisioning_tokens drop column created_with_owner_rights');
  }
}
