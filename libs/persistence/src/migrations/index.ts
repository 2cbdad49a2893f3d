import { Migration20261122000000_control_plane } from './Migration20261122000000_control_plane.js';

/** Every control-plane migration, in order. Listed explicitly so bundled builds find them. */
export const migrationsList = [
  { name: 'Migration20261122000000_control_plane', class: Migration20261122000000_control_plane },
];
