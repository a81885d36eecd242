/** Public URLs both benchmarked servers put in `self` and `html_url`, so their bodies are byte-identical. */
export const BENCH_URLS = { api: 'http://bench.example', web: 'http://bench.example', feed: 'http://bench.example' } as const;
