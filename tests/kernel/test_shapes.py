"""Shapes: a door fits a transport when they share a shape; a transport may offer
several (slim: channel and rpc), and a door is served in the first one it serves."""

from __future__ import annotations

import pytest
from onedoor.composition import check_door, check_transport, offered_shapes, shape_for, validate_combination
from onedoor.errors import CompositionError


class Door:
    def __init__(self, name, *shapes):
        self.name = name
        self.shapes = frozenset(shapes)

    def asgi_mount(self, ctx): ...
    async def serve_channel(self, channel, ctx): ...
    def register_rpc(self, server, ctx): ...


class Transport:
    def __init__(self, name, *shapes):
        self.name = name
        self.shape = shapes[0]
        if len(shapes) > 1:
            self.shapes = shapes

    def serve(self, doors, ctx):
        return 0


SLIM = Transport("slim", "channel", "rpc")
HTTP = Transport("http", "asgi")


@pytest.mark.parametrize("door, transport, shape", [
    (Door("a2a", "asgi", "rpc"), SLIM, "rpc"),
    (Door("a2a", "asgi", "rpc"), HTTP, "asgi"),
    (Door("mcp", "asgi", "channel"), SLIM, "channel"),
    (Door("both", "channel", "rpc"), SLIM, "channel"),  # the transport's preference
    (Door("rest", "asgi"), SLIM, None),
])
def test_a_door_is_served_in_the_first_shape_both_have(door, transport, shape):
    assert shape_for(door, transport) == shape


def test_a_mismatch_names_every_shape_the_transport_offers():
    with pytest.raises(CompositionError) as caught:
        validate_combination([Door("rest", "asgi")], SLIM, {"asgi": ["http"], "channel": ["slim"], "rpc": ["slim"]})
    assert "'channel' and 'rpc'" in str(caught.value) and "it can use: http" in str(caught.value)
    validate_combination([Door("a2a", "asgi", "rpc")], SLIM, {})


def test_plugin_checks_know_rpc():
    assert check_door(Door("a2a", "rpc")) is None
    rpcless = Door("x", "rpc")
    rpcless.register_rpc = None
    assert check_door(rpcless) == "it serves 'rpc' but has no register_rpc(server, ctx)"
    assert check_transport(SLIM) is None and offered_shapes(HTTP) == ("asgi",)
    wrong = Transport("w", "channel", "rpc")
    wrong.shapes = ("rpc", "channel")
    assert "starting with its 'shape'" in check_transport(wrong)
    odd = Transport("o", "channel", "pigeon")
    assert "unknown shape" in check_transport(odd)
