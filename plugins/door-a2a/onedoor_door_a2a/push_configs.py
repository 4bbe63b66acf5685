"""Push-notification configs, kept with the tasks: :class:`RecordPushConfigs`.

``CreateTaskPushNotificationConfig`` (or a config sent with ``SendMessage``) keeps the
client's webhook for a task: its URL, its token (sent back as ``X-A2A-Notification-Token``)
and its authentication (``Authorization: <scheme> <credentials>``). With a store that keeps
records they are records of their principal (kind ``a2a.push``, grouped by task), so a
config made through one server is used by the server running the task, and read back
through any; else the SDK's in-memory store keeps them. A task holds at most
``MAX_CONFIGS`` configs.

The server running a task reads its configs for every event (:mod:`.push`): at each
change of the task's status (the task made, ``working``, ``input-required``, its ending)
from the store, so a config made through another server is used from the next status
on; between two, for the artifact updates (each delta of a streamed reply), that read is
kept ``DISPATCH_TTL`` seconds (this server's own changes apply at once).
"""

from __future__ import annotations

import time
from typing import Any

from a2a.server.tasks import InMemoryPushNotificationConfigStore, PushNotificationConfigStore
from a2a.server.tasks.push_notification_config_store import normalize_push_notification_config
from a2a.types import TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError
from google.protobuf import json_format
from onedoor.threads import Record, keeps_records

from .tasks import KIND as TASK_KIND
from .tasks import owner_of, task_from_json

KIND = "a2a.push"
MAX_CONFIGS = 10  # push configs per task
MAX_ID = 200  # characters of a config's id
DISPATCH_TTL = 1.0  # seconds the running server keeps a task's configs before reading them again


def _checked(task_id: str, config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    stored = normalize_push_notification_config(task_id, config)
    if len(stored.id) > MAX_ID:
        raise InvalidParamsError(message=f"a push notification config's id is at most {MAX_ID} characters")
    return stored


def _too_many() -> InvalidParamsError:
    return InvalidParamsError(message=f"a task holds at most {MAX_CONFIGS} push notification configs; delete one first")


class RecordPushConfigs(PushNotificationConfigStore):  # type: ignore[misc]
    def __init__(self, store: Any, *, threads: bool = True) -> None:
        self.store = store
        self.threads = threads
        self._dispatch: dict[str, tuple[float, list[TaskPushNotificationConfig]]] = {}

    @staticmethod
    def _id(task_id: str, config_id: str) -> str:
        return f"{task_id}/{config_id}"  # (task ids are run ids: never a "/")

    async def set_info(self, task_id: str, notification_config: TaskPushNotificationConfig, context: Any) -> Any:
        owner = owner_of(context)
        stored = _checked(task_id, notification_config)
        mine = await self.store.record_list(KIND, owner, group=task_id, limit=MAX_CONFIGS + 1)
        if len(mine.records) >= MAX_CONFIGS and all(r.id != self._id(task_id, stored.id) for r in mine.records):
            raise _too_many()
        task = await self.store.record_get(TASK_KIND, owner, task_id)
        context_id = task_from_json(task.body).context_id if task is not None else ""
        record = Record(KIND, self._id(task_id, stored.id), owner, json_format.MessageToJson(stored, indent=None),
                        group=task_id, thread_id=context_id if self.threads and context_id else None)
        if not await self.store.record_put(record):
            raise InvalidParamsError(message="that push notification config id is taken")
        self._dispatch.pop(task_id, None)
        return stored

    async def get_info(self, task_id: str, context: Any) -> list[TaskPushNotificationConfig]:
        page = await self.store.record_list(KIND, owner_of(context), group=task_id, limit=MAX_CONFIGS)
        return [_config(r.body) for r in reversed(page.records)]

    async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return await self.for_dispatch(task_id, fresh=False)

    async def for_dispatch(self, task_id: str, *, fresh: bool) -> list[TaskPushNotificationConfig]:
        """Every principal's configs of the task, for the sender; ``fresh``: read from the
        store (a change of the task's status), else kept ``DISPATCH_TTL`` seconds."""
        now = time.monotonic()
        kept = self._dispatch.get(task_id)
        if not fresh and kept is not None and now - kept[0] < DISPATCH_TTL:
            return kept[1]
        page = await self.store.record_list(KIND, None, group=task_id, limit=MAX_CONFIGS)
        configs = [_config(r.body) for r in reversed(page.records)]
        if len(self._dispatch) > 10_000:  # tasks come and go: keep the cache small
            self._dispatch.clear()
        self._dispatch[task_id] = (now, configs)
        return configs

    async def delete_info(self, task_id: str, context: Any, config_id: str | None = None) -> None:
        owner = owner_of(context)
        if config_id is None:
            page = await self.store.record_list(KIND, owner, group=task_id, limit=MAX_CONFIGS)
            ids = [r.id for r in page.records]
        else:
            ids = [self._id(task_id, config_id)]
        for record_id in ids:
            await self.store.record_delete(KIND, owner, record_id)
        self._dispatch.pop(task_id, None)


def _config(body: str) -> TaskPushNotificationConfig:
    return json_format.Parse(body, TaskPushNotificationConfig(), ignore_unknown_fields=True)


class MemoryPushConfigs(InMemoryPushNotificationConfigStore):  # type: ignore[misc]
    """The SDK's in-memory configs, with this door's bounds (a store without records)."""

    async def set_info(self, task_id: str, notification_config: TaskPushNotificationConfig, context: Any) -> Any:
        stored = _checked(task_id, notification_config)
        mine = await self.get_info(task_id, context)
        if len(mine) >= MAX_CONFIGS and all(c.id != stored.id for c in mine):
            raise _too_many()
        return await super().set_info(task_id, stored, context)


def push_configs(kernel: Any) -> Any:
    """The push-config store for ``kernel``: with its tasks (records), else in memory."""
    if keeps_records(kernel.store):
        return RecordPushConfigs(kernel.store, threads=kernel.threads.kept)
    return MemoryPushConfigs()


__all__ = ["DISPATCH_TTL", "KIND", "MAX_CONFIGS", "MemoryPushConfigs", "RecordPushConfigs", "push_configs"]
