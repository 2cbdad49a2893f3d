import type { ClusterDirectory, Provisioner, Repositories } from '@platform/domain';

/** What a management-API handler may use; opened once per request. */
export interface ApiScope {
  /** Repositories over this request's own EntityManager fork. */
  repos: Repositories;
  clusters: ClusterDirectory;
  provisioner: Provisioner;
  /** The public {api_url}, reported as a database's apiHost. */
  publicApiUrl: string;
  controlPlaneReady(): Promise<boolean>;
}
