export const REGIONS = ['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1', 'AZURE_EASTUS'] as const;
export type Region = (typeof REGIONS)[number];

export function isRegion(value: string): value is Region {
  return (REGIONS as readonly string[]).includes(value);
}
