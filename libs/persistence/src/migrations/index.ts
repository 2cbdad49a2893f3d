import { Migration20261122000000_control_plane } from './Migration20261122000000_control_plane.js';
import { Migration20261122010000_oauth_clients } from './Migration20261122010000_oauth_clients.js';
import { Migration20261122020000_grants } from './Migration20261122020000_grants.js';
import { Migration20261122030000_client_notifications } from './Migration20261122030000_client_notifications.js';
import { Migration20261122040000_credentials } from './Migration20261122040000_credentials.js';
import { Migration20261122050000_private_control_plane } from './Migration20261122050000_private_control_plane.js';
import { Migration20261122060000_sign_in_failures } from './Migration20261122060000_sign_in_failures.js';
import { Migration20261122070000_query_minutes } from './Migration20261122070000_query_minutes.js';
import { Migration20261122080000_observer_minutes } from './Migration20261122080000_observer_minutes.js';
import { Migration20261122090000_insight_rollups } from './Migration20261122090000_insight_rollups.js';
import { Migration20261122100000_sso } from './Migration20261122100000_sso.js';
import { Migration20261122110000_nilecli_client } from './Migration20261122110000_nilecli_client.js';
import { Migration20261122120000_sso_login_limits } from './Migration20261122120000_sso_login_limits.js';
import { Migration20261123000000_compute } from './Migration20261123000000_compute.js';
import { Migration20261123010000_instance_routing } from './Migration20261123010000_instance_routing.js';
import { Migration20261123020000_list_order } from './Migration20261123020000_list_order.js';
import { Migration20261124000000_workspace_invitations } from './Migration20261124000000_workspace_invitations.js';
import { Migration20261124010000_sealed_signing_keys } from './Migration20261124010000_sealed_signing_keys.js';
import { Migration20261126010000_compute_health } from './Migration20261126010000_compute_health.js';
import { Migration20261127020000_restorable_deletes } from './Migration20261127020000_restorable_deletes.js';
import { Migration20261127030000_database_sources } from './Migration20261127030000_database_sources.js';
import { Migration20261128010000_served_since } from './Migration20261128010000_served_since.js';

/** Every control-plane migration, in order. Listed explicitly so bundled builds find them. */
export const migrationsList = [
  { name: 'Migration20261122000000_control_plane', class: Migration20261122000000_control_plane },
  { name: 'Migration20261122010000_oauth_clients', class: Migration20261122010000_oauth_clients },
  { name: 'Migration20261122020000_grants', class: Migration20261122020000_grants },
  { name: 'Migration20261122030000_client_notifications', class: Migration20261122030000_client_notifications },
  { name: 'Migration20261122040000_credentials', class: Migration20261122040000_credentials },
  { name: 'Migration20261122050000_private_control_plane', class: Migration20261122050000_private_control_plane },
  { name: 'Migration20261122060000_sign_in_failures', class: Migration20261122060000_sign_in_failures },
  { name: 'Migration20261122070000_query_minutes', class: Migration20261122070000_query_minutes },
  { name: 'Migration20261122080000_observer_minutes', class: Migration20261122080000_observer_minutes },
  { name: 'Migration20261122090000_insight_rollups', class: Migration20261122090000_insight_rollups },
  { name: 'Migration20261122100000_sso', class: Migration20261122100000_sso },
  { name: 'Migration20261122110000_nilecli_client', class: Migration20261122110000_nilecli_client },
  { name: 'Migration20261122120000_sso_login_limits', class: Migration20261122120000_sso_login_limits },
  { name: 'Migration20261123000000_compute', class: Migration20261123000000_compute },
  { name: 'Migration20261123010000_instance_routing', class: Migration20261123010000_instance_routing },
  { name: 'Migration20261123020000_list_order', class: Migration20261123020000_list_order },
  { name: 'Migration20261124000000_workspace_invitations', class: Migration20261124000000_workspace_invitations },
  { name: 'Migration20261124010000_sealed_signing_keys', class: Migration20261124010000_sealed_signing_keys },
  { name: 'Migration20261126010000_compute_health', class: Migration20261126010000_compute_health },
  { name: 'Migration20261127020000_restorable_deletes', class: Migration20261127020000_restorable_deletes },
  { name: 'Migration20261127030000_database_sources', class: Migration20261127030000_database_sources },
  { name: 'Migration20261128010000_served_since', class: Migration20261128010000_served_since },
];
