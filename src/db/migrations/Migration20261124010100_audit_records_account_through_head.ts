import { Migration } from '@mikro-orm/migrations';

export class Migration20261124010100_audit_records_account_through_head extends Migration {
  override name = 'Migration20261124010100_audit_records_account_through_head';

  override up(): void {
    // The foreign key checked every inserted record against `accounts`, one lookup and one
    // key-share lock per row (0.7 ms of a 100-record batch). Records are inserted only by
    // `audit_append_records`, after it has locked (or created) the account's `audit_chain_heads`
    // row, whose own foreign key keeps the account: an account with records always has a head,
    // and nothing deletes heads. The check moves from every record to the chain's one row.
    this.addSql('alter table audit_records drop constraint audit_records_account_id_fkey;');
  }

  override down(): void {
    this.addSql('alter table audit_records add constraint audit_records_account_id_fkey foreign key (account_id) references accounts (id);');
  }
}
