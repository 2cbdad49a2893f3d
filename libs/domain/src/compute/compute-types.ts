import { ValidationError } from '../errors.js';

/**
 * A size of dedicated compute: what `GET W/compute-types` lists and what an instance runs as.
 * `memoryMiB` is the memory the server is tuned for; `settings` are the PostgreSQL settings that
 * follow from it (see serverSettings).
 */
export interface ComputeType {
  id: string;
  computeSize: string;
  /** As shown: "1 GiB". */
  memory: string;
  hourlyCost: number;
  memoryMiB: number;
  maxConnections: number;
}

export const COMPUTE_TYPE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** A compute type from its defining figures; the memory is shown in GiB when whole, else MiB. */
export function computeType(input: Omit<ComputeType, 'memory'>): ComputeType {
  const { id, computeSize, memoryMiB, hourlyCost, maxConnections } = input;
  if (!COMPUTE_TYPE_ID.test(id) || !COMPUTE_TYPE_ID.test(computeSize)) {
    throw new Error(`compute type ids and sizes are 1-64 letters, digits, _ or -: '${id}', '${computeSize}'`);
  }
  if (!Number.isInteger(memoryMiB) || memoryMiB < 128 || memoryMiB > 1_048_576) throw new Error(`compute type ${id}: memoryMiB must be a whole number from 128 to 1048576`);
  if (!Number.isInteger(maxConnections) || maxConnections < 10 || maxConnections > 10_000) throw new Error(`compute type ${id}: maxConnections must be from 10 to 10000`);
  if (!Number.isFinite(hourlyCost) || hourlyCost < 0) throw new Error(`compute type ${id}: hourlyCost must be a number of at least 0`);
  const memory = memoryMiB % 1024 === 0 ? `${memoryMiB / 1024} GiB` : `${memoryMiB} MiB`;
  return { id, computeSize, memory, hourlyCost, memoryMiB, maxConnections };
}

/** The catalog when COMPUTE_TYPES does not replace it. */
export const DEFAULT_COMPUTE_TYPES: readonly ComputeType[] = [
  computeType({ id: 'ct_small', computeSize: 'small', memoryMiB: 1024, hourlyCost: 0.06, maxConnections: 100 }),
  computeType({ id: 'ct_medium', computeSize: 'medium', memoryMiB: 2048, hourlyCost: 0.12, maxConnections: 200 }),
  computeType({ id: 'ct_large', computeSize: 'large', memoryMiB: 4096, hourlyCost: 0.24, maxConnections: 400 }),
];

/** A catalog must name each type once, by id and by size: `instanceSize` may be either. */
export function assertCatalog(types: readonly ComputeType[]): void {
  if (types.length === 0) throw new Error('the compute catalog is empty');
  const names = new Set<string>();
  for (const type of types) {
    for (const name of new Set([type.id, type.computeSize])) {
      if (names.has(name)) throw new Error(`compute catalog: '${name}' names two types`);
      names.add(name);
    }
  }
}

/** The type an `instanceSize` names, by computeSize or by id; 400 unknown_instance_size otherwise. */
export function resolveComputeType(catalog: readonly ComputeType[], instanceSize: string): ComputeType {
  const type = catalog.find((candidate) => candidate.computeSize === instanceSize || candidate.id === instanceSize);
  if (!type) {
    const known = catalog.map((candidate) => `${candidate.computeSize} (${candidate.id})`).join(', ');
    throw new ValidationError('unknown_instance_size', `No compute type is named '${instanceSize}'; known: ${known}`);
  }
  return type;
}

/**
 * The PostgreSQL settings of a server of this type, the usual rules of thumb for a dedicated
 * server: shared_buffers a quarter of the memory, effective_cache_size three quarters,
 * maintenance_work_mem a sixteenth (at most 2 GiB), and work_mem what a quarter of the memory
 * gives each connection (at least 4 MiB).
 */
export function serverSettings(type: Pick<ComputeType, 'memoryMiB' | 'maxConnections'>): Record<string, string> {
  const mib = type.memoryMiB;
  return {
    shared_buffers: `${Math.floor(mib / 4)}MB`,
    effective_cache_size: `${Math.floor((mib * 3) / 4)}MB`,
    maintenance_work_mem: `${Math.min(2048, Math.max(16, Math.floor(mib / 16)))}MB`,
    work_mem: `${Math.max(4096, Math.floor((mib * 1024) / 4 / type.maxConnections))}kB`,
    max_connections: String(type.maxConnections),
  };
}
