import { expect } from 'chai';
import { bucketRange, latencyBucket, LatencyHistogram } from './latency-histogram.js';

describe('latency histogram', () => {
  it('keeps values below 64 µs exact and every other within 1/64', () => {
    for (const micros of [0, 1, 63, 64, 65, 100, 127, 128, 1_000, 12_345, 999_999, 60_000_000, 2 ** 37]) {
      const { lowest, width } = bucketRange(latencyBucket(micros));
      expect(micros, `${micros}`).to.be.within(lowest, lowest + width - 1);
      if (micros < 64) expect(width).to.equal(1);
      else expect(width / lowest, `${micros}`).to.be.at.most(1 / 64);
    }
  });

  it('numbers buckets without gaps or overlaps', () => {
    let previous = -1;
    for (let bucket = 0; bucket < 64 * 33; bucket++) {
      const { lowest, width } = bucketRange(bucket);
      expect(lowest, `bucket ${bucket}`).to.equal(previous + 1);
      expect(latencyBucket(lowest)).to.equal(bucket);
      expect(latencyBucket(lowest + width - 1)).to.equal(bucket);
      previous = lowest + width - 1;
    }
  });

  it('answers the value of rank ceil(q × n): 200 fast and 5 slow queries put p99 among the slow', () => {
    const histogram = new LatencyHistogram();
    for (let i = 0; i < 200; i++) histogram.recordMicros(500);
    for (let i = 0; i < 5; i++) histogram.recordMicros(200_000);
    expect(histogram.percentileMs(0.99)).to.be.closeTo(200, 200 / 64);
    expect(histogram.percentileMs(0.5)).to.be.closeTo(0.5, 0.5 / 64);
    expect(new LatencyHistogram().percentileMs(0.99)).to.equal(0);
  });

  it('merges by adding counts per bucket, as the rows do in SQL', () => {
    const a = new LatencyHistogram();
    const b = new LatencyHistogram();
    for (let i = 0; i < 98; i++) a.recordMicros(1_000);
    for (let i = 0; i < 2; i++) b.recordMicros(50_000);
    const merged = new LatencyHistogram();
    for (const part of [a, b]) {
      const { buckets, counts } = part.toArrays();
      buckets.forEach((bucket, i) => merged.add(bucket, counts[i]));
    }
    expect(merged.total).to.equal(100);
    expect(merged.percentileMs(0.99)).to.be.closeTo(50, 50 / 64);
    expect(merged.percentileMs(0.98)).to.be.closeTo(1, 1 / 64);
  });
});
