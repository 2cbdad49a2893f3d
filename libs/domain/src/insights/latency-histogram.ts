/**
 * Query latencies as counts in fixed log-linear buckets of microseconds: exact below 64 µs, then 64
 * buckets per power of two, so any value is known within 1/64 (1.6%). The layout is the same
 * everywhere, so histograms of any gateway and any minute merge by adding counts per bucket (in
 * SQL too), and a percentile of the merged counts is exact to the bucket: never an average of
 * percentiles.
 */
const SUB_BUCKETS = 64;
const SUB_BITS = 6;
/** Values are capped here (about 3 days in microseconds); none is lost, the largest share a bucket. */
const MAX_MICROS = 2 ** 38 - 1;

/** The bucket of a latency in microseconds. */
export function latencyBucket(micros: number): number {
  const value = Math.min(MAX_MICROS, Math.max(0, Math.floor(micros)));
  if (value < SUB_BUCKETS) return value;
  const exponent = Math.floor(Math.log2(value));
  const sub = Math.floor(value / 2 ** (exponent - SUB_BITS)) - SUB_BUCKETS;
  return SUB_BUCKETS + (exponent - SUB_BITS) * SUB_BUCKETS + sub;
}

/** The smallest latency in microseconds of a bucket, and the width of the bucket. */
export function bucketRange(bucket: number): { lowest: number; width: number } {
  if (bucket < SUB_BUCKETS) return { lowest: bucket, width: 1 };
  const exponent = Math.floor((bucket - SUB_BUCKETS) / SUB_BUCKETS) + SUB_BITS;
  const sub = (bucket - SUB_BUCKETS) % SUB_BUCKETS;
  const width = 2 ** (exponent - SUB_BITS);
  return { lowest: (SUB_BUCKETS + sub) * width, width };
}

/** Counts per bucket: what a gateway keeps per database, tenant and minute. */
export class LatencyHistogram {
  readonly counts = new Map<number, number>();
  total = 0;

  recordMicros(micros: number): void {
    const bucket = latencyBucket(micros);
    this.counts.set(bucket, (this.counts.get(bucket) ?? 0) + 1);
    this.total += 1;
  }

  add(bucket: number, count: number): void {
    this.counts.set(bucket, (this.counts.get(bucket) ?? 0) + count);
    this.total += count;
  }

  /**
   * The latency in milliseconds below which `quantile` of the values fall: the value of rank
   * ceil(quantile × total), reported as the middle of its bucket. 0 when there is none.
   */
  percentileMs(quantile: number): number {
    if (this.total === 0) return 0;
    const rank = Math.max(1, Math.ceil(quantile * this.total));
    let seen = 0;
    for (const bucket of [...this.counts.keys()].sort((a, b) => a - b)) {
      seen += this.counts.get(bucket)!;
      if (seen >= rank) {
        const { lowest, width } = bucketRange(bucket);
        return (lowest + (width - 1) / 2) / 1000;
      }
    }
    return 0;
  }

  /** Parallel arrays of the buckets that have counts, ascending: how a row stores it. */
  toArrays(): { buckets: number[]; counts: number[] } {
    const buckets = [...this.counts.keys()].sort((a, b) => a - b);
    return { buckets, counts: buckets.map((bucket) => this.counts.get(bucket)!) };
  }
}
