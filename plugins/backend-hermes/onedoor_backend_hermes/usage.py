"""Token usage of a hermes run, read from the AIAgent's session counters.

hermes adds up every main model call of an AIAgent (``session_prompt_tokens``,
``session_completion_tokens``, ``session_cache_read_tokens``, ``session_cache_write_tokens``,
``session_reasoning_tokens``, ``session_api_calls``) as it goes; onedoor builds one AIAgent
per run, so the counters are the run's. ``prompt_tokens`` counts the cached tokens too
(hermes' own ``input_tokens`` does not), as onedoor's ``input_tokens`` does. Calls hermes
makes on the side (describing an image for a model without vision, compressing the
context) are not in them. The cost is hermes' estimate, where it knows the model's price.
"""

from __future__ import annotations

from typing import Any

from onedoor.usage import ModelUsage

_COUNTERS = {
    "input_tokens": "session_prompt_tokens",
    "output_tokens": "session_completion_tokens",
    "cache_read_tokens": "session_cache_read_tokens",
    "cache_write_tokens": "session_cache_write_tokens",
    "reasoning_tokens": "session_reasoning_tokens",
    "requests": "session_api_calls",
}


class HermesMeter:
    """What one run's AIAgent used, reported in steps (each step: what came since the last)."""

    def __init__(self, hermes: Any) -> None:
        self.hermes = hermes
        self._counts = {name: 0 for name in _COUNTERS}
        self._cost = 0.0

    def step(self) -> tuple[ModelUsage, ...]:
        """The usage since the last step (empty when there is none)."""
        counts = {name: _count(self.hermes, attr) for name, attr in _COUNTERS.items()}
        fresh = {name: max(counts[name] - self._counts[name], 0) for name in counts}
        cost = _cost(self.hermes)
        new_cost = None if cost is None else max(cost - self._cost, 0.0)
        if not any(fresh.values()) and not new_cost:
            return ()
        self._counts = counts
        if cost is not None:
            self._cost = cost
        return (ModelUsage(
            model=str(getattr(self.hermes, "model", "") or ""),
            provider=str(getattr(self.hermes, "provider", "") or ""),
            cost=new_cost, currency="USD" if new_cost is not None else "", **fresh,
        ),)


def _count(hermes: Any, attr: str) -> int:
    try:
        return max(int(getattr(hermes, attr, 0) or 0), 0)
    except (TypeError, ValueError):
        return 0


def _cost(hermes: Any) -> float | None:
    if str(getattr(hermes, "session_cost_status", "unknown") or "unknown") == "unknown":
        return None
    value = getattr(hermes, "session_estimated_cost_usd", None)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


__all__ = ["HermesMeter"]
