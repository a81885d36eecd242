// `node dist/bench/profile-summary.js <file.cpuprofile>`: where a V8 CPU profile (node --cpu-prof,
// see BENCH_PROFILE_DIR in bench/run.ts) spent its busy time. Each sample is charged to the
// nearest package on its stack (node core and native frames count for the package that called
// them, e.g. socket writes for express, parsing for pg), as a share of busy time.
import fs from 'node:fs';

interface ProfileNode { id: number; callFrame: { url: string; functionName: string }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const profile = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const ownerOf = (url: string): string | undefined => {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (/\/dist\/src\//.test(url)) return 'this service (src)';
  if (/\/dist\/bench\//.test(url)) return 'bench harness';
  return undefined;
};
const groupOf = (leaf: ProfileNode): string => {
  const name = leaf.callFrame.functionName;
  if (!leaf.callFrame.url && ['(idle)', '(garbage collector)', '(program)'].includes(name)) return name;
  for (let node: ProfileNode | undefined = leaf; node; node = byId.get(parent.get(node.id) ?? -1)) {
    const owner = ownerOf(node.callFrame.url);
    if (owner) return owner;
  }
  return 'node core (no package on the stack: sockets, timers)';
};
const time = new Map<string, number>();
let busy = 0;
profile.samples.forEach((id, index) => {
  const group = groupOf(byId.get(id)!);
  const delta = profile.timeDeltas[index] ?? 0;
  time.set(group, (time.get(group) ?? 0) + delta);
  if (group !== '(idle)') busy += delta;
});
const rows = [...time].filter(([group]) => group !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, 14);
process.stdout.write(`| charged to (nearest package on the stack) | share of busy time |\n|---|---|\n${rows.map(([group, t]) => `| ${group} | ${((100 * t) / busy).toFixed(1)}% |`).join('\n')}\n`);
process.stdout.write(`\nbusy ${(busy / 1e6).toFixed(1)} s of ${((busy + (time.get('(idle)') ?? 0)) / 1e6).toFixed(1)} s\n`);
