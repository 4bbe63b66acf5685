// The A2A door through the official JS client, @a2a-js/sdk (pinned in package-lock.json).
// Usage: TOKEN=... node client.mjs <base url of the door, e.g. http://127.0.0.1:PORT/a2a>
// Prints one JSON object: what the card said, the reply, the streamed pieces, the cancel.
// A stream's artifact updates are applied as the protocol says: `append: true` adds the
// parts to the artifact, `append: false` replaces the artifact with the update's.
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';

const base = process.argv[2];
const token = process.env.TOKEN;
const fetchImpl = (url, init = {}) => fetch(url, {
  ...init, headers: { ...(init.headers ?? {}), ...(token ? { Authorization: `Bearer ${token}` } : {}) },
});
const cardResolver = new DefaultAgentCardResolver({ fetchImpl });
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl })], cardResolver,
}));
const message = (text) => ({
  message: {
    messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: text } }],
    contextId: '', taskId: '', metadata: undefined, extensions: [], referenceTaskIds: [],
  },
});
const textOf = (task) => task.artifacts.flatMap((a) => a.parts.map((p) => p.content?.value ?? '')).join('');
const partsOf = (task) => task.artifacts.flatMap((a) => a.parts.map((p) => p.content?.value ?? ''));
const out = {};

try {
  const client = await factory.createFromUrl(base);
  const card = await cardResolver.resolve(base);
  out.card = { name: card.name, streaming: card.capabilities?.streaming, schemes: Object.keys(card.securitySchemes ?? {}) };

  const task = await client.sendMessage(message('hello node'));
  out.send = { state: TaskState[task.status.state], text: textOf(task), parts: partsOf(task).length };

  const pieces = [];
  const artifacts = new Map();
  let last;
  let streamedId;
  let final;
  for await (const event of client.sendMessageStream(message('node stream please'))) {
    const p = event.payload;
    if (p.$case === 'task') streamedId = p.value.id;
    if (p.$case === 'artifactUpdate') {
      const update = p.value;
      const parts = update.artifact.parts.map((x) => x.content?.value ?? '');
      if (update.append) pieces.push(parts.join(''));
      else if (!artifacts.has(update.artifact.artifactId)) pieces.push(parts.join(''));  // the first delta
      const kept = update.append ? [...(artifacts.get(update.artifact.artifactId) ?? []), ...parts] : parts;
      artifacts.set(update.artifact.artifactId, kept);
      final = { append: update.append, lastChunk: update.lastChunk, parts: parts.length };
    }
    if (p.$case === 'statusUpdate') last = TaskState[p.value.status.state];
  }
  const stored = await client.getTask({ tenant: '', id: streamedId, historyLength: undefined });
  out.stream = {
    pieces, last, final, text: [...artifacts.values()].map((parts) => parts.join('')).join(''),
    stored: partsOf(stored),
  };

  let id;
  let seen = 0;
  out.cancel = {};
  for await (const event of client.sendMessageStream(message('/slow /long 400 node-cancel-me'))) {
    const p = event.payload;
    if (p.$case === 'task') id = p.value.id;
    if (p.$case === 'artifactUpdate' && ++seen === 2) {
      out.cancel.state = TaskState[(await client.cancelTask({ tenant: '', id, metadata: undefined })).status.state];
    }
  }
  out.cancel.seen = seen;
  out.cancel.get = TaskState[(await client.getTask({ tenant: '', id, historyLength: undefined })).status.state];
  try {
    await client.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined });
    out.unknown = 'no error';
  } catch (err) {
    out.unknown = `${err.name}: ${err.message}`;
  }
} catch (err) {
  out.error = `${err.name}: ${err.message}`;
}
console.log(JSON.stringify(out));
