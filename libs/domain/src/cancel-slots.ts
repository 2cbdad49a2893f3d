/**
 * Cancel slots: the number a gateway writes into the cancel keys it hands out to clients of
 * protocol 3.2, so that a cancel request (which arrives on a new connection, perhaps at another
 * gateway) finds its server again. Regions' clusters have the slots below FIRST (their regionId);
 * each live compute instance takes one of the rest. The gateway's keys have room for 65535; the
 * instances' slots stop at 511.
 */
export const INSTANCE_CANCEL_SLOTS = { first: 16, last: 511 } as const;

/** Whether a cancel slot belongs to a compute instance (rather than a region's cluster). */
export function isInstanceCancelSlot(slot: number): boolean {
  return slot >= INSTANCE_CANCEL_SLOTS.first && slot <= INSTANCE_CANCEL_SLOTS.last;
}
