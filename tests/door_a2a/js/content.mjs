// Content, state and usage through the A2A door with the official JS client, @a2a-js/sdk
// (pinned in package-lock.json): raw, url and data parts (and a raw part alone) reach the
// backend; a type the agent does not take is ContentTypeNotSupportedError; the reply's image
// comes back as a raw part; a state sent as a flagged data part comes back in the `state`
// artifact; the task's metadata holds the usage. The same parts once more through the SDK's
// A2A 0.3 transport (FilePart / DataPart on the wire).
// Usage: TOKEN=... PNG=<base64 png> node content.mjs <base url of the door>
// Prints one JSON object.
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';

const base = process.argv[2];
const token = process.env.TOKEN;
const png = Buffer.from(process.env.PNG, 'base64');
const fetchImpl = (url, init = {}) => fetch(url, {
  ...init, headers: { ...(init.headers ?? {}), Authorization: `Bearer ${token}` },
});
const cardResolver = new DefaultAgentCardResolver({ fetchImpl });
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl })], cardResolver,
}));
const part = (content, extra = {}) => ({ content, metadata: undefined, filename: '', mediaType: '', ...extra });
const text = (value) => part({ $case: 'text', value });
const request = (parts, contextId = '') => ({
  message: {
    messageId: randomUUID(), role: Role.ROLE_USER, parts, contextId, taskId: '', metadata: undefined,
    extensions: [], referenceTaskIds: [],
  },
});
const replyOf = (task) => task.artifacts.filter((a) => a.artifactId === 'reply')
  .flatMap((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : ''))).join('');
const files = [
  part({ $case: 'raw', value: png }, { mediaType: 'image/png', filename: 'dot.png' }),
  part({ $case: 'url', value: 'https://example.com/report.pdf' }, { mediaType: 'application/pdf' }),
  part({ $case: 'data', value: { n: 3 } }),
];
const out = {};

try {
  const client = await factory.createFromUrl(base);
  const card = await cardResolver.resolve(base);
  out.modes = { input: card.defaultInputModes, output: card.defaultOutputModes };

  const task = await client.sendMessage(request([text('from node'), ...files]));
  out.parts = { state: TaskState[task.status.state], reply: replyOf(task) };
  const alone = await client.sendMessage(request([files[0]]));
  out.alone = { state: TaskState[alone.status.state], reply: replyOf(alone) };

  try {
    await client.sendMessage(request([text('a font'), part({ $case: 'raw', value: Buffer.from('wOFF') },
      { mediaType: 'font/woff' })]));
    out.refused = 'no error';
  } catch (err) {
    out.refused = { name: err.name, typed: err instanceof ContentTypeNotSupportedError, message: err.message };
  }

  const kinds = [];
  let id;
  let usage;
  for await (const event of client.sendMessageStream(request([text('/image a picture please')]))) {
    const p = event.payload;
    if (p.$case === 'task') id = p.value.id;
    if (p.$case === 'artifactUpdate' && !p.value.append && p.value.lastChunk) {
      kinds.push(...p.value.artifact.parts.map((x) => ({
        kind: x.content?.$case, mediaType: x.mediaType, size: x.content?.$case === 'raw' ? x.content.value.length : 0,
      })));
    }
    if (p.$case === 'statusUpdate' && p.value.status.state === TaskState.TASK_STATE_COMPLETED) usage = p.value.metadata?.usage;
  }
  const stored = await client.getTask({ tenant: '', id, historyLength: undefined });
  out.image = { final: kinds, statusUsage: usage, taskUsage: stored.metadata?.usage, message: '/image a picture please' };

  const statePart = part({ $case: 'data', value: { todo: ['milk'] } }, { metadata: { onedoor: 'state' } });
  const withState = await client.sendMessage(request([
    text('/state [{"op": "add", "path": "/todo/-", "value": "bread"}] shopping'), statePart]));
  const stateArtifact = withState.artifacts.find((a) => a.artifactId === 'state');
  out.state = {
    value: stateArtifact?.parts[0]?.content?.value, flag: stateArtifact?.parts[0]?.metadata,
    version: withState.metadata?.state_version,
  };

  const legacy = new LegacyJsonRpcTransport({ endpoint: `${base}/`, fetchImpl });
  const old = await legacy.sendMessage(request([text('from an old client'), ...files]));
  const oldTask = old.payload?.$case === 'task' ? old.payload.value : old;
  out.legacy = { state: TaskState[oldTask.status?.state], reply: replyOf(oldTask) };
} catch (err) {
  out.error = `${err.name}: ${err.message}\n${err.stack}`;
}
console.log(JSON.stringify(out));
