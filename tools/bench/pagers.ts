// A process of its own for bench:scale's pagers: CLIENTS clients each page through TENANTS_PATH
// (following Link rel="next", from the first page again at the end) for SECONDS, saying `paging`
// once the first page is in, then print how many pages they read. Apart from the bench's autocannon, whose latencies would otherwise
// include the time its event loop spent taking in these pages.
const { API_URL, TOKEN, TENANTS_PATH, CLIENTS = '4', SECONDS = '10' } = process.env;
if (!API_URL || !TOKEN || !TENANTS_PATH) throw new Error('API_URL, TOKEN and TENANTS_PATH are required');
const until = performance.now() + Number(SECONDS) * 1000;
let paging: string | undefined;

async function pageThrough(): Promise<number> {
  let pages = 0;
  while (performance.now() < until) {
    let next: string | null = `${TENANTS_PATH}?limit=1000`;
    while (next && performance.now() < until) {
      const response = await fetch(`${API_URL}${next}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      if (response.status !== 200) throw new Error(`paging: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
      if (!paging) console.log((paging = 'paging'));
      pages += 1;
      next = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1] ?? null;
    }
  }
  return pages;
}

const pages = await Promise.all(Array.from({ length: Number(CLIENTS) }, pageThrough));
console.log(JSON.stringify({ pages: pages.reduce((a, b) => a + b, 0) }));
