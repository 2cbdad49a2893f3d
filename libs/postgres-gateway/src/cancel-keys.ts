// Cancel requests arrive on a new connection, perhaps at another gateway than the one that holds
// the session, with only the BackendKeyData the client was given. So that any gateway can route
// one without shared state, the key it hands out names the backend's cluster: the process id's
// upper bits carry the cluster's index, the lower 22 bits the backend's own process id (Linux's
// pid_max is at most 2^22), and the secret is the backend's own.

const PID_BITS = 22;
const PID_MASK = (1 << PID_BITS) - 1;
/** Indexes stay below 2^9, so the process id stays a positive Int32. */
export const MAX_CLUSTER_INDEX = (1 << (31 - PID_BITS)) - 1;

export function clientProcessId(clusterIndex: number, backendPid: number): number {
  if (!Number.isInteger(clusterIndex) || clusterIndex < 0 || clusterIndex > MAX_CLUSTER_INDEX) throw new Error(`cluster index ${clusterIndex} out of range`);
  if (backendPid < 0 || backendPid > PID_MASK) throw new Error(`backend process id ${backendPid} does not fit in ${PID_BITS} bits`);
  return clusterIndex * (PID_MASK + 1) + backendPid;
}

export function backendOfProcessId(processId: number): { clusterIndex: number; backendPid: number } {
  return { clusterIndex: processId >>> PID_BITS, backendPid: processId & PID_MASK };
}
