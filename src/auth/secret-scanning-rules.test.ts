import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { mintSecret, SECRET_KINDS, secretPattern, type SecretKind } from './secret-format.js';

/**
 * The scanner rule files users drop in (docs/secret-scanning/) recognise every kind of secret the
 * service mints, each by its own rule only, and say exactly what the service documents.
 */
const kinds = Object.keys(SECRET_KINDS) as SecretKind[];
const docs = path.resolve(process.cwd(), 'docs');

function gitleaksRules(): Map<string, RegExp> {
  const text = fs.readFileSync(path.join(docs, 'secret-scanning/gitleaks.toml'), 'utf8');
  const rules = new Map<string, RegExp>();
  for (const block of text.split('[[rules]]').slice(1)) {
    const id = /^id = "([^"]+)"$/m.exec(block)?.[1];
    const regex = /^regex = '''(.+)'''$/m.exec(block)?.[1];
    if (!id || !regex) throw new Error(`gitleaks rule without id or regex: ${block}`);
    rules.set(id, new RegExp(regex));
  }
  return rules;
}

function trufflehogRules(): Map<string, RegExp> {
  const document = parseYaml(fs.readFileSync(path.join(docs, 'secret-scanning/trufflehog.yaml'), 'utf8')) as {
    detectors: { name: string; keywords: string[]; regex: { secret: string } }[];
  };
  return new Map(document.detectors.map((detector) => [detector.name, new RegExp(detector.regex.secret)]));
}

describe.each([
  ['gitleaks', gitleaksRules],
  ['trufflehog', trufflehogRules],
])('%s rule file', (_name, load) => {
  const rules = load();

  it('has one rule per kind, each the documented pattern', () => {
    expect(rules.size).toBe(kinds.length);
    const sources = [...rules.values()].map((rule) => rule.source).sort();
    expect(sources).toEqual(kinds.map((kind) => secretPattern(kind).source).sort());
  });

  it.each(kinds)('finds a generated %s secret in surrounding text, by its own rule only', (kind) => {
    const secret = mintSecret(kind);
    const leaked = `export TOKEN="${secret}" # oops`;
    const matching = [...rules].filter(([, rule]) => rule.test(leaked));
    expect(matching.map(([, rule]) => rule.source)).toEqual([secretPattern(kind).source]);
    expect(matching[0]![1].exec(leaked)![0]).toBe(secret);
  });

  it('does not match a truncated secret or one with a longer body', () => {
    const secret = mintSecret('userApiKey');
    for (const rule of rules.values()) {
      expect(rule.test(secret.slice(0, -1))).toBe(false);
      expect(rule.test(`${secret}x`)).toBe(false);
    }
  });
});

it('docs/security.md lists every prefix with its regular expression', () => {
  const page = fs.readFileSync(path.join(docs, 'security.md'), 'utf8');
  for (const kind of kinds) {
    expect(page).toContain(`\`${SECRET_KINDS[kind]}_\``);
    expect(page).toContain(`\`${secretPattern(kind).source}\``);
  }
});
