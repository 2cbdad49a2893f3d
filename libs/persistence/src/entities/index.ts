import { CredentialEntity } from './credential.entity.js';
import { DatabaseEntity } from './database.entity.js';
import { DeveloperEntity } from './developer.entity.js';
import { OAuthClientEntity } from './oauth-client.entity.js';
import { SigningKeyEntity } from './signing-key.entity.js';
import { WorkspaceEntity, WorkspaceMemberEntity } from './workspace.entity.js';

export { CredentialEntity, DatabaseEntity, DeveloperEntity, OAuthClientEntity, SigningKeyEntity, WorkspaceEntity, WorkspaceMemberEntity };
export const entities = [DeveloperEntity, WorkspaceEntity, WorkspaceMemberEntity, DatabaseEntity, SigningKeyEntity, OAuthClientEntity, CredentialEntity];
