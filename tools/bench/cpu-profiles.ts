// Reads the .cpuprofile files that `node --cpu-prof` writes (for `npm run bench:token -- --profile`)
// and prints where the CPU went: the top self time by function and by package.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Top self time of each .cpuprofile written under `dir`, by function and by package. */
export function summarizeProfiles(dir: string): void {
  for (const name of readdirSync(dir)) {
    for (const file of readdirSync(join(dir, name)).filter((f) => f.endsWith('.cpuprofile'))) {
      const path = join(dir, name, file);
      const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
      const { byFunction, byArea, busy } = selfTimes(profile);
      console.log(`\n${name}: ${path}\nbusy ${(busy / 1e6).toFixed(1)} s of CPU (idle excluded); top self time:`);
      for (const [what, micros] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
        console.log(`  ${((100 * micros) / busy).toFixed(1).padStart(5)}%  ${what}`);
      }
      console.log('by area:');
      for (const [what, micros] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
        console.log(`  ${((100 * micros) / busy).toFixed(1).padStart(5)}%  ${what}`);
      }
    }
  }
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

function selfTimes(profile: CpuProfile): { byFunction: Map<string, number>; byArea: Map<string, number>; busy: number } {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id)!;
    const micros = profile.timeDeltas[i] ?? 0;
    if (frame.functionName === '(idle)') return;
    busy += micros;
    const where = frame.url ? `${frame.url.replace(/^file:\/\/.*?\/(node_modules|libs|apps|tools)\//, '$1/')}:${frame.lineNumber + 1}` : '';
    const what = `${frame.functionName || '(anonymous)'} ${where}`.trim();
    byFunction.set(what, (byFunction.get(what) ?? 0) + micros);
    const area = areaOf(frame.url, frame.functionName);
    byArea.set(area, (byArea.get(area) ?? 0) + micros);
  });
  return { byFunction, byArea, busy };
}

function areaOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  const ours = /\/(libs|apps|tools)\/([^/]+)\//.exec(url);
  return ours ? `${ours[1]}/${ours[2]}` : url;
}
