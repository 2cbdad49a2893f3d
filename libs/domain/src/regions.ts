export const REGIONS = ['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1', 'AZURE_EASTUS'] as const;
export type Region = (typeof REGIONS)[number];

export function isRegion(value: string): value is Region {
  return (REGIONS as readonly string[]).includes(value);
}

/**
 * A region's number: its position in REGIONS, counted from 1 (the SPEC's `regionId`, and the
 * cluster index in the gateway's cancel keys). New regions are added at the end, so a number
 * never changes meaning.
 */
export function regionId(region: Region): number {
  return REGIONS.indexOf(region) + 1;
}
