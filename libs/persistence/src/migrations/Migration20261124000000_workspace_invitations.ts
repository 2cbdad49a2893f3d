import { Migration } from '@mikro-orm/migrations';

/**
 * Workspace membership by invitation: an owner invites an email, and the developer with that email
 * joins only by accepting. One pending invitation per workspace and email (case-insensitively, as
 * developer accounts are unique); inviting again replaces it. Accepted, declined and revoked
 * invitations are deleted, so a row is always a pending (or expired) invitation.
 */
export class Migration20261124000000_workspace_invitations extends Migration {
  override up(): void {
    this.addSql(`
      create table workspace_invitations (
        id uuid primary key,
        workspace_id uuid not null references workspaces (id) on delete cascade,
        email varchar(320) not null,
        role varchar(255) not null check (role in ('owner', 'member')),
        invited_by uuid references developers (id) on delete set null,
        created timestamptz not null,
        expires timestamptz not null
      )`);
    this.addSql(`create unique index workspace_invitations_workspace_email on workspace_invitations (workspace_id, lower(email))`);
    // The invitee's own list is read by email across workspaces.
    this.addSql(`create index workspace_invitations_email on workspace_invitations (lower(email))`);
  }

  override down(): void {
    this.addSql(`drop table if exists workspace_invitations`);
  }
}
