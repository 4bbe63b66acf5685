"""The request handler: a2a-sdk's default one, with the door's checks and its answers for
tasks this server does not hold (:mod:`.elsewhere`)."""

from __future__ import annotations

from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler


def check_message(params: Any) -> None:
    """InvalidParamsError (-32602) for a message the agent cannot take, before a task exists
    (the SDK would otherwise fail inside the executor: a 500-like error and a logged traceback)."""
    from a2a.types import Role
    from a2a.utils.errors import InvalidParamsError

    message = params.message if params.HasField("message") else None
    if message is None or message.role != Role.ROLE_USER:
        raise InvalidParamsError(message="send a message with role ROLE_USER")
    if not message.message_id:
        raise InvalidParamsError(message="the message needs a messageId")
    if not message.parts:
        raise InvalidParamsError(message="the message has no parts")
    if any(part.HasField("text") and not part.text for part in message.parts):
        raise InvalidParamsError(message="a text part of the message is empty")


class CheckedRequestHandler(DefaultRequestHandler):  # type: ignore[misc]
    """The SDK's default handler with :func:`check_message` in front of both send methods
    (a run started for a task the SDK then fails to make is freed: its kernel slot), and
    the methods on a task this server does not hold asking :mod:`.elsewhere` first."""

    places: Any = None  # elsewhere.Elsewhere (request_handler sets it)
    sign: Any = None  # the card signer, if the cards are signed

    async def on_message_send(self, params: Any, context: Any) -> Any:
        check_message(params)
        try:
            return await super().on_message_send(params, context)
        except BaseException:  # (GeneratorExit and cancellation too: a run execute never took)
            await _release(self, params)
            raise

    async def on_message_send_stream(self, params: Any, context: Any) -> Any:
        check_message(params)
        try:
            async for event in super().on_message_send_stream(params, context):
                yield event
        except BaseException:  # (GeneratorExit and cancellation too: a run execute never took)
            await _release(self, params)
            raise

    async def _held_elsewhere(self, task_id: str) -> bool:
        """Whether a task is not this server's to answer about by itself."""
        return self.places is not None and await self._active_task_registry.get(task_id) is None

    async def on_get_task(self, params: Any, context: Any) -> Any:
        if await self._held_elsewhere(params.id):
            await self.places.settle(params.id, context)  # a task no run carries reads as ended
        return await super().on_get_task(params, context)

    async def on_cancel_task(self, params: Any, context: Any) -> Any:
        if await self._held_elsewhere(params.id):
            cancelled = await self.places.cancel(params.id, context)
            if cancelled is not None:
                return cancelled
        return await super().on_cancel_task(params, context)

    async def on_subscribe_to_task(self, params: Any, context: Any) -> Any:
        if await self._held_elsewhere(params.id):
            events = await self.places.subscription(params.id, context)
            if events is not None:
                async for event in events:
                    yield event
                return
        async for event in super().on_subscribe_to_task(params, context):
            yield event


async def _release(handler: Any, params: Any) -> None:
    """Free the run started for the task of ``params`` (the SDK wrote the task id it chose
    into the message), if its execute never took it."""
    await handler.agent_executor.release(params.message.task_id)


__all__ = ["CheckedRequestHandler", "check_message"]
