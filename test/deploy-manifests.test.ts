import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, test } from '@jest/globals';
import { parseAllDocuments, stringify } from 'yaml';
import { containersOf, manifestProblems, renderKustomization, strategicMerge, type KubeObject } from './support/kubernetes-manifests.js';

/**
 * deploy/kubernetes renders offline, every object passes its Kubernetes schema, and what a schema
 * cannot see holds: probes, a non-root user on a read-only root filesystem, secrets only by
 * reference, the drain's timing, the network policy's ports. Then copies broken in each of those
 * ways are shown to fail, so the checks can fail. No cluster and no network.
 */
const repository = path.resolve(import.meta.dirname, '..');
const manifests = path.join(repository, 'deploy', 'kubernetes');
const packageJson = JSON.parse(fs.readFileSync(path.join(repository, 'package.json'), 'utf8')) as { version: string; config: { serverNodeFlags: string } };
const containerfile = fs.readFileSync(path.join(repository, 'deploy', 'image', 'Containerfile'), 'utf8');
const imageUser = Number(/^USER\s+(\d+)(?::\d+)?\s*$/m.exec(containerfile)?.[1]);
const expectations = { version: packageJson.version, imageUser };

const render = (root: string, overlay = 'overlays/production') => renderKustomization(path.join(root, overlay));
const find = (objects: KubeObject[], kind: string) => objects.filter((object) => object.kind === kind);

/** kubectl with kustomize 4 or later (the first with `patches`), when one is on the PATH. */
function kubectlKustomize(): boolean {
  const version = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  if (version.status !== 0) return false;
  const kustomize = /^v?(\d+)\./.exec((JSON.parse(version.stdout) as { kustomizeVersion?: string }).kustomizeVersion ?? '');
  return !!kustomize && Number(kustomize[1]) >= 4;
}

describe('Kubernetes manifests (deploy/kubernetes)', () => {
  test('the production overlay renders, and every object passes its schema and the checks', async () => {
    const objects = render(manifests);
    expect(objects.map((object) => object.kind).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'Job', 'NetworkPolicy', 'NetworkPolicy', 'PodDisruptionBudget', 'Service', 'ServiceAccount'],
    );
    expect(await manifestProblems(objects, expectations)).toEqual([]);
  });

  test('the base alone passes the same checks', async () => {
    expect(await manifestProblems(render(manifests, 'base'), expectations)).toEqual([]);
  });

  test('the overlay sets the registry image, the namespace, 3+ replicas, production resources and the public URLs', () => {
    const objects = render(manifests);
    for (const object of objects) expect(object.metadata.namespace).toBe('account-access-gateway');
    const images = new Set(objects.flatMap((object) => containersOf(object).map((container) => container.image as string)));
    expect([...images]).toEqual([`registry.example.com/account-access-gateway:${packageJson.version}`]);
    const [hpa] = find(objects, 'HorizontalPodAutoscaler');
    expect(hpa!.spec).toMatchObject({ minReplicas: 3, maxReplicas: 12 });
    const [server] = containersOf(find(objects, 'Deployment')[0]!);
    expect(server!.resources).toEqual({ requests: { cpu: '1', memory: '512Mi' }, limits: { memory: '1280Mi' } });
    // The patch changed resources and left the rest of the container as the base has it.
    expect(server!.readinessProbe.httpGet.path).toBe('/readyz');
    expect(find(objects, 'ConfigMap')[0]!.data).toMatchObject({ PUBLIC_API_URL: expect.stringMatching(/^https:\/\//), SHUTDOWN_DRAIN_MS: '5000' });
  });

  test('the image and the manifests agree: its user, its port, the node flags of npm start', () => {
    expect(imageUser).toBeGreaterThan(0);
    const cmd = JSON.parse(/^CMD\s+(\[.*\])\s*$/m.exec(containerfile)![1]!) as string[];
    expect(cmd).toEqual(['node', ...packageJson.config.serverNodeFlags.split(' '), 'dist/src/main.js']);
    expect(/^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(containerfile)?.[1]).toBe('["/usr/bin/tini", "--"]');
    const port = find(render(manifests), 'ConfigMap')[0]!.data.PORT as string;
    expect(/^EXPOSE\s+(\d+)\s*$/m.exec(containerfile)?.[1]).toBe(port);
    expect(/^ENV[\s\S]*?\bPORT=(\d+)/m.exec(containerfile)?.[1]).toBe(port);
    expect(containerfile).toMatch(/^HEALTHCHECK .*\n\s+CMD \["node", "-e", ".*\/healthz/m);
  });

  test('the renderer merges as kustomize does: named lists by name, null removes, other lists replaced', () => {
    const base = { spec: { containers: [{ name: 'a', image: 'x', ports: [1] }, { name: 'b' }], keep: 1, drop: 2 } };
    const patch = { spec: { containers: [{ name: 'a', ports: [2] }, { name: 'c' }], drop: null } };
    expect(strategicMerge(base, patch)).toEqual({ spec: { containers: [{ name: 'a', image: 'x', ports: [2] }, { name: 'b' }, { name: 'c' }], keep: 1 } });
  });

  const kubectl = kubectlKustomize();
  (kubectl ? test : test.skip)('the renderer gives what `kubectl kustomize` gives (where a kubectl with kustomize 4+ is installed)', () => {
    for (const overlay of ['base', 'overlays/production']) {
      const result = spawnSync('kubectl', ['kustomize', path.join(manifests, overlay)], { encoding: 'utf8' });
      expect(result.stderr).toBe('');
      const key = (object: KubeObject) => `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
      const byKey = (objects: KubeObject[]) => Object.fromEntries(objects.map((object) => [key(object), object]));
      const kustomized = parseAllDocuments(result.stdout).map((document) => document.toJS() as KubeObject);
      expect(byKey(render(manifests, overlay))).toEqual(byKey(kustomized));
    }
  });
});

describe('the checks fail on broken copies', () => {
  const copies: string[] = [];
  afterAll(() => {
    for (const copy of copies) fs.rmSync(copy, { recursive: true, force: true });
  });

  /** A copy of deploy/kubernetes with one file's objects changed by `change`. */
  function brokenCopy(file: string, change: (objects: KubeObject[]) => KubeObject[] | void): string {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'aag-manifests-'));
    copies.push(copy);
    fs.cpSync(manifests, copy, { recursive: true });
    const target = path.join(copy, file);
    const objects = fs.existsSync(target) ? parseAllDocuments(fs.readFileSync(target, 'utf8')).map((document) => document.toJS() as KubeObject) : [];
    const changed = change(objects) ?? objects;
    fs.writeFileSync(target, changed.map((object) => stringify(object)).join('---\n'));
    return copy;
  }
  const server = (objects: KubeObject[]) => objects[0]!.spec.template.spec.containers[0] as KubeObject;
  const addResource = (copy: string, resource: string) => {
    const kustomization = path.join(copy, 'base', 'kustomization.yaml');
    fs.appendFileSync(kustomization, `  - ${resource}\n`);
  };

  const cases: [string, () => string, RegExp][] = [
    ['a missing readiness probe', () => brokenCopy('base/deployment.yaml', (objects) => void delete server(objects).readinessProbe), /container server: no readinessProbe$/],
    ['a liveness probe under a misspelt key (the schema allows unknown fields)', () => brokenCopy('base/deployment.yaml', (objects) => {
      const container = server(objects);
      container.livenesProbe = container.livenessProbe;
      delete container.livenessProbe;
    }), /container server: no livenessProbe$/],
    ['a root user', () => brokenCopy('base/deployment.yaml', (objects) => void (server(objects).securityContext.runAsUser = 0)), /container server: runs as root \(runAsUser 0\)$/],
    ['no runAsNonRoot', () => brokenCopy('base/migrations-job.yaml', (objects) => {
      delete objects[0]!.spec.template.spec.securityContext.runAsNonRoot;
      delete objects[0]!.spec.template.spec.containers[0].securityContext.runAsNonRoot;
    }), /Job account-access-gateway-migrate container migrate: runAsNonRoot is not true$/],
    ['a writable root filesystem', () => brokenCopy('base/deployment.yaml', (objects) => void (server(objects).securityContext.readOnlyRootFilesystem = false)), /container server: the root filesystem is writable/],
    ['a committed Secret', () => {
      const copy = brokenCopy('base/secret.yaml', () => [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'account-access-gateway' }, stringData: { SECRET_KEY: 'x'.repeat(40) } }]);
      addResource(copy, 'secret.yaml');
      return copy;
    }, /Secret account-access-gateway: a Secret with its values is committed/],
    ['a database password as a literal value', () => brokenCopy('base/deployment.yaml', (objects) => {
      const variable = (server(objects).env as KubeObject[]).find((entry) => entry.name === 'DATABASE_URL')!;
      delete variable.valueFrom;
      variable.value = 'postgres://aag_app:hunter2@db/aag';
    }), /container server: DATABASE_URL is a secret, given as a literal value$/],
    ['a secret in the overlay\'s ConfigMap', () => brokenCopy('overlays/production/configmap.yaml', (objects) => void (objects[0]!.data.SECRET_KEY = 'y'.repeat(40))), /ConfigMap account-access-gateway: SECRET_KEY is a secret, in a ConfigMap$/],
    ['a termination grace shorter than the drain', () => brokenCopy('base/deployment.yaml', (objects) => void (objects[0]!.spec.template.spec.terminationGracePeriodSeconds = 10)), /terminationGracePeriodSeconds 10 < preStop \+ drain \+ grace \+ 5 s = 25$/],
    ['ingress open on every port', () => brokenCopy('base/networkpolicy.yaml', (objects) => void (objects[0]!.spec.ingress = [{}])), /NetworkPolicy account-access-gateway: ingress is not the server's port 4000\/TCP alone/],
    ['a wrong type (the schema)', () => brokenCopy('base/deployment.yaml', (objects) => void (server(objects).ports[0].containerPort = '4000')), /Deployment account-access-gateway: schema: .*containerPort must be integer/],
  ];

  test.each(cases)('%s', async (_name, breakCopy, problem) => {
    const problems = await manifestProblems(render(breakCopy()), expectations);
    expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(problem)]));
  });
});
