"""Token usage of a run, per model: what a backend reports and every door shows.

:class:`ModelUsage` counts one model's share of a run (one entry per provider and model).
``input_tokens`` and ``output_tokens`` are totals: cached input is part of the input,
reasoning part of the output (as in AG-UI's TokenUsage and OpenTelemetry's
``gen_ai.usage.*``). A backend reports usage on its terminal event
(``RunFinished.usage`` / ``RunFailed.usage``) or as it goes (``UsageReported`` events,
or ``context.report_usage``); the kernel adds it all up per model and puts the sum on the
run's terminal event, which doors translate and threads keep with the turn.

JSON: ``{"model", "provider", "input_tokens", "output_tokens", "cache_read_tokens",
"cache_write_tokens", "reasoning_tokens", "requests", "cost", "currency"}`` (zeros and
empty strings may be left out). :meth:`ModelUsage.from_dict` takes what it knows and
ignores the rest, so a server one version behind or ahead reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Iterable

_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "requests")


@dataclass(frozen=True)
class ModelUsage:
    model: str = ""
    provider: str = ""
    input_tokens: int = 0  # all input, cached included
    output_tokens: int = 0  # all output, reasoning included
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    cost: float | None = None  # in ``currency``, where the model's price is known
    currency: str = ""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "provider": self.provider}
        for name in _COUNTS:
            out[name] = getattr(self, name)
        if self.cost is not None:
            out["cost"] = self.cost
        if self.currency:
            out["currency"] = self.currency
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "ModelUsage":
        if isinstance(data, ModelUsage):
            return data
        if not isinstance(data, dict):
            raise ValueError("a usage entry is an object")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data or data[f.name] is None:
                continue
            value = data[f.name]
            if f.name in _COUNTS:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise ValueError(f"usage {f.name} must be a count")
                value = int(value)
            elif f.name == "cost":
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ValueError("usage cost must be a number")
                value = float(value)
            elif not isinstance(value, str):
                raise ValueError(f"usage {f.name} must be text")
            values[f.name] = value
        return cls(**values)

    def plus(self, other: "ModelUsage") -> "ModelUsage":
        """This entry with ``other``'s counts added (same model and provider)."""
        counts = {name: getattr(self, name) + getattr(other, name) for name in _COUNTS}
        if self.cost is None and other.cost is None:
            cost = None
        else:
            cost = (self.cost or 0.0) + (other.cost or 0.0)
        return replace(self, **counts, cost=cost, currency=self.currency or other.currency)


Usage = tuple[ModelUsage, ...]


def add_usage(*usages: Iterable[ModelUsage]) -> Usage:
    """One entry per (provider, model), counts summed, in the order they first came."""
    merged: dict[tuple[str, str], ModelUsage] = {}
    for usage in usages:
        for entry in usage:
            key = (entry.provider, entry.model)
            merged[key] = merged[key].plus(entry) if key in merged else entry
    return tuple(merged.values())


def usage_from_json(value: Any) -> Usage:
    """A usage list from JSON (``[]`` or None: none); ValueError for anything malformed."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise ValueError("usage must be a list of entries")
    return tuple(ModelUsage.from_dict(entry) for entry in value)


def usage_to_json(usage: Iterable[ModelUsage]) -> list[dict[str, Any]]:
    return [entry.to_dict() for entry in usage]


__all__ = ["ModelUsage", "Usage", "add_usage", "usage_from_json", "usage_to_json"]
