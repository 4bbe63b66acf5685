// Push configs and the extended card through the official JS client, @a2a-js/sdk (its
// JSON-RPC transport speaks A2A 0.3: tasks/pushNotificationConfig/set, get, list, delete,
// agent/getAuthenticatedExtendedCard), against the same door.
// Usage: TOKEN=... HOOK=http://127.0.0.1:PORT node push.mjs <base url of the door>
// Prints one JSON object: the card's flags, the extended card's extensions, the configs as
// the client read them back, and the answered task's state.
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';

const base = process.argv[2];
const token = process.env.TOKEN;
const hook = process.env.HOOK;
const fetchImpl = (url, init = {}) => fetch(url, {
  ...init, headers: { ...(init.headers ?? {}), ...(token ? { Authorization: `Bearer ${token}` } : {}) },
});
const cardResolver = new DefaultAgentCardResolver({ fetchImpl });
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl })], cardResolver,
}));
const message = (text, taskId = '', contextId = '') => ({
  message: {
    messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: text } }],
    contextId, taskId, metadata: undefined, extensions: [], referenceTaskIds: [],
  },
});
const config = (taskId, id, path, secret) => ({
  tenant: '', id, taskId, url: `${hook}${path}`, token: `tok-${id}`,
  authentication: { scheme: 'Bearer', credentials: secret },
});
const shown = (c) => ({ id: c.id, taskId: c.taskId, url: c.url, token: c.token, scheme: c.authentication?.scheme });
const out = {};

try {
  const client = await factory.createFromUrl(base);
  const card = await cardResolver.resolve(base);
  out.card = { push: card.capabilities?.pushNotifications, extended: card.capabilities?.extendedAgentCard };
  const extended = await client.getAgentCard();  // the extended card, since the card offers one
  out.extensions = (extended.capabilities?.extensions ?? []).map((e) => e.uri);

  const task = await client.sendMessage(message('/question Which colour?'));
  out.asked = TaskState[task.status.state];
  await client.createTaskPushNotificationConfig(config(task.id, 'js-one', '/js-one', 'cred-js-1'));
  await client.createTaskPushNotificationConfig(config(task.id, 'js-two', '/js-two', 'cred-js-2'));
  out.got = shown(await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'js-one' }));
  await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'js-two' });
  const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
  out.listed = (listed.configs ?? []).map(shown);
  const answered = await client.sendMessage(message('red', task.id, task.contextId));
  out.answered = { id: task.id, state: TaskState[answered.status.state] };
} catch (err) {
  out.error = `${err.name}: ${err.message}`;
}
console.log(JSON.stringify(out));
