"""Checking content does not copy what it is sent: a part's base64 is decoded from the
string itself, so checking a message holds its bytes once beside the client's text."""

from __future__ import annotations

import base64
import os
import tracemalloc

from onedoor.content import ContentLimits, parse_content

PNG = b"\x89PNG\r\n\x1a\n"


def test_base64_is_decoded_without_a_copy_of_the_text() -> None:
    image = PNG + os.urandom(2 * 1024 * 1024)
    part = {"type": "image", "media_type": "image/png", "data": base64.b64encode(image).decode("ascii")}
    tracemalloc.start()
    try:
        _, (checked,) = parse_content([part], ContentLimits())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert checked.data == image
    # the decoded bytes, and no more than a little besides (a bytes copy of the base64 text is 4/3 more)
    assert peak < 1.2 * len(image), f"peak {peak:,} bytes to check a {len(image):,}-byte part"
