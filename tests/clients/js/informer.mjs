// The official JavaScript client (@kubernetes/client-node 1.x) against `muster up`, with the
// kubeconfig muster wrote, unchanged (HTTPS, its CA, its token): an informer (makeInformer) on the
// pods of namespace default must deliver, for each pod of the seed's gang, an add, an update that
// binds it to a node, and a delete once the Volcano Job is deleted. Prints one PASS or FAIL line
// per check and "N passed, M failed"; exits 1 when anything failed.
//
// Usage: node informer.mjs KUBECONFIG EXAMPLES_DIR   (examples/gpu-gang: the queue and the job)

import * as fs from 'node:fs';
import * as k8s from '@kubernetes/client-node';

const [kubeconfigPath, examples] = process.argv.slice(2);
if (!kubeconfigPath || !examples) {
  console.error('usage: node informer.mjs KUBECONFIG EXAMPLES_DIR');
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) {
    passed++;
    console.log(`PASS ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}${detail ? `\n    ${detail}` : ''}`);
  }
}

// Resolves once pred() holds, polling every 50 ms; false after `seconds`.
async function eventually(pred, seconds) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (pred()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return pred();
}

const kc = new k8s.KubeConfig();
kc.loadFromFile(kubeconfigPath);
const cluster = kc.getCurrentCluster();
check('the kubeconfig names an https server', cluster && cluster.server.startsWith('https://'),
  `server: ${cluster && cluster.server}`);

const core = kc.makeApiClient(k8s.CoreV1Api);
const custom = kc.makeApiClient(k8s.CustomObjectsApi);

const ns = await core.readNamespace({ name: 'default' });
check('readNamespace over TLS with the kubeconfig as written', ns.metadata.name === 'default');

// What the informer delivered, per pod name: the ordered list of [verb, nodeName].
const seen = new Map();
const errors = [];
function record(verb, pod) {
  const name = pod.metadata.name;
  if (!seen.has(name)) seen.set(name, []);
  seen.get(name).push([verb, (pod.spec && pod.spec.nodeName) || '']);
}
const informer = k8s.makeInformer(kc, '/api/v1/namespaces/default/pods',
  () => core.listNamespacedPod({ namespace: 'default' }));
informer.on('add', (pod) => record('add', pod));
informer.on('update', (pod) => record('update', pod));
informer.on('delete', (pod) => record('delete', pod));
informer.on('error', (err) => {
  errors.push(String(err));
  // makeInformer stops on an error; restart it as its documentation shows.
  setTimeout(() => informer.start(), 1000);
});
await informer.start();

const [queue] = k8s.loadAllYaml(fs.readFileSync(`${examples}/volcano-queue.yaml`, 'utf8'));
const [job] = k8s.loadAllYaml(fs.readFileSync(`${examples}/tensorflow-job.yaml`, 'utf8'));
await custom.createClusterCustomObject({
  group: 'scheduling.volcano.sh', version: 'v1beta1', plural: 'queues', body: queue,
});
const created = await custom.createNamespacedCustomObject({
  group: 'batch.volcano.sh', version: 'v1alpha1', namespace: 'default', plural: 'jobs', body: job,
});
check('create a Volcano Job with CustomObjectsApi', created.metadata.name === job.metadata.name);

const jobName = job.metadata.name;
const replicas = job.spec.tasks.reduce((n, t) => n + (t.replicas || 1), 0);
const gangPods = () => [...seen.keys()].filter((n) => n.startsWith(`${jobName}-`));
const bound = (name) => seen.get(name).some(([verb, node]) => verb !== 'delete' && node !== '');

const allBound = await eventually(
  () => gangPods().length === replicas && gangPods().every(bound), 60);
check(`the informer saw all ${replicas} pods of the gang added and bound`, allBound,
  JSON.stringify(Object.fromEntries(seen)));
for (const name of gangPods()) {
  const events = seen.get(name);
  check(`${name}: first event is add`, events[0][0] === 'add', JSON.stringify(events));
  const bind = events.findIndex(([verb, node]) => verb === 'update' && node !== '');
  check(`${name}: a later update carries spec.nodeName`, bind > 0, JSON.stringify(events));
}
check('the informer cache lists the gang', gangPods().every((n) => informer.get(n, 'default')));

await custom.deleteNamespacedCustomObject({
  group: 'batch.volcano.sh', version: 'v1alpha1', namespace: 'default', plural: 'jobs',
  name: jobName,
});
const allDeleted = await eventually(
  () => gangPods().every((n) => seen.get(n).at(-1)[0] === 'delete'), 60);
check('the informer saw every pod of the gang deleted after the Job was', allDeleted,
  JSON.stringify(Object.fromEntries(seen)));
check('the informer cache no longer holds them', gangPods().every((n) => !informer.get(n, 'default')));
check('the informer reported no error', errors.length === 0, errors.join('; '));

await informer.stop();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
