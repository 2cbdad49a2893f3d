interface Family {
  comments: string[];
  samples: Map<string, { value: number; decimals: number }>;
}

/**
 * One Prometheus text exposition from several processes' own: samples of the same name and labels
 * are added (counters add up, and so do the gauges a gateway exposes: open connections, pool sizes),
 * each metric's `# HELP`/`# TYPE` lines are kept once, and its samples stay grouped under them, as
 * the format wants, in the order they first appeared.
 */
export function sumMetricsTexts(texts: string[]): string {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let found = families.get(name);
    if (!found) families.set(name, (found = { comments: [], samples: new Map() }));
    return found;
  };
  for (const text of texts) {
    let current: Family | undefined;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const comment = /^# (?:HELP|TYPE) (\S+)/.exec(line);
      if (comment) {
        current = family(comment[1]);
        if (!current.comments.includes(line)) current.comments.push(line);
        continue;
      }
      if (line.startsWith('#')) continue;
      // A sample: `name{labels} value` (the gateway's label values never hold a space).
      const cut = line.lastIndexOf(' ');
      const series = line.slice(0, cut);
      const raw = line.slice(cut + 1);
      const decimals = raw.includes('.') ? raw.length - raw.indexOf('.') - 1 : 0;
      const samples = (current ?? family(series.replace(/\{.*$/, ''))).samples;
      const known = samples.get(series);
      if (known) {
        known.value += Number(raw);
        known.decimals = Math.max(known.decimals, decimals);
      } else {
        samples.set(series, { value: Number(raw), decimals });
      }
    }
  }
  const lines: string[] = [];
  for (const { comments, samples } of families.values()) {
    lines.push(...comments);
    for (const [series, { value, decimals }] of samples) lines.push(`${series} ${value.toFixed(decimals)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The counter families of an exposition (those whose `# TYPE` says counter), with their comments. */
export function countersOf(text: string): string {
  const counters = new Set([...text.matchAll(/^# TYPE (\S+) counter$/gm)].map((match) => match[1]));
  const kept: string[] = [];
  let family = '';
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (?:HELP|TYPE) (\S+)/.exec(line);
    if (comment) family = comment[1];
    else if (!line.startsWith('#') && !line.startsWith(family)) family = line.replace(/[{ ].*$/, '');
    if (counters.has(family)) kept.push(line);
  }
  return kept.length ? `${kept.join('\n')}\n` : '';
}
