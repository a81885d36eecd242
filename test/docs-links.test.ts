import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';

/**
 * The README and every page under docs/ link only to files that exist and to headings that
 * exist (with GitHub's anchor for each heading), and every page under docs/ is reachable from
 * the README: a page split, moved or retitled fails here instead of leaving a dead link.
 */
const repository = path.resolve(import.meta.dirname, '..');
const docsDirectory = path.join(repository, 'docs');
const pages = ['README.md', ...fs.readdirSync(docsDirectory).filter((file) => file.endsWith('.md')).sort().map((file) => `docs/${file}`)];

/** The lines outside fenced code blocks: what GitHub renders as Markdown. */
function proseLines(markdown: string): string[] {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      continue;
    }
    if (fence === undefined) lines.push(line);
  }
  return lines;
}

/** GitHub's anchor for a heading (github-slugger): the rendered text lower-cased, punctuation dropped, spaces as hyphens. */
function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '')
    .replace(/(^|\W)_+|_+(\W|$)/g, '$1$2')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a page offers: one per heading, repeats numbered as GitHub numbers them. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = githubSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const match of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

/** Inline links and images outside code: `[text](target)`, the target without an optional title. */
function linksOf(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of proseLines(markdown)) {
    const withoutCode = line.replace(/`[^`]*`/g, '');
    for (const match of withoutCode.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(match[1]!);
  }
  return targets;
}

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);
const read = (page: string) => fs.readFileSync(path.join(repository, page), 'utf8');

describe('documentation links', () => {
  test('the slug rule matches GitHub on the headings these pages use', () => {
    expect(githubSlug('The REST API\'s description')).toBe('the-rest-apis-description');
    expect(githubSlug('Provisioning (SCIM)')).toBe('provisioning-scim');
    expect(githubSlug('Entra ID (Azure AD)')).toBe('entra-id-azure-ad');
    expect(githubSlug('The CLI beside the embedded server')).toBe('the-cli-beside-the-embedded-server');
    expect(githubSlug('`DATABASE_POOLER` and `pool_mode`')).toBe('database_pooler-and-pool_mode');
    expect(githubSlug('Search under load, round three: 1,000,000 users')).toBe('search-under-load-round-three-1000000-users');
  });

  test.each(pages)('every relative link and anchor in %s resolves', (page) => {
    const broken: string[] = [];
    for (const target of linksOf(read(page))) {
      if (isExternal(target)) continue;
      const [file, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved = file === '' ? path.join(repository, page) : path.resolve(path.dirname(path.join(repository, page)), decodeURIComponent(file));
      if (!resolved.startsWith(repository + path.sep) || !fs.existsSync(resolved)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!resolved.endsWith('.md')) {
        broken.push(`${target}: an anchor into a file that is not Markdown`);
        continue;
      }
      if (!anchorsOf(fs.readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${target}: no heading with that anchor`);
    }
    expect(broken).toEqual([]);
  });

  test('every page under docs/ is linked from the README', () => {
    const linked = new Set(linksOf(read('README.md')).filter((target) => !isExternal(target)).map((target) => path.normalize(target.split('#')[0]!)));
    expect(pages.filter((page) => page !== 'README.md' && !linked.has(page))).toEqual([]);
  });

  test('the checks find what they look for', () => {
    const sample = '# Top\n\n## Same\n\n## Same\n\n```sh\n# not a heading\n[not](a-link.md)\n```\n\nSee [a](#same-1), `[code](skipped.md)` and [b](other.md#x "title").\n';
    expect([...anchorsOf(sample)]).toEqual(['top', 'same', 'same-1']);
    expect(linksOf(sample)).toEqual(['#same-1', 'other.md#x']);
  });
});
