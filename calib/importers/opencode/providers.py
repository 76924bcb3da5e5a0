"""Which vendor's model an OpenCode call ran on, whatever route (provider id) it went through.

Rule: OpenCode's `providerID` names the route a request took (`github-copilot`, `openrouter`, `opencode`
(Zen), `azure`, ...), not whose model answered it, and a vendor's tokenizer counts the same text alike on
every route. So a call is grouped by the vendor its model name says, when it says one:
`claude-*` -> `anthropic`; `gpt-*`, `o1`, `o3`, `o4*` -> `openai`; `gemini-*` -> `google`. A router's
`vendor/model` prefix (`anthropic/claude-sonnet-4`) is skipped first. Any other model keeps its
`providerID`. The route itself is kept beside the call (`usage_raw["route"]`) whenever it differs.
"""

from __future__ import annotations

import re

from calib.core.records import Call

_VENDORS = (
    (re.compile(r"claude-"), "anthropic"),
    (re.compile(r"gpt-|o1(?:$|-)|o3(?:$|-)|o4"), "openai"),
    (re.compile(r"gemini-"), "google"),
)


def vendor(provider: str | None, model: str | None) -> str | None:
    """The vendor whose model `model` is (see the module docstring), else `provider` unchanged."""
    if not model:
        return provider
    name = model.rsplit("/", 1)[-1].lower()
    for pattern, name_of_vendor in _VENDORS:
        if pattern.match(name):
            return name_of_vendor
    return provider


def route_to_vendor(call: Call) -> None:
    """Set `call.provider` to its model's vendor, keeping the route it took in `usage_raw["route"]`."""
    route = call.provider
    call.provider = vendor(route, call.model)
    if route and call.provider != route:
        call.usage_raw = {**(call.usage_raw or {}), "route": route}
