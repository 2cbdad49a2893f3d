import { expect } from 'chai';
import { countersOf, sumMetricsTexts } from './metrics-sum.js';

const worker1 = `# HELP gateway_connections Client connections open now.
# TYPE gateway_connections gauge
gateway_connections 3
# HELP gateway_queries_total Queries answered.
# TYPE gateway_queries_total counter
gateway_queries_total{database_id="a",tenant_id=""} 10
# HELP gateway_query_seconds_total Time.
# TYPE gateway_query_seconds_total counter
gateway_query_seconds_total{database_id="a",tenant_id=""} 0.100000
`;
const worker2 = `# HELP gateway_connections Client connections open now.
# TYPE gateway_connections gauge
gateway_connections 2
# HELP gateway_queries_total Queries answered.
# TYPE gateway_queries_total counter
gateway_queries_total{database_id="b",tenant_id=""} 4
gateway_queries_total{database_id="a",tenant_id=""} 5
# HELP gateway_query_seconds_total Time.
# TYPE gateway_query_seconds_total counter
gateway_query_seconds_total{database_id="a",tenant_id=""} 0.200000
`;

describe('sumMetricsTexts', function () {
  it('adds samples of the same series, keeps each family grouped under its comments once, and new series within their family', function () {
    expect(sumMetricsTexts([worker1, worker2])).to.equal(`# HELP gateway_connections Client connections open now.
# TYPE gateway_connections gauge
gateway_connections 5
# HELP gateway_queries_total Queries answered.
# TYPE gateway_queries_total counter
gateway_queries_total{database_id="a",tenant_id=""} 15
gateway_queries_total{database_id="b",tenant_id=""} 4
# HELP gateway_query_seconds_total Time.
# TYPE gateway_query_seconds_total counter
gateway_query_seconds_total{database_id="a",tenant_id=""} 0.300000
`);
  });

  it('answers an empty text for no input, and one input as it was', function () {
    expect(sumMetricsTexts([])).to.equal('\n');
    expect(sumMetricsTexts(['', worker1])).to.equal(worker1);
  });
});

describe('countersOf', function () {
  it('keeps the counter families only, with their comments: a dead worker’s gauges are not carried over', function () {
    const counters = countersOf(worker2);
    expect(counters).to.not.include('gateway_connections');
    expect(counters).to.include('gateway_queries_total{database_id="b",tenant_id=""} 4\n');
    expect(counters).to.include('# TYPE gateway_query_seconds_total counter\n');
    // Carried over and added to a live worker's, the sum never goes down.
    expect(sumMetricsTexts([counters, worker1])).to.include('gateway_queries_total{database_id="a",tenant_id=""} 15\n');
  });
});
