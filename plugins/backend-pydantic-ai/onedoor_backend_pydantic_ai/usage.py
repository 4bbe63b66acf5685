"""Token usage of a pydantic-ai run, per model.

pydantic-ai's ``RunUsage`` has no per-model split, but every ``ModelResponse`` has its
``usage``, ``model_name`` (the model the response names) and ``provider_name``. A
capability's ``after_model_request`` hook sees each one as it arrives; the backend reports
them as it goes (``UsageReported``), so a cancelled or failed run keeps what it used.
What the run's ``RunUsage`` counts beyond them (an agent the tools delegated to with
``usage=ctx.usage``, whose responses the hook does not see) is reported at the end as
model ``unattributed``.
"""

from __future__ import annotations

from typing import Any, Callable

from onedoor.usage import ModelUsage, add_usage

UNATTRIBUTED = "unattributed"
_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "requests")


class UsageMeter:
    """Collects each model response's usage of one run. With ``report`` (the run context's
    ``report_usage``) it reports each one the moment it arrives, so the kernel counts it
    even when the run is cancelled before the backend's next event; without, the backend
    yields what :meth:`take` returns."""

    def __init__(self, report: Callable[..., None] | None = None) -> None:
        self.report = report
        self.pending: list[ModelUsage] = []  # not reported yet
        self.reported: tuple[ModelUsage, ...] = ()

    def capability(self) -> Any:
        from pydantic_ai.capabilities import Hooks

        async def after_model_request(_ctx: Any, *, request_context: Any, response: Any) -> Any:
            usage = response_usage(response)
            if self.report is not None:
                self.report(usage)
                self.reported = add_usage(self.reported, (usage,))
            else:
                self.pending.append(usage)
            return response

        return Hooks(after_model_request=after_model_request)

    def take(self) -> tuple[ModelUsage, ...]:
        """What came since the last call (summed per model), now counted as reported."""
        if not self.pending:
            return ()
        fresh = add_usage(self.pending)
        self.pending.clear()
        self.reported = add_usage(self.reported, fresh)
        return fresh

    def rest(self, run_usage: Any) -> tuple[ModelUsage, ...]:
        """The responses not yet reported, plus what ``run_usage`` (the run's RunUsage)
        counts beyond every response seen."""
        fresh = self.take()
        if run_usage is None:
            return fresh
        seen = {name: sum(getattr(entry, name) for entry in self.reported) for name in _FIELDS}
        extra = {name: max(count - seen[name], 0) for name, count in _run_counts(run_usage).items()}
        if not any(extra.values()):
            return fresh
        leftover = ModelUsage(UNATTRIBUTED, "pydantic-ai", **extra)
        self.reported = add_usage(self.reported, (leftover,))
        return add_usage(fresh, (leftover,))


def response_usage(response: Any) -> ModelUsage:
    """One ModelResponse's usage (its cost too, where genai-prices knows the model)."""
    usage = response.usage
    cost = None
    try:
        cost = float(response.cost().total_price)
    except Exception:  # noqa: BLE001 - LookupError for an unpriced model, or no price data
        cost = None
    return ModelUsage(
        model=str(response.model_name or ""),
        provider=str(response.provider_name or ""),
        input_tokens=int(usage.input_tokens or 0),
        output_tokens=int(usage.output_tokens or 0),
        cache_read_tokens=int(usage.cache_read_tokens or 0),
        cache_write_tokens=int(usage.cache_write_tokens or 0),
        reasoning_tokens=int(getattr(usage, "output_reasoning_tokens", 0) or 0),
        requests=1,
        cost=cost,
        currency="USD" if cost is not None else "",
    )


def _run_counts(run_usage: Any) -> dict[str, int]:
    return {
        "input_tokens": int(run_usage.input_tokens or 0),
        "output_tokens": int(run_usage.output_tokens or 0),
        "cache_read_tokens": int(run_usage.cache_read_tokens or 0),
        "cache_write_tokens": int(run_usage.cache_write_tokens or 0),
        "reasoning_tokens": int(getattr(run_usage, "output_reasoning_tokens", 0) or 0),
        "requests": int(run_usage.requests or 0),
    }


__all__ = ["UNATTRIBUTED", "UsageMeter", "response_usage"]
