import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

/**
 * The Kubernetes manifests under deploy/kubernetes, rendered and checked offline.
 *
 * `renderKustomization` renders a kustomization the way `kubectl kustomize` does, for the fields
 * these manifests use and no others (any other field is an error, not ignored): `resources` (files
 * and directories with their own kustomization), `patches` with a `path` (strategic merge: maps
 * merge, `null` removes a key, lists of objects that all have a `name` merge by name, other lists
 * are replaced), `images` and `namespace`. Debian's kubectl (1.20, kustomize 2.0) predates
 * `patches`, so CI renders with this; test/deploy-manifests.test.ts compares it with
 * `kubectl kustomize` wherever a kubectl with kustomize 4 or later is on the PATH.
 *
 * `manifestProblems` says what is wrong with a rendered set: each object against its Kubernetes
 * schema (the kubernetes-models package: types and required fields, not unknown fields), then what
 * the schema cannot know: probes, the security context, secrets only by reference, the drain's
 * timing, and the objects pointing at each other.
 */

export type KubeObject = Record<string, any>;

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'patches', 'images', 'namespace']);

function readYamlDocuments(file: string): KubeObject[] {
  return parseAllDocuments(fs.readFileSync(file, 'utf8')).map((document) => {
    if (document.errors.length) throw new Error(`${file}: ${document.errors[0]!.message}`);
    return document.toJS() as KubeObject;
  }).filter((object) => object !== null && object !== undefined);
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isNamedList = (list: unknown[]) => list.length > 0 && list.every((item) => isPlainObject(item) && typeof item.name === 'string');

/** A strategic merge patch, for the list kinds these manifests patch (see above). */
export function strategicMerge(target: unknown, patch: unknown): unknown {
  if (isPlainObject(target) && isPlainObject(patch)) {
    const merged: Record<string, unknown> = { ...target };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete merged[key];
      else merged[key] = key in target ? strategicMerge(target[key], value) : value;
    }
    return merged;
  }
  if (Array.isArray(target) && Array.isArray(patch) && isNamedList(target) && isNamedList(patch)) {
    const merged = [...target] as Record<string, unknown>[];
    for (const item of patch as Record<string, unknown>[]) {
      const index = merged.findIndex((existing) => existing.name === item.name);
      if (index === -1) merged.push(item);
      else merged[index] = strategicMerge(merged[index], item) as Record<string, unknown>;
    }
    return merged;
  }
  return patch;
}

/** Every container of a pod-bearing object (Deployment, Job...): its containers and init containers. */
export function podSpecOf(object: KubeObject): KubeObject | undefined {
  return object.spec?.template?.spec;
}

export function containersOf(object: KubeObject, { init = true } = {}): KubeObject[] {
  const pod = podSpecOf(object);
  if (!pod) return [];
  return [...(pod.containers ?? []), ...(init ? pod.initContainers ?? [] : [])];
}

function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const [withoutDigest, digest] = image.split('@', 2) as [string, string | undefined];
  const slash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.lastIndexOf(':');
  if (colon > slash) return { name: withoutDigest.slice(0, colon), tag: withoutDigest.slice(colon + 1), digest };
  return { name: withoutDigest, digest };
}

interface ImageOverride { name: string; newName?: string; newTag?: string; digest?: string }

function applyImages(objects: KubeObject[], images: ImageOverride[]): void {
  for (const object of objects) {
    for (const container of containersOf(object)) {
      const current = splitImage(String(container.image));
      const override = images.find((entry) => entry.name === current.name);
      if (!override) continue;
      const name = override.newName ?? current.name;
      if (override.digest) container.image = `${name}@${override.digest}`;
      else container.image = `${name}${override.newTag ?? current.tag ? `:${override.newTag ?? current.tag}` : ''}`;
    }
  }
}

/** Renders the kustomization in `directory` (see the rules above). */
export function renderKustomization(directory: string): KubeObject[] {
  const file = path.join(directory, 'kustomization.yaml');
  const [kustomization] = readYamlDocuments(file);
  if (!kustomization) throw new Error(`${file} is empty`);
  const unsupported = Object.keys(kustomization).filter((key) => !KUSTOMIZATION_FIELDS.has(key));
  if (unsupported.length) throw new Error(`${file}: ${unsupported.join(', ')} not supported by this renderer (test/support/kubernetes-manifests.ts)`);

  let objects: KubeObject[] = [];
  for (const resource of (kustomization.resources ?? []) as string[]) {
    const target = path.resolve(directory, resource);
    objects.push(...(fs.statSync(target).isDirectory() ? renderKustomization(target) : readYamlDocuments(target)));
  }
  for (const patch of (kustomization.patches ?? []) as Record<string, unknown>[]) {
    const extra = Object.keys(patch).filter((key) => key !== 'path');
    if (extra.length) throw new Error(`${file}: patches with ${extra.join(', ')} not supported by this renderer`);
    for (const patchObject of readYamlDocuments(path.resolve(directory, String(patch.path)))) {
      const index = objects.findIndex((object) => object.kind === patchObject.kind && object.metadata?.name === patchObject.metadata?.name);
      if (index === -1) throw new Error(`${patch.path}: no ${patchObject.kind} ${patchObject.metadata?.name} to patch`);
      objects[index] = strategicMerge(objects[index], patchObject) as KubeObject;
    }
  }
  if (kustomization.images) applyImages(objects, kustomization.images as ImageOverride[]);
  if (kustomization.namespace) objects = objects.map((object) => ({ ...object, metadata: { ...object.metadata, namespace: kustomization.namespace } }));
  return objects;
}

// ---------------------------------------------------------------------------------------------
// Checks

/** Variables the server treats as secrets: they come from a Secret, never from a ConfigMap or a literal. */
export const SECRET_VARIABLES = ['SECRET_KEY', 'AUDIT_CHAIN_KEY', 'METRICS_TOKEN', 'DATABASE_URL', 'DATABASE_OWNER_URL', 'DATABASE_LISTEN_URL', 'DATABASE_REPLICA_URLS', 'REDIS_URL'];
const SECRET_NAME = /SECRET|PASSWORD|TOKEN|PRIVATE_KEY|CREDENTIAL|API_KEY/i;
/** A URL carrying a password: scheme://user:password@host. */
const URL_WITH_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:[^/\s@]+@/i;

const nameOf = (object: KubeObject) => `${object.kind} ${object.metadata?.name}`;
const labelsMatch = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
  !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels?.[key] === value);

async function schemaProblems(object: KubeObject): Promise<string[]> {
  if (typeof object.apiVersion !== 'string' || typeof object.kind !== 'string') return [`an object without apiVersion and kind: ${JSON.stringify(object).slice(0, 80)}`];
  let models: Record<string, new (data: KubeObject) => { validate(): void }>;
  try {
    models = (await import(`kubernetes-models/${object.apiVersion}`)) as typeof models;
  } catch {
    return [`${nameOf(object)}: no Kubernetes schema for apiVersion ${object.apiVersion}`];
  }
  const Model = models[object.kind];
  if (!Model) return [`${nameOf(object)}: no Kubernetes schema for kind ${object.kind} in ${object.apiVersion}`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [`${nameOf(object)}: schema: ${(error as Error).message}`];
  }
}

/** A container's effective security settings: its own, else the pod's. */
function securityProblems(owner: KubeObject, container: KubeObject): string[] {
  const pod = podSpecOf(owner)?.securityContext ?? {};
  const own = container.securityContext ?? {};
  const where = `${nameOf(owner)} container ${container.name}`;
  const problems: string[] = [];
  const runAsNonRoot = own.runAsNonRoot ?? pod.runAsNonRoot;
  const runAsUser = own.runAsUser ?? pod.runAsUser;
  if (runAsNonRoot !== true) problems.push(`${where}: runAsNonRoot is not true`);
  if (runAsUser === 0) problems.push(`${where}: runs as root (runAsUser 0)`);
  if (own.readOnlyRootFilesystem !== true) problems.push(`${where}: the root filesystem is writable (readOnlyRootFilesystem is not true)`);
  if (own.allowPrivilegeEscalation !== false) problems.push(`${where}: allowPrivilegeEscalation is not false`);
  if (own.privileged === true) problems.push(`${where}: privileged`);
  if (!(own.capabilities?.drop ?? []).includes('ALL')) problems.push(`${where}: capabilities are not all dropped`);
  if ((own.capabilities?.add ?? []).length) problems.push(`${where}: adds capabilities ${own.capabilities.add.join(', ')}`);
  if ((own.seccompProfile ?? pod.seccompProfile)?.type !== 'RuntimeDefault') problems.push(`${where}: no RuntimeDefault seccomp profile`);
  if (!(container.volumeMounts ?? []).some((mount: KubeObject) => mount.mountPath === '/tmp')) problems.push(`${where}: no /tmp volume (the root filesystem is read-only)`);
  return problems;
}

/** Secret values in a rendered set: Secret objects, secret variables outside Secrets, literal passwords. */
function secretValueProblems(objects: KubeObject[]): string[] {
  const problems: string[] = [];
  for (const object of objects) {
    if (object.kind === 'Secret') problems.push(`${nameOf(object)}: a Secret with its values is committed (reference Secrets made outside git instead)`);
    if (object.kind === 'ConfigMap') {
      for (const [key, value] of Object.entries((object.data ?? {}) as Record<string, string>)) {
        if (SECRET_VARIABLES.includes(key) || SECRET_NAME.test(key)) problems.push(`${nameOf(object)}: ${key} is a secret, in a ConfigMap`);
        else if (URL_WITH_PASSWORD.test(value)) problems.push(`${nameOf(object)}: ${key} holds a URL with a password`);
      }
    }
    for (const container of containersOf(object)) {
      for (const variable of (container.env ?? []) as KubeObject[]) {
        if (variable.value === undefined) continue;
        const where = `${nameOf(object)} container ${container.name}: ${variable.name}`;
        if (SECRET_VARIABLES.includes(variable.name) || SECRET_NAME.test(variable.name)) problems.push(`${where} is a secret, given as a literal value`);
        else if (URL_WITH_PASSWORD.test(String(variable.value))) problems.push(`${where} holds a URL with a password`);
      }
      for (const argument of [...(container.command ?? []), ...(container.args ?? [])] as string[]) {
        if (URL_WITH_PASSWORD.test(argument)) problems.push(`${nameOf(object)} container ${container.name}: an argument holds a URL with a password`);
      }
    }
  }
  return problems;
}

const secretReference = (container: KubeObject, variable: string) =>
  (container.env ?? []).find((entry: KubeObject) => entry.name === variable)?.valueFrom?.secretKeyRef as { name?: string; key?: string; optional?: boolean } | undefined;

export interface ManifestExpectations {
  /** The image tag every container must run: the package's version. */
  version: string;
  /** The image's USER (deploy/image/Containerfile): the pods must run as it. */
  imageUser: number;
}

/** Everything wrong with a rendered set of manifests; empty when nothing is. */
export async function manifestProblems(objects: KubeObject[], expected: ManifestExpectations): Promise<string[]> {
  const problems: string[] = [];
  for (const object of objects) problems.push(...(await schemaProblems(object)));
  problems.push(...secretValueProblems(objects));

  const ofKind = (kind: string) => objects.filter((object) => object.kind === kind);
  for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'Job', 'NetworkPolicy', 'ConfigMap', 'ServiceAccount']) {
    if (ofKind(kind).length === 0) problems.push(`no ${kind}`);
  }
  const [deployment] = ofKind('Deployment');
  const [job] = ofKind('Job');
  const config = (ofKind('ConfigMap')[0]?.data ?? {}) as Record<string, string>;
  if (!deployment || !job) return problems;

  const podLabels = deployment.spec?.template?.metadata?.labels as Record<string, string> | undefined;
  const server = containersOf(deployment, { init: false })[0];
  if (!server) return [...problems, `${nameOf(deployment)}: no container`];
  const port = Number(config.PORT ?? 4000);
  const httpPort = (server.ports ?? []).find((entry: KubeObject) => entry.containerPort === port);
  if (!httpPort) problems.push(`${nameOf(deployment)}: no container port ${port} (the ConfigMap's PORT)`);
  const resolvesToServer = (target: unknown) => target === port || (typeof target === 'string' && target === httpPort?.name);

  // Probes: readiness on /readyz, liveness on /healthz, both on the server's port.
  for (const container of containersOf(deployment, { init: false })) {
    const where = `${nameOf(deployment)} container ${container.name}`;
    for (const [probe, probePath] of [['readinessProbe', '/readyz'], ['livenessProbe', '/healthz']] as const) {
      const get = container[probe]?.httpGet;
      if (!get) problems.push(`${where}: no ${probe}`);
      else if (get.path !== probePath || !resolvesToServer(get.port)) problems.push(`${where}: ${probe} is not GET ${probePath} on port ${port}`);
    }
    const requests = container.resources?.requests ?? {};
    if (!requests.cpu || !requests.memory || !container.resources?.limits?.memory) problems.push(`${where}: no CPU and memory requests and memory limit`);
  }

  // The drain: readiness notices within SHUTDOWN_DRAIN_MS; the kubelet waits for preStop, drain, grace and the server's own 5 s.
  const drainMs = Number(config.SHUTDOWN_DRAIN_MS ?? 5000);
  const graceMs = Number(config.SHUTDOWN_GRACE_MS ?? 10000);
  const readiness = server.readinessProbe ?? {};
  if ((readiness.periodSeconds ?? 10) * (readiness.failureThreshold ?? 3) * 1000 > drainMs) problems.push(`${nameOf(deployment)}: the readiness probe notices the drain after SHUTDOWN_DRAIN_MS (${drainMs} ms) has passed`);
  const preStopSeconds = server.lifecycle?.preStop?.sleep?.seconds;
  if (typeof preStopSeconds !== 'number') problems.push(`${nameOf(deployment)}: no preStop sleep`);
  const needed = (preStopSeconds ?? 0) + (drainMs + graceMs) / 1000 + 5;
  const terminationGrace = deployment.spec?.template?.spec?.terminationGracePeriodSeconds ?? 30;
  if (terminationGrace < needed) problems.push(`${nameOf(deployment)}: terminationGracePeriodSeconds ${terminationGrace} < preStop + drain + grace + 5 s = ${needed}`);

  // Replicas: the HPA owns the count, at least 2; a count in the Deployment itself is at least 2 too.
  if (deployment.spec?.replicas !== undefined && deployment.spec.replicas < 2) problems.push(`${nameOf(deployment)}: fewer than 2 replicas`);
  const hpa = ofKind('HorizontalPodAutoscaler').find((entry) => entry.spec?.scaleTargetRef?.kind === 'Deployment' && entry.spec.scaleTargetRef.name === deployment.metadata?.name);
  if (!hpa) problems.push(`no HorizontalPodAutoscaler scales ${nameOf(deployment)}`);
  else if (!(hpa.spec.minReplicas >= 2)) problems.push(`${nameOf(hpa)}: minReplicas below 2`);
  if (!ofKind('PodDisruptionBudget').some((pdb) => labelsMatch(pdb.spec?.selector?.matchLabels, podLabels))) problems.push(`no PodDisruptionBudget selects ${nameOf(deployment)}'s pods`);
  const service = ofKind('Service').find((entry) => labelsMatch(entry.spec?.selector, podLabels));
  if (!service) problems.push(`no Service selects ${nameOf(deployment)}'s pods`);
  else if (!(service.spec.ports ?? []).every((entry: KubeObject) => resolvesToServer(entry.targetPort ?? entry.port))) problems.push(`${nameOf(service)}: a port does not lead to the server's port ${port}`);

  // Who runs, and as whom: the pinned image, its non-root user, nothing writable.
  for (const owner of [deployment, job]) {
    for (const container of containersOf(owner)) {
      problems.push(...securityProblems(owner, container));
      const runAsUser = container.securityContext?.runAsUser ?? podSpecOf(owner)?.securityContext?.runAsUser;
      if (runAsUser !== undefined && runAsUser !== 0 && runAsUser !== expected.imageUser) problems.push(`${nameOf(owner)} container ${container.name}: runAsUser ${runAsUser} is not the image's user ${expected.imageUser}`);
      if (splitImage(String(container.image)).tag !== expected.version) problems.push(`${nameOf(owner)} container ${container.name}: image ${container.image} is not tagged ${expected.version}`);
    }
  }

  // Secrets by reference: the server's and the Job's, and the owner's URL for the Job alone.
  for (const variable of ['SECRET_KEY', 'DATABASE_URL']) {
    if (!secretReference(server, variable)?.name) problems.push(`${nameOf(deployment)}: ${variable} does not come from a Secret`);
  }
  const ownerUrlInServer = containersOf(deployment).some((container) => (container.env ?? []).some((entry: KubeObject) => entry.name === 'DATABASE_OWNER_URL') ||
    (container.envFrom ?? []).some((source: KubeObject) => source.secretRef?.name === secretReference(containersOf(job)[0] ?? {}, 'DATABASE_OWNER_URL')?.name));
  if (ownerUrlInServer) problems.push(`${nameOf(deployment)}: the server receives the owner's database URL (only the migrations Job may)`);
  const migrate = containersOf(job, { init: false })[0] ?? {};
  if (!secretReference(migrate, 'DATABASE_OWNER_URL')?.name) problems.push(`${nameOf(job)}: DATABASE_OWNER_URL does not come from a Secret`);
  if (!(migrate.args ?? migrate.command ?? []).includes('dist/src/cli/accessctl.js')) problems.push(`${nameOf(job)}: does not run accessctl`);

  // Network: in on the server's port only; out to DNS, PostgreSQL, Redis and HTTPS.
  const policy = ofKind('NetworkPolicy').find((entry) => labelsMatch(entry.spec?.podSelector?.matchLabels, podLabels));
  if (!policy) problems.push(`no NetworkPolicy selects ${nameOf(deployment)}'s pods`);
  else {
    const types = policy.spec.policyTypes ?? [];
    if (!types.includes('Ingress') || !types.includes('Egress')) problems.push(`${nameOf(policy)}: does not govern both ingress and egress`);
    const ingressPorts = (policy.spec.ingress ?? []).flatMap((rule: KubeObject) => rule.ports ?? [{ port: '(every port)' }]);
    if (ingressPorts.length === 0 || !ingressPorts.every((entry: KubeObject) => resolvesToServer(entry.port) && (entry.protocol ?? 'TCP') === 'TCP')) {
      problems.push(`${nameOf(policy)}: ingress is not the server's port ${port}/TCP alone (${ingressPorts.map((entry: KubeObject) => entry.port).join(', ') || 'none'})`);
    }
    const egress = new Set((policy.spec.egress ?? []).flatMap((rule: KubeObject) => (rule.ports ?? []).map((entry: KubeObject) => `${entry.port}/${entry.protocol ?? 'TCP'}`)));
    for (const needed of ['53/UDP', '5432/TCP', '6379/TCP', '443/TCP']) if (!egress.has(needed)) problems.push(`${nameOf(policy)}: no egress to ${needed}`);
  }
  const jobLabels = job.spec?.template?.metadata?.labels as Record<string, string> | undefined;
  if (!ofKind('NetworkPolicy').some((entry) => labelsMatch(entry.spec?.podSelector?.matchLabels, jobLabels))) problems.push(`no NetworkPolicy selects ${nameOf(job)}'s pods`);
  return problems;
}
