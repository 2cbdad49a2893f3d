import type { ComputeHealth } from './compute-instances.js';

/** The longest reason kept: the server's own line, cut where a developer stops reading. */
export const HEALTH_REASON_MAX_LENGTH = 1000;

/** What supervision found for a READY instance's server on one pass. */
export type ServerObservation =
  /** It runs (in this process, or it answers on its port). */
  | { kind: 'running' }
  /** It had ended and was started again; `exitCause`, in the server's words, when its log named one. */
  | { kind: 'restarted'; exitCause: string | null }
  /** It is not running and could not be started: why, in the server's words. */
  | { kind: 'cannot-start'; cause: string };

/**
 * The health to record after an observation, or null when the recorded one still says it (nothing
 * to write). A server that came back says what stopped it, so a blip is not invisible.
 */
export function healthAfter(recorded: ComputeHealth | null, seen: ServerObservation): Omit<ComputeHealth, 'since'> | null {
  const next: Omit<ComputeHealth, 'since'> =
    seen.kind === 'running'
      ? { status: 'ok', reason: recorded?.status === 'ok' ? recorded.reason : null }
      : seen.kind === 'restarted'
        ? { status: 'ok', reason: `started again after it stopped${seen.exitCause ? `: ${seen.exitCause}` : ''}` }
        : { status: 'down', reason: seen.cause };
  const reason = next.reason === null ? null : next.reason.slice(0, HEALTH_REASON_MAX_LENGTH);
  if (recorded && recorded.status === next.status && recorded.reason === reason) return null;
  return { status: next.status, reason };
}
