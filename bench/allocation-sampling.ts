// Preloaded with `--import` into a benchmarked server when BENCH_HEAP_PROFILE=1 (bench/servers.ts):
// V8's sampling heap profiler, keeping the samples of objects the garbage collector has already
// freed, so the profile shows where a request's garbage is allocated, not only what stays alive
// (which is all `node --heap-prof` keeps). Written when the process exits, to the folder and with
// the name prefix that its import URL's query gives (`?dir=...&prefix=...`).
import fs from 'node:fs';
import inspector from 'node:inspector';
import path from 'node:path';

const settings = new URL(import.meta.url).searchParams;
const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
process.on('exit', () => {
  // A session on the process's own thread answers synchronously, so this runs before exit.
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (error) return;
    const file = path.join(settings.get('dir') ?? '.', `${settings.get('prefix') ?? 'allocations'}.${process.pid}.heapprofile`);
    fs.writeFileSync(file, JSON.stringify(result.profile));
  });
});
